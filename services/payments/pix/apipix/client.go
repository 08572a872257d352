// Package apipix is the payments service's client of the BCB API Pix v2:
// one implementation of pix.PSP for any PSP that follows the standard,
// over HTTPS with an mTLS client certificate and OAuth2 client
// credentials. Everything a PSP does differently (base URL, token URL and
// how the client authenticates there, scopes, how its webhooks prove who
// they are) is configuration, not code. Sandbox merchants use the same
// client against the PSP simulator (package pspsim).
//
// Every write the interface has is idempotent by an id we choose and
// store first (txid, devolução id, the webhook's key). A write whose
// answer is lost (timeout, reset, 5xx) is resolved by reading the
// resource back and acting on what the PSP says, never by assuming it
// failed or succeeded.
package apipix

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// Scopes the platform's calls need (the spec's security of each
// operation): cob.write for PUT/PATCH /cob, cob.read for GET /cob,
// pix.write for devoluções, pix.read for GET /pix, webhook.write and
// webhook.read for PUT/GET /webhook.
var DefaultScopes = []string{"cob.write", "cob.read", "pix.write", "pix.read", "webhook.write", "webhook.read"}

// Config is one merchant's connection to one PSP.
type Config struct {
	// BaseURL is the API's root including the major version, e.g.
	// https://pix.example.com/api/v2.
	BaseURL string
	// TokenURL is the OAuth2 token endpoint.
	TokenURL     string
	ClientID     string
	ClientSecret string
	// TokenAuth is how the client authenticates at TokenURL: "basic"
	// (HTTP Basic, the default and RFC 6749's preference) or "post"
	// (client_id and client_secret in the form).
	TokenAuth string
	// Scopes asked for (DefaultScopes when empty). One token carries
	// them all.
	Scopes []string
	// Certificate is the mTLS client certificate the PSP issued.
	Certificate *tls.Certificate
	// RootCAs verify the PSP's server certificate (nil: the system's).
	RootCAs *x509.CertPool
	// Webhook says how the PSP's notifications are authenticated.
	Webhook WebhookAuth
	// Timeout bounds each HTTP request (default 10 s). Retries bounds the
	// extra tries after a lost answer or a 5xx (default 2).
	Timeout time.Duration
	Retries int
	// Dial replaces the dialer (dev: *.localhost to loopback).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Wrap wraps the transport (tests: the OpenAPI contract checker).
	Wrap func(http.RoundTripper) http.RoundTripper
	// Observe is told of every HTTP exchange (metrics): the operation,
	// the HTTP status (0 when none came back) and how long it took.
	Observe func(op string, status int, d time.Duration)
	Now     func() time.Time
}

// Client is a pix.PSP over HTTPS. Safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	hc   *http.Client
	cc   clientcredentials.Config

	mu    sync.Mutex
	token *oauth2.Token
}

var _ pix.PSP = (*Client)(nil)

