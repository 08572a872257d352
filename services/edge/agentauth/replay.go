package agentauth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/httpsig"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Replay protection of agent signatures (issue 32; RFC 9421 §3.2.1 and
// §7.2.2). A signature is accepted
//
//   - when it carries created, only within SignatureWindow of it (plus
//     ClockSkew both ways), and not after its expires (plus ClockSkew);
//   - when it carries a nonce, once: the nonce is claimed in a replay cache
//     shared by every edge (NonceStore; the tenants service's table) for as
//     long as the signature could still be accepted, after the signature
//     verified and before anything runs. A second request with the same
//     signer (agent profile and keyid) and nonce is refused with
//     signature_invalid, whichever edge it reaches.
//
// A merchant may require created, or created and a nonce
// (TenantPolicy.RequireCreated/RequireNonce): a signature without them is
// then refused. Without created a signature is not bounded in time, so a
// nonce alone protects only for SignatureWindow; without a nonce a captured
// signature can be replayed within the window, where UCP's idempotency
// keys (the business layer) answer it with the first outcome.

// NonceStore is the replay cache of signature nonces. The tenant is the
// context's (tenancy).
type NonceStore interface {
	// Claim records key for validFor and reports whether it was unused
	// (true) or is held by an earlier claim still valid (false: a replay).
	Claim(ctx context.Context, key [32]byte, validFor time.Duration) (fresh bool, err error)
}

// RemoteNonces is the NonceStore of the tenants service (ClaimSignatureNonce),
// shared by every edge process. Its client must forward the context tenant
// (svcauth.Client).
type RemoteNonces struct {
	Tenants tenantsv1connect.TenantServiceClient
}

// Claim implements NonceStore.
func (n RemoteNonces) Claim(ctx context.Context, key [32]byte, validFor time.Duration) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := n.Tenants.ClaimSignatureNonce(rctx, connect.NewRequest(&tenantsv1.ClaimSignatureNonceRequest{
		Key: key[:], ValidFor: durationpb.New(validFor),
	}))
	if err != nil {
		return false, err
	}
	return resp.Msg.GetFresh(), nil
}

// Bounds of a nonce's lifetime in the cache (the tenants service accepts 1 s
// to 25 h).
const (
	minNonceValidity = time.Second
	maxNonceValidity = 25 * time.Hour
)

// acceptParams are the signature parameters the tenant requires, as
// Accept-Signature asks for them (RFC 9421 §5.1: a bare parameter asks the
// signer to include it).
func (p TenantPolicy) acceptParams() string {
	switch {
	case p.RequireNonce:
		return ";created;nonce"
	case p.RequireCreated:
		return ";created"
	}
	return ""
}

// skew is the clock skew handed to the verifier (httpsig reads 0 as its own
// default, a negative value as none).
func (a *Authenticator) skew() time.Duration {
	if a.opts.ClockSkew < 0 {
		return -1
	}
	return a.opts.ClockSkew
}

// claimNonce claims the nonce of a verified signature, if it carries one.
// The replay cache failing fails the request (503): replay protection does
// not fail open.
func (a *Authenticator) claimNonce(ctx context.Context, profile string, res *httpsig.Result) *Failure {
	if res.Nonce == "" {
		return nil
	}
	if a.opts.Nonces == nil {
		a.log.ErrorContext(ctx, "agentauth: a signature carries a nonce and no nonce store is configured")
		return fail(http.StatusInternalServerError, CodeInternal, ErrCodeInternal, "internal error", "internal error")
	}
	fresh, err := a.opts.Nonces.Claim(ctx, NonceKey(profile, res.KeyID, res.Nonce), a.nonceValidity(res))
	if err != nil {
		return a.serviceFailure(ctx, "signature nonce", err)
	}
	if !fresh {
		return authFailure(ErrCodeSignatureInvalid, "signature "+res.Label+
			": the nonce was already used (a replayed signature); sign every request anew, with a fresh nonce")
	}
	return nil
}

// NonceKey is the replay cache key of a nonce: SHA-256 over the agent
// profile URL, the keyid and the nonce, each length-prefixed, so nonces
// are scoped to their signer and the cache holds 32 bytes whatever was
// sent.
func NonceKey(profile, keyID, nonce string) [32]byte {
	h := sha256.New()
	for _, s := range []string{profile, keyID, nonce} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// nonceValidity is how long a nonce must be remembered: until its
// signature can no longer be accepted, i.e. created + window + skew, or
// expires + skew when sooner. A signature bounded by neither (no created,
// or no window, and no expires) is remembered for the window (at least
// DefaultSignatureWindow) plus skew from now.
func (a *Authenticator) nonceValidity(res *httpsig.Result) time.Duration {
	now := a.now()
	skew := max(a.opts.ClockSkew, 0)
	var until time.Time
	if !res.Created.IsZero() && a.opts.SignatureWindow > 0 {
		until = res.Created.Add(a.opts.SignatureWindow + skew)
	}
	if !res.Expires.IsZero() {
		if e := res.Expires.Add(skew); until.IsZero() || e.Before(until) {
			until = e
		}
	}
	if until.IsZero() {
		until = now.Add(max(a.opts.SignatureWindow, DefaultSignatureWindow) + skew)
	}
	return min(max(until.Sub(now), minNonceValidity), maxNonceValidity)
}
