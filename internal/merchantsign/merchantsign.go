// Package merchantsign signs HTTP messages on a merchant's behalf (RFC
// 9421 with RFC 9530 Content-Digest) with the merchant's current signing
// key, which never leaves the tenants service: this side builds the
// signature base, the tenants service signs it (SignWithCurrentKey). The
// edge signs its responses with it and the orders service its webhooks.
package merchantsign

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// rpcTimeout bounds the signing call to the tenants service.
const rpcTimeout = 5 * time.Second

// Signer signs HTTP messages with a merchant's current signing key.
// The key lives in the tenants service (SignWithCurrentKey); this side
// builds the RFC 9421 signature base and writes the fields. The keyid is
// the key's JWK kid as published in the merchant's /.well-known/bcp
// signing_keys, so agents verify with nothing but that profile.
type Signer struct {
	Tenants tenantsv1connect.TenantServiceClient
	// Now gives the created parameter (default time.Now).
	Now func() time.Time
	// Label defaults to httpsig.DefaultLabel ("sig1").
	Label string
}

func (s *Signer) label() string {
	if s.Label != "" {
		return s.Label
	}
	return httpsig.DefaultLabel
}

func (s *Signer) created() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SignResponse signs a response whose header is h (before WriteHeader),
// with status and body: Content-Digest (sha-256 over body) is set and the
// signature covers @status, content-digest and content-type (the latter
// two when there is a body), with created and keyid. It returns the kid.
func (s *Signer) SignResponse(ctx context.Context, tenantID uuid.UUID, h http.Header, status int, body []byte) (string, error) {
	comps := []string{"@status"}
	if len(body) > 0 {
		if h.Get("Content-Type") == "" {
			return "", errors.New("merchantsign: a signed response needs a Content-Type")
		}
		h.Set(httpsig.ContentDigestHeader, httpsig.ContentDigest(body))
		comps = append(comps, "content-digest", "content-type")
	}
	p := httpsig.SignatureParams{Label: s.label(), Components: comps, Created: s.created()}
	base, err := httpsig.ResponseSignatureBase(h, status, nil, p)
	if err != nil {
		return "", err
	}
	return s.sign(ctx, tenantID, base, h)
}

// SignRequest signs an outgoing request with the merchant key (order
// webhooks). body must be the exact bytes that will be sent. Covered:
// @method @authority @path (@query when there is one), content-digest and
// content-type when there is a body (Content-Digest is set, Content-Type
// defaults to application/json), and bcp-agent, idempotency-key,
// webhook-id and webhook-timestamp when the request carries them.
func (s *Signer) SignRequest(ctx context.Context, tenantID uuid.UUID, r *http.Request, body []byte) (string, error) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	comps := []string{"@method", "@authority", "@path"}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		comps = append(comps, "@query")
	}
	if len(body) > 0 {
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set(httpsig.ContentDigestHeader, httpsig.ContentDigest(body))
		comps = append(comps, "content-digest", "content-type")
	}
	for _, f := range []string{"bcp-agent", "idempotency-key", "webhook-id", "webhook-timestamp"} {
		if len(r.Header.Values(f)) > 0 {
			comps = append(comps, f)
		}
	}
	p := httpsig.SignatureParams{Label: s.label(), Components: comps, Created: s.created()}
	base, err := httpsig.RequestSignatureBase(r, p)
	if err != nil {
		return "", err
	}
	return s.sign(ctx, tenantID, base, r.Header)
}

// SignWebhook prepares and signs an order webhook from the merchant:
// Content-Type application/json, BCP-Agent naming the merchant's own
// profile (https://{merchant-host}/.well-known/bcp, whose signing_keys
// verify the signature), then SignRequest. The orders service calls it
// with the request it is about to send.
func (s *Signer) SignWebhook(ctx context.Context, tenantID uuid.UUID, r *http.Request, body []byte, businessProfileURL string) (string, error) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Content-Type", "application/json")
	if businessProfileURL != "" {
		v, err := FormatAgentHeader(businessProfileURL)
		if err != nil {
			return "", err
		}
		r.Header.Set("BCP-Agent", v)
	}
	return s.SignRequest(ctx, tenantID, r, body)
}

// sign sends the component lines and the parameters to the tenants
// service, which picks the key, adds its keyid and signs; then it writes
// Signature-Input and Signature into h.
func (s *Signer) sign(ctx context.Context, tenantID uuid.UUID, base []byte, h http.Header) (string, error) {
	i := bytes.LastIndexByte(base, '\n')
	params, ok := strings.CutPrefix(string(base[i+1:]), `"@signature-params": `)
	if i < 0 || !ok {
		return "", errors.New("merchantsign: unexpected signature base shape")
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := s.Tenants.SignWithCurrentKey(ctx, connect.NewRequest(&tenantsv1.SignWithCurrentKeyRequest{
		TenantId: tenantID.String(), SignatureBase: base[:i+1], SignatureParams: params,
	}))
	if err != nil {
		return "", err
	}
	sig, err := httpsig.FormatSignature(s.label(), resp.Msg.GetSignature())
	if err != nil {
		return "", err
	}
	h.Set(httpsig.SignatureInputHeader, s.label()+"="+resp.Msg.GetSignatureParams())
	h.Set(httpsig.SignatureHeader, sig)
	return resp.Msg.GetKid(), nil
}

// FormatAgentHeader renders a BCP-Agent value: profile="<url>".
func FormatAgentHeader(profileURL string) (string, error) {
	if strings.ContainsAny(profileURL, "\"\\") {
		return "", errors.New("merchantsign: profile URL cannot contain quotes or backslashes")
	}
	for _, c := range []byte(profileURL) {
		if c < 0x20 || c > 0x7e {
			return "", errors.New("merchantsign: profile URL must be printable ASCII")
		}
	}
	return `profile="` + profileURL + `"`, nil
}