// New checks cfg and returns a client. It makes no call.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || base.Scheme != "https" || base.Host == "" {
		return nil, &ConfigError{Code: "invalid_base_url", Msg: "a URL base da API Pix deve ser https://…", Err: err}
	}
	if u, err := url.Parse(cfg.TokenURL); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, &ConfigError{Code: "invalid_token_url", Msg: "a URL de token OAuth2 deve ser https://…", Err: err}
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, &ConfigError{Code: "missing_client_credentials", Msg: "client_id e client_secret são obrigatórios"}
	}
	style := oauth2.AuthStyleInHeader
	switch cfg.TokenAuth {
	case "", "basic":
	case "post":
		style = oauth2.AuthStyleInParams
	default:
		return nil, &ConfigError{Code: "invalid_token_auth", Msg: fmt.Sprintf("autenticação no token %q desconhecida (basic ou post)", cfg.TokenAuth)}
	}
	if err := cfg.Webhook.check(); err != nil {
		return nil, err
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, 10*time.Second)
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	cfg.Retries = max(cfg.Retries, 0)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tlsCfg := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	if cfg.Certificate != nil {
		tlsCfg.Certificates = []tls.Certificate{*cfg.Certificate}
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	var rt http.RoundTripper = &http.Transport{
		DialContext: dial, TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 5 * time.Second, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
	}
	if cfg.Wrap != nil {
		rt = cfg.Wrap(rt)
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	return &Client{
		cfg: cfg, base: base,
		// The Timeout as a context deadline set by the transport (no
		// goroutine and timer per request, see httpdeadline).
		hc: &http.Client{Transport: &httpdeadline.Transport{Next: tracing.Transport(rt), Timeout: cfg.Timeout},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		cc: clientcredentials.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL, Scopes: scopes, AuthStyle: style},
	}, nil
}

// accessToken returns the cached token, fetching one when there is none
// or it expires within a minute. Callers hold no lock while calling the
// API; concurrent callers wait for one fetch.
func (c *Client) accessToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != nil && c.token.AccessToken != "" && (c.token.Expiry.IsZero() || c.cfg.Now().Add(time.Minute).Before(c.token.Expiry)) {
		return c.token.AccessToken, nil
	}
	start := time.Now()
	tok, err := c.cc.Token(context.WithValue(ctx, oauth2.HTTPClient, c.hc))
	c.observe("token", tokenStatus(err), start)
	if err != nil {
		return "", c.withoutCertificate(tokenError(err))
	}
	c.token = tok
	return tok.AccessToken, nil
}

// dropToken forgets token if it is still the cached one (a 401 said the
// PSP no longer takes it).
func (c *Client) dropToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != nil && c.token.AccessToken == token {
		c.token = nil
	}
}

func (c *Client) observe(op string, status int, start time.Time) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(op, status, time.Since(start))
	}
}

// response is one HTTP answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call makes one API request with a bearer token: on 401 it fetches a
// new token and tries once more. It does not retry anything else; a
// transport error is returned as a *TransportError.
func (c *Client) call(ctx context.Context, op, method, path string, query url.Values, body any) (response, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return response{}, err
		}
	}
	u := *c.base
	u.Path = c.base.Path + path
	u.RawPath = ""
	if query != nil {
		u.RawQuery = query.Encode()
	}
	for refreshed := false; ; refreshed = true {
		tok, err := c.accessToken(ctx)
		if err != nil {
			return response{}, err
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
		if err != nil {
			return response{}, err
		}
		if body == nil {
			req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		resp, err := c.hc.Do(req)
		if err != nil {
			c.observe(op, 0, start)
			return response{}, c.withoutCertificate(classifyTransport(op, err))
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		c.observe(op, resp.StatusCode, start)
		if err != nil {
			return response{}, &TransportError{Op: op, Err: err}
		}
		if resp.StatusCode == http.StatusUnauthorized && !refreshed {
			c.dropToken(tok)
			continue
		}
		return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
	}
}

// retryable says whether another try may help: a lost answer, a 5xx, or
// 429.
func retryable(r response, err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	return err == nil && (r.status >= 500 || r.status == http.StatusTooManyRequests)
}

// backoff waits before try n (1-based), or returns ctx's error.
func backoff(ctx context.Context, n int) error {
	t := time.NewTimer(time.Duration(100<<min(n-1, 5)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read makes a GET, retried while retryable.
func (c *Client) read(ctx context.Context, op, path string, query url.Values) (response, error) {
	var r response
	var err error
	for n := 0; ; n++ {
		r, err = c.call(ctx, op, http.MethodGet, path, query, nil)
		if !retryable(r, err) || n >= c.cfg.Retries {
			return r, err
		}
		if berr := backoff(ctx, n+1); berr != nil {
			return r, firstErr(err, berr)
		}
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// decode reads a 2xx JSON body into v, or turns the answer into an error.
func decode(op string, r response, want int, v any) error {
	if r.status != want {
		return problemOf(op, r)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return &pix.Problem{Status: r.status, Type: "RespostaInvalida", Detail: fmt.Sprintf("%s: the PSP answered JSON this client cannot read: %v", op, err)}
	}
	return nil
}
