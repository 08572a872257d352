// Package agentclient is the agent side of BCP over MCP: it sends
// JSON-RPC requests to a merchant's /bcp/mcp endpoint with the agent's
// identity (BCP-Agent, meta["ucp-agent"]) and credentials (an RFC 9421
// signature with Content-Digest, or an API key), and verifies the
// merchant's response signatures with the keys of the merchant's
// /.well-known/bcp. Our e2e tests and `bcpctl agent call` use it; so can
// agents, directly (Client) or under the MCP Go SDK (Transport).
package agentclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	segjson "github.com/segmentio/encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/httpdeadline"
)

// Client calls one merchant MCP endpoint as one agent.
type Client struct {
	// Endpoint is the merchant's MCP URL, e.g. https://loja.example/bcp/mcp.
	Endpoint string
	// Transport carries the agent identity and credentials (ProfileURL,
	// Key/KeyID or APIKey, Host override). Its Base is the network.
	Transport *Transport
	// Timeout of one call (default 30 s).
	Timeout time.Duration

	id atomic.Int64
}

// Response is an HTTP answer to a JSON-RPC request.
type Response struct {
	Status int
	Header http.Header
	// Body is the raw body: what a response signature covers.
	Body []byte
	// ID, Result and Error are decoded from a single JSON-RPC response;
	// all empty when the body is not one. ID and Result share Body's
	// memory.
	ID     json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if c := e.DataCode(); c != "" {
		return fmt.Sprintf("JSON-RPC error %d (%s): %s", e.Code, c, e.Message)
	}
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// DataCode is error.data.code, the BCP protocol code ("" if none).
func (e *RPCError) DataCode() string {
	var d struct {
		Code string `json:"code"`
	}
	_ = segjson.Unmarshal(e.Data, &d)
	return d.Code
}

// CallTool sends tools/call for tool. meta["ucp-agent"].profile is set to
// the Transport's ProfileURL when args do not name a profile; put
// "idempotency-key" in args["meta"] for complete_checkout and
// cancel_checkout (NewIdempotencyKey makes one): the Transport mirrors it
// in the Idempotency-Key header.
func (c *Client) CallTool(ctx context.Context, tool string, args map[string]any) (*Response, error) {
	if args == nil {
		args = map[string]any{}
	}
	if c.Transport != nil && c.Transport.ProfileURL != "" {
		meta, _ := args["meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		if _, ok := meta["ucp-agent"]; !ok {
			meta["ucp-agent"] = map[string]any{"profile": c.Transport.ProfileURL}
		}
		args["meta"] = meta
	}
	return c.Call(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
}

// Call sends one JSON-RPC request with the next id.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	return c.Post(ctx, body)
}

// Post sends body, byte for byte, to the endpoint.
func (c *Client) Post(ctx context.Context, body []byte) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return c.do(req)
}

func (c *Client) do(req *http.Request) (*Response, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var rt http.RoundTripper = c.Transport
	if c.Transport == nil {
		rt = &Transport{}
	}
	// The timeout as a context deadline set by the transport: over a
	// transport it does not know (Transport), http.Client enforces its
	// Timeout with a goroutine, a timer and channels per request.
	hc := &http.Client{Transport: &httpdeadline.Transport{Next: rt, Timeout: timeout},
		// A redirect would change what the signature covers; never follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// Read into a buffer sized by Content-Length when there is one (plus
	// bytes.MinRead, which ReadFrom wants free to see the end) rather
	// than io.ReadAll's doubling from 512 bytes.
	const maxBody = 16 << 20
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= maxBody {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxBody)); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	// ZeroCopy: ID and Result point into b instead of copies of it.
	if rest, err := segjson.Parse(b, &msg, segjson.ZeroCopy); err == nil && len(bytes.TrimSpace(rest)) == 0 {
		out.ID, out.Result, out.Error = msg.ID, msg.Result, msg.Error
	}
	return out, nil
}

// BusinessSigningKeys fetches /.well-known/bcp at the endpoint's origin
// (through the same Transport, so the Host override applies) and returns
// its signing_keys as raw JWKs.
func (c *Client) BusinessSigningKeys(ctx context.Context) ([]json.RawMessage, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawQuery, u.Fragment = "/.well-known/bcp", "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// The profile is public: fetch it without the agent's credentials.
	plain := &Client{Endpoint: c.Endpoint, Timeout: c.Timeout, Transport: &Transport{}}
	if c.Transport != nil {
		plain.Transport.Base, plain.Transport.Host = c.Transport.Base, c.Transport.Host
	}
	resp, err := plain.do(req)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("agentclient: %s answered HTTP %d", u, resp.Status)
	}
	var doc struct {
		SigningKeys []json.RawMessage `json:"signing_keys"`
	}
	if err := segjson.Unmarshal(resp.Body, &doc); err != nil {
		return nil, fmt.Errorf("agentclient: business profile: %w", err)
	}
	return doc.SigningKeys, nil
}

// ErrUnsigned is returned by VerifyResponse for a response without a
// signature.
var ErrUnsigned = errors.New("agentclient: the response is not signed")

// VerifyResponse checks a merchant response signature (@status,
// content-digest, content-type; Content-Digest recomputed over the body)
// against the merchant's published signing keys.
func VerifyResponse(ctx context.Context, resp *Response, signingKeys []json.RawMessage) (*httpsig.Result, error) {
	if len(resp.Header.Values(httpsig.SignatureHeader)) == 0 {
		return nil, ErrUnsigned
	}
	jwks := make([]httpsig.JWK, 0, len(signingKeys))
	for i, raw := range signingKeys {
		j, err := httpsig.ParseJWK(raw)
		if err != nil {
			return nil, fmt.Errorf("agentclient: signing_keys[%d]: %w", i, err)
		}
		jwks = append(jwks, j)
	}
	ks, err := httpsig.NewKeySet(jwks)
	if err != nil {
		return nil, err
	}
	v := &httpsig.Verifier{Keys: ks.Resolve, Requirements: httpsig.ResponseRequirements(), RejectAlgParameter: true}
	return v.VerifyResponse(ctx, resp.Header, resp.Status, resp.Body, nil)
}

// NewIdempotencyKey returns a random UUID (version 4), the form BCP
// requires for meta["idempotency-key"].
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

// String renders a response for humans (bcpctl): status line and body.
func (r *Response) String() string {
	return "HTTP " + strconv.Itoa(r.Status) + "\n" + string(r.Body)
}
