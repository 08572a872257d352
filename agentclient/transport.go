package agentclient

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	segjson "github.com/segmentio/encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bcpdev/bcp/httpsig"
)

// Transport is an http.RoundTripper that makes every request it sends a
// BCP agent request: it adds BCP-Agent, Idempotency-Key (mirroring the
// JSON-RPC meta["idempotency-key"] of a tools/call), Content-Type and
// Accept when missing, the API key when set, and signs with RFC 9421 +
// Content-Digest when a key is set. Give it to any HTTP client, e.g. the
// MCP Go SDK's:
//
//	t := &agentclient.Transport{ProfileURL: profile, Key: key, KeyID: kid}
//	ct := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: t}}
//
// The request it is given is not modified.
type Transport struct {
	// Base sends the prepared request (default http.DefaultTransport).
	Base http.RoundTripper
	// ProfileURL is the agent profile, sent as BCP-Agent: profile="<url>".
	ProfileURL string
	// Key signs requests: an *ecdsa.PrivateKey on P-256 (ES256, which
	// every merchant verifies), P-384, or an ed25519.PrivateKey. Nil: no
	// signature.
	Key crypto.Signer
	// KeyID is the key's kid in the agent profile ("" = its RFC 7638
	// thumbprint, the kid PublicJWK publishes).
	KeyID string
	// Expires, when positive, adds an expires parameter (created + Expires).
	Expires time.Duration
	// Now is the signing clock (default time.Now); returning the zero time
	// omits created.
	Now func() time.Time
	// Nonce, when set, adds a nonce parameter to every signature (e.g.
	// NewNonce): merchants accept a nonce once, so a captured request
	// cannot be replayed (some require one).
	Nonce func() (string, error)
	// APIKey, when set, is sent as X-API-Key.
	APIKey string
	// Host, when set, replaces the Host header (and the signed
	// @authority): reach a merchant host through a loopback address.
	Host string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("agentclient: read request body: %w", err)
		}
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = http.NoBody, 0
	if len(body) > 0 {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if t.Host != "" {
		out.Host = t.Host
	}
	h := out.Header
	if t.ProfileURL != "" && h.Get("BCP-Agent") == "" && h.Get("UCP-Agent") == "" {
		v, err := agentHeader(t.ProfileURL)
		if err != nil {
			return nil, err
		}
		h.Set("BCP-Agent", v)
	}
	if k := IdempotencyKeyOf(body); k != "" && h.Get("Idempotency-Key") == "" {
		h.Set("Idempotency-Key", k)
	}
	if len(body) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if h.Get("Accept") == "" {
		h.Set("Accept", "application/json, text/event-stream")
	}
	if t.APIKey != "" {
		h.Set("X-API-Key", t.APIKey)
	}
	if t.Key != nil {
		kid := t.KeyID
		if kid == "" {
			j, err := httpsig.PublicJWK(t.Key.Public(), "")
			if err != nil {
				return nil, fmt.Errorf("agentclient: signing key: %w", err)
			}
			kid = j.Kid
		}
		// Stale fields from an earlier attempt must not survive a retry.
		h.Del(httpsig.SignatureInputHeader)
		h.Del(httpsig.SignatureHeader)
		s := &httpsig.Signer{Key: t.Key, KeyID: kid, Expires: t.Expires, Created: t.Now, Nonce: t.Nonce,
			CoverIfPresent: []string{"bcp-agent", "ucp-agent", "idempotency-key"}}
		if err := s.SignRequest(out, body); err != nil {
			return nil, fmt.Errorf("agentclient: sign request: %w", err)
		}
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(out)
}

// NewNonce returns a fresh signature nonce: 32 random bytes, base64url
// (256 bits; UCP asks for at least 128).
func NewNonce() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// agentHeader renders profile="<url>" (an RFC 8941 string).
func agentHeader(profileURL string) (string, error) {
	for _, c := range []byte(profileURL) {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", errors.New("agentclient: the profile URL must be printable ASCII without quotes or backslashes")
		}
	}
	return `profile="` + profileURL + `"`, nil
}

// IdempotencyKeyOf returns meta["idempotency-key"] of a JSON-RPC tools/call
// body, or "".
func IdempotencyKeyOf(body []byte) string {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Arguments struct {
				Meta map[string]json.RawMessage `json:"meta"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if segjson.Unmarshal(b, &m) != nil || m.Method != "tools/call" {
		return ""
	}
	var k string
	if segjson.Unmarshal(m.Params.Arguments.Meta["idempotency-key"], &k) != nil {
		return ""
	}
	return strings.TrimSpace(k)
}
