package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// A signing agent (RFC 9421 over @method @authority @path, bcp-agent,
// idempotency-key, content-digest, content-type) drives the REST binding
// at a merchant that requires signatures; unsigned and tampered requests
// are refused with the REST statuses.
func TestSignedAgentOverREST(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja REST Assinada", "rest-assinada.localhost", 0)
	ctx := context.Background()
	if _, err := r.ClientsWithToken(operatorToken).Tenants.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: m.host, Policy: tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE,
	})); err != nil {
		t.Fatal(err)
	}
	key, err := agentclient.GenerateES256()
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := agentclient.PublicJWK(key, "")
	if err != nil {
		t.Fatal(err)
	}
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		doc := strings.TrimSpace(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment"))
		doc = doc[:len(doc)-1] + `,"signing_keys":[` + string(jwk) + `]}`
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(profiles.Close)
	profile := profiles.URL + "/agent.json"
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + r.PublicAddr + "/bcp/rest"
	body := []byte(`{"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`)
	signed := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host}}
	req, _ := http.NewRequest("POST", base+"/checkout-sessions", bytes.NewReader(body))
	req.Header.Set("Idempotency-Key", uuid.NewString())
	o := restSend(t, signed, v, "create_checkout", req)
	c := o.checkout(t)
	if o.httpStatus != http.StatusCreated || c.Status != bcp.StatusIncomplete || totals(c)["total"] != 5990 {
		t.Fatalf("signed create: HTTP %d %s", o.httpStatus, o.raw)
	}
	req, _ = http.NewRequest("GET", base+"/checkout-sessions/"+c.ID, nil)
	if o := restSend(t, signed, v, "get_checkout", req); o.httpStatus != 200 || o.checkout(t).ID != c.ID {
		t.Fatalf("signed get: HTTP %d %s", o.httpStatus, o.raw)
	}

	// Unsigned: 401 signature_missing with Accept-Signature.
	unsigned := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, Host: m.host}}
	req, _ = http.NewRequest("GET", base+"/checkout-sessions/"+c.ID, nil)
	if o := restSend(t, unsigned, v, "get_checkout", req); o.httpStatus != 401 || o.errCode != "signature_missing" || o.header.Get("Accept-Signature") == "" {
		t.Fatalf("unsigned: HTTP %d %s %v", o.httpStatus, o.raw, o.header)
	}
	// Signed for one path, sent to another (the signature covers @path): 401.
	wrongPath := &http.Client{Transport: rewritePath{base: signed.Transport, to: "/bcp/rest/checkout-sessions/chk_outro"}}
	req, _ = http.NewRequest("GET", base+"/checkout-sessions/"+c.ID, nil)
	if o := restSend(t, wrongPath, v, "get_checkout", req); o.httpStatus != 401 || o.errCode != "signature_invalid" {
		t.Fatalf("path swapped after signing: HTTP %d %s", o.httpStatus, o.raw)
	}
	// Body changed after signing: 400 digest_mismatch.
	tampered := &http.Client{Transport: tamperBody{base: signed.Transport}}
	req, _ = http.NewRequest("POST", base+"/checkout-sessions", bytes.NewReader(body))
	if o := restSend(t, tampered, v, "create_checkout", req); o.httpStatus != 400 || o.errCode != "digest_mismatch" {
		t.Fatalf("tampered body: HTTP %d %s", o.httpStatus, o.raw)
	}
}

// rewritePath changes the request path after the inner transport signed it.
type rewritePath struct {
	base http.RoundTripper
	to   string
}

func (rp rewritePath) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := rp.base.(*agentclient.Transport)
	inner := *tr
	inner.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.URL.Path = rp.to
		return http.DefaultTransport.RoundTrip(r)
	})
	return inner.RoundTrip(req)
}

// tamperBody replaces the body after the inner transport signed it.
type tamperBody struct{ base http.RoundTripper }

func (tb tamperBody) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := tb.base.(*agentclient.Transport)
	inner := *tr
	inner.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b := []byte(`{"line_items":[{"item":{"id":"var_cam"},"quantity":9}]}`)
		r.Body, r.ContentLength = ioNopCloser(b), int64(len(b))
		return http.DefaultTransport.RoundTrip(r)
	})
	return inner.RoundTrip(req)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ioNopCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
