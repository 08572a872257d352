package tenants

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/dunglas/httpsfv"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/keyring"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// Signing key rotation defaults. The delay lets verifiers that cached the
// merchant profile (agents must cache ≥ 60 s, the edge serves max-age=300)
// see the new key before anything is signed with it; the retention is
// UCP's "accept old keys ≥ 7 days" floor.
const (
	DefaultRotationDelay = time.Hour
	MaxRotationDelay     = 30 * 24 * time.Hour
	MinKeyRetention      = 7 * 24 * time.Hour
	MaxKeyRetention      = 365 * 24 * time.Hour
)

// Bounds of what SignWithCurrentKey accepts: a signature base covers a
// handful of short fields, never a body.
const (
	maxSignatureBase   = 16 << 10
	maxSignatureParams = 4 << 10
	maxAPIKeySecret    = 512
)

// Agent auth policies as stored in tenants.tenants.agent_auth_policy.
const (
	policyEither    = "either"
	policyAPIKey    = "api_key"
	policySignature = "signature"
)

func policyToProto(p string) tenantsv1.AgentAuthPolicy {
	switch p {
	case policyEither:
		return tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER
	case policyAPIKey:
		return tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_API_KEY
	case policySignature:
		return tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE
	}
	return tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_UNSPECIFIED
}

func policyToDB(p tenantsv1.AgentAuthPolicy) (*string, error) {
	var s string
	switch p {
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_UNSPECIFIED:
		return nil, nil
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER:
		s = policyEither
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_API_KEY:
		s = policyAPIKey
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE:
		s = policySignature
	default:
		return nil, apperr.Invalid("policy", "invalid_policy", "unknown agent auth policy %v", p)
	}
	return &s, nil
}

// SetAgentAuthPolicy is an operator method.
func (s *Service) SetAgentAuthPolicy(ctx context.Context, req *connect.Request[tenantsv1.SetAgentAuthPolicyRequest]) (*connect.Response[tenantsv1.SetAgentAuthPolicyResponse], error) {
	policy, err := policyToDB(req.Msg.GetPolicy())
	if err != nil {
		return nil, err
	}
	if req.Msg.RequireSignatureNonce != nil && req.Msg.GetRequireSignatureNonce() &&
		req.Msg.RequireSignatureCreated != nil && !req.Msg.GetRequireSignatureCreated() {
		return nil, apperr.Invalid("require_signature_nonce", "nonce_needs_created",
			"a nonce is only replay-proof together with created: require_signature_nonce needs require_signature_created")
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).SetAgentAuthPolicy(ctx, tenantsdb.SetAgentAuthPolicyParams{
			TenantID: id, AgentAuthPolicy: policy, SignAllResponses: req.Msg.SignAllResponses,
			RequireSignatureCreated: req.Msg.RequireSignatureCreated, RequireSignatureNonce: req.Msg.RequireSignatureNonce,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	t, err := s.loadTenant(ctx, id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetAgentAuthPolicyResponse{Tenant: t}), nil
}

// GetAgentAuthPolicy is internal: the edge's fallback when the Tenant it
// resolved from the Host is not at hand.
func (s *Service) GetAgentAuthPolicy(ctx context.Context, req *connect.Request[tenantsv1.GetAgentAuthPolicyRequest]) (*connect.Response[tenantsv1.GetAgentAuthPolicyResponse], error) {
	id, err := parseTenantID(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	t, err := s.loadTenant(tenancy.With(ctx, id), id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetAgentAuthPolicyResponse{
		Policy: t.GetAgentAuthPolicy(), SignAllResponses: t.GetSignAllResponses(), Environment: t.GetEnvironment(),
		RequireSignatureCreated: t.GetRequireSignatureCreated(), RequireSignatureNonce: t.GetRequireSignatureNonce(),
	}), nil
}

// AuthenticateAPIKey is internal. The secret is hashed at once and looked
// up in the given tenant only, so a key of tenant A presented at tenant B's
// host is simply unknown there. Unknown and revoked keys get the same
// NOT_FOUND; nothing about the secret is ever logged or echoed.
func (s *Service) AuthenticateAPIKey(ctx context.Context, req *connect.Request[tenantsv1.AuthenticateAPIKeyRequest]) (*connect.Response[tenantsv1.AuthenticateAPIKeyResponse], error) {
	id, err := parseTenantID(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	secret := req.Msg.GetSecret()
	if secret == "" || len(secret) > maxAPIKeySecret {
		return nil, apperr.NotFound("api_key_not_found", "unknown or revoked API key")
	}
	hash := HashAPIKey(secret)
	ctx = tenancy.With(ctx, id)
	var row tenantsdb.AuthenticateAPIKeyRow
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		row, err = tenantsdb.New(tx).AuthenticateAPIKey(ctx, tenantsdb.AuthenticateAPIKeyParams{TenantID: id, KeyHash: hash[:]})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("api_key_not_found", "unknown or revoked API key")
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.AuthenticateAPIKeyResponse{ApiKeyId: row.ID, AgentProfileUrl: strings.TrimSpace(row.AgentProfileUrl)}), nil
}

// signingKey is one stored key as the status and selection logic sees it.
type signingKey struct {
	kid       string
	alg       string
	publicJWK json.RawMessage
	sealed    []byte
	created   time.Time
	signFrom  time.Time
	retireAt  *time.Time
	revokedAt *time.Time
}

// live reports whether k may sign and is published at now.
func (k signingKey) live(now time.Time) bool {
	return k.revokedAt == nil && (k.retireAt == nil || k.retireAt.After(now))
}

// pickCurrent returns the index of the key to sign with at now, or -1.
// Among live keys it is the most recently created one whose sign_from has
// passed: a rotation always wins over the keys it superseded, even over a
// superseded key whose own (longer) delay ends later. When no live key
// may sign yet (the current one was revoked during a rotation's delay),
// it is the pending key that starts first: it is already published, and
// signing with it is better than signing with nothing.
func pickCurrent(keys []signingKey, now time.Time) int {
	best := -1
	for i, k := range keys {
		if !k.live(now) || k.signFrom.After(now) {
			continue
		}
		if best < 0 || k.created.After(keys[best].created) || (k.created.Equal(keys[best].created) && k.kid > keys[best].kid) {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i, k := range keys {
		if !k.live(now) {
			continue
		}
		if best < 0 || k.signFrom.Before(keys[best].signFrom) {
			best = i
		}
	}
	return best
}

func keyStatus(keys []signingKey, i, current int, now time.Time) tenantsv1.SigningKeyStatus {
	k := keys[i]
	switch {
	case k.revokedAt != nil:
		return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_REVOKED
	case !k.live(now):
		return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRED
	case i == current:
		return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT
	case k.retireAt != nil:
		return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING
	case k.signFrom.After(now):
		return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_PENDING
	}
	// Live, usable, not superseded and yet not picked: a newer key took
	// over without retiring it (keys made before rotations existed).
	return tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING
}

func keysToProto(keys []signingKey, now time.Time) []*tenantsv1.SigningKey {
	current := pickCurrent(keys, now)
	out := make([]*tenantsv1.SigningKey, len(keys))
	for i, k := range keys {
		out[i] = &tenantsv1.SigningKey{
			Kid: k.kid, Alg: k.alg, CreateTime: timestamppb.New(k.created), SignFromTime: timestamppb.New(k.signFrom),
			Status: keyStatus(keys, i, current, now), PublicJwkJson: compactJSON(k.publicJWK),
		}
		if k.retireAt != nil {
			out[i].RetireTime = timestamppb.New(*k.retireAt)
		}
		if k.revokedAt != nil {
			out[i].RevokeTime = timestamppb.New(*k.revokedAt)
		}
	}
	return out
}

// listKeys reads every key of the tenant with the database clock.
func listKeys(ctx context.Context, q *tenantsdb.Queries, id uuid.UUID) ([]signingKey, time.Time, error) {
	rows, err := q.ListSigningKeys(ctx, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := time.Now()
	keys := make([]signingKey, len(rows))
	for i, r := range rows {
		keys[i] = signingKey{kid: r.Kid, alg: r.Alg, publicJWK: r.PublicJwk, created: r.CreatedAt, signFrom: r.SignFrom, retireAt: r.RetireAt, revokedAt: r.RevokedAt}
		now = r.DbNow
	}
	return keys, now, nil
}

// ListSigningKeys is an operator method.
func (s *Service) ListSigningKeys(ctx context.Context, req *connect.Request[tenantsv1.ListSigningKeysRequest]) (*connect.Response[tenantsv1.ListSigningKeysResponse], error) {
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var out []*tenantsv1.SigningKey
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		keys, now, err := listKeys(ctx, tenantsdb.New(tx), id)
		out = keysToProto(keys, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.ListSigningKeysResponse{Keys: out}), nil
}

// RotateSigningKey is an operator method: a new ES256 key is published at
// once (it is in ListPublishedSigningKeys, hence in the profile's
// signing_keys, from the commit on) and signs from now + delay; every
// other live key is retired retention after that moment, so signatures
// they made up to the switch verify for at least that long.
func (s *Service) RotateSigningKey(ctx context.Context, req *connect.Request[tenantsv1.RotateSigningKeyRequest]) (*connect.Response[tenantsv1.RotateSigningKeyResponse], error) {
	delay := DefaultRotationDelay
	if d := req.Msg.GetDelay(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, apperr.Invalid("delay", "invalid_delay", "delay is not a valid duration")
		}
		delay = d.AsDuration()
	}
	if delay < 0 || delay > MaxRotationDelay {
		return nil, apperr.Invalid("delay", "invalid_delay", "delay must be between 0 and %s", MaxRotationDelay)
	}
	retention := MinKeyRetention
	if r := req.Msg.GetRetention(); r != nil {
		if err := r.CheckValid(); err != nil {
			return nil, apperr.Invalid("retention", "invalid_retention", "retention is not a valid duration")
		}
		retention = r.AsDuration()
	}
	if retention < MinKeyRetention || retention > MaxKeyRetention {
		return nil, apperr.Invalid("retention", "invalid_retention", "superseded keys must stay published between %s and %s", MinKeyRetention, MaxKeyRetention)
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	gen, err := keyring.GenerateES256(s.sealer, id)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var (
		keys []signingKey
		now  time.Time
	)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		if _, err := q.LockTenantSigningKeys(ctx, id); err != nil {
			return err
		}
		row, err := q.InsertRotatedSigningKey(ctx, tenantsdb.InsertRotatedSigningKeyParams{
			TenantID: id, Kid: gen.JWK.Kid, Alg: gen.JWK.Alg, PublicJwk: gen.JWK.JSON(), SealedPrivate: gen.Sealed,
			DelaySeconds: delay.Seconds(),
		})
		if err != nil {
			return err
		}
		retireAt := row.SignFrom.Add(retention)
		if _, err := q.RetireSupersededSigningKeys(ctx, tenantsdb.RetireSupersededSigningKeysParams{
			TenantID: id, NewKid: row.Kid, RetireAt: &retireAt,
		}); err != nil {
			return err
		}
		keys, now, err = listKeys(ctx, q, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("tenant_not_found", "no tenant %s", id)
	}
	if err != nil {
		return nil, err
	}
	s.signCache.Invalidate(id.String()) // at once here; other processes by NOTIFY
	s.log.InfoContext(ctx, "signing key rotated", "tenant_id", id, "kid", gen.JWK.Kid, "delay", delay, "retention", retention)
	out := &tenantsv1.RotateSigningKeyResponse{Keys: keysToProto(keys, now)}
	for _, k := range out.Keys {
		if k.GetKid() == gen.JWK.Kid {
			out.Key = k
		}
	}
	return connect.NewResponse(out), nil
}

// RevokeSigningKey is an operator method. The key leaves the published set
// in the same transaction (so the change notification drops edge caches),
// and is never selected for signing again. Revoking the last live key would
// leave the merchant unable to sign, so it needs force.
func (s *Service) RevokeSigningKey(ctx context.Context, req *connect.Request[tenantsv1.RevokeSigningKeyRequest]) (*connect.Response[tenantsv1.RevokeSigningKeyResponse], error) {
	kid := strings.TrimSpace(req.Msg.GetKid())
	if kid == "" {
		return nil, apperr.Invalid("kid", "kid_required", "the kid of the key to revoke is required")
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var out *tenantsv1.SigningKey
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		if _, err := q.LockTenantSigningKeys(ctx, id); err != nil {
			return err
		}
		others, err := q.CountOtherUsableSigningKeys(ctx, tenantsdb.CountOtherUsableSigningKeysParams{TenantID: id, Kid: kid})
		if err != nil {
			return err
		}
		row, err := q.RevokeSigningKey(ctx, tenantsdb.RevokeSigningKeyParams{TenantID: id, Kid: kid})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("signing_key_not_found", "tenant has no signing key %q", kid)
		}
		if err != nil {
			return err
		}
		if others == 0 && !req.Msg.GetForce() {
			return apperr.New(apperr.KindFailedPrecondition, "last_signing_key",
				"%s is the tenant's only usable signing key; rotate first, or revoke with force to stop signing altogether", kid)
		}
		keys, now, err := listKeys(ctx, q, id)
		for _, k := range keysToProto(keys, now) {
			if k.GetKid() == row.Kid {
				out = k
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.signCache.Invalidate(id.String()) // at once here; other processes by NOTIFY
	s.log.WarnContext(ctx, "signing key revoked", "tenant_id", id, "kid", kid)
	return connect.NewResponse(&tenantsv1.RevokeSigningKeyResponse{Key: out}), nil
}

// SignWithCurrentKey is internal. The caller sends the covered component
// lines and the signature parameters without keyid; the service picks the
// key, completes the @signature-params line with its keyid and signs, so
// the keyid in the message always names the key that signed, whatever a
// rotation does meanwhile. The private key never leaves this process.
func (s *Service) SignWithCurrentKey(ctx context.Context, req *connect.Request[tenantsv1.SignWithCurrentKeyRequest]) (*connect.Response[tenantsv1.SignWithCurrentKeyResponse], error) {
	id, err := parseTenantID(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	base := req.Msg.GetSignatureBase()
	if err := checkBaseLines(base); err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	k, priv, err := s.currentKey(ctx, id)
	if err != nil {
		return nil, err
	}
	params, err := withKeyID(req.Msg.GetSignatureParams(), k.kid)
	if err != nil {
		return nil, err
	}
	full := make([]byte, 0, len(base)+len(params)+24)
	full = append(append(append(full, base...), `"@signature-params": `...), params...)
	sig, err := keyring.SignES256Key(priv, full)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SignWithCurrentKeyResponse{Kid: k.kid, Alg: k.alg, Signature: sig, SignatureParams: params}), nil
}

// currentKey is the key the tenant signs with now (pickCurrent over its
// live keys), unsealed. The private key never leaves this process.
func (s *Service) currentKey(ctx context.Context, id uuid.UUID) (signingKey, *ecdsa.PrivateKey, error) {
	live, err := s.liveSigningKeys(ctx, id)
	if err != nil {
		return signingKey{}, nil, err
	}
	now := time.Now()
	i := pickCurrent(live.keys, now)
	if i < 0 && live.cached {
		// Nothing usable in the cached set: read again rather than refuse
		// on a set that may predate the key that signs now.
		s.signCache.Invalidate(id.String())
		if live, err = s.liveSigningKeys(ctx, id); err != nil {
			return signingKey{}, nil, err
		}
		i = pickCurrent(live.keys, now)
	}
	if i < 0 {
		return signingKey{}, nil, apperr.New(apperr.KindFailedPrecondition, "no_signing_key", "the tenant has no usable signing key; rotate to make one")
	}
	k := live.keys[i]
	if k.alg != keyring.AlgES256 {
		return signingKey{}, nil, apperr.New(apperr.KindInternal, "internal", "signing key %s has unsupported algorithm %s", k.kid, k.alg)
	}
	priv := live.priv[i]
	if priv == nil {
		if priv, err = keyring.OpenES256(s.sealer, id, k.kid, k.sealed); err != nil {
			return signingKey{}, nil, err // unseal failure: internal, logged by the interceptor without key material
		}
	}
	return k, priv, nil
}

// liveKeys are a tenant's live signing keys (ListLiveSigningKeys), with
// the ES256 private halves unsealed once; priv[i] is nil for a key of
// another algorithm or one that failed to unseal (signing with it unseals
// again and reports the error).
type liveKeys struct {
	keys   []signingKey
	priv   []*ecdsa.PrivateKey
	cached bool
}

// liveSigningKeys returns the tenant's live keys: from signCache, which the
// registry's change notifications (signing_keys NOTIFYs on every write)
// invalidate, while this process's change broadcaster is listening; from
// the database otherwise, so a revocation elsewhere is never missed for
// longer than a notification takes. The unsealed keys never leave this
// process.
func (s *Service) liveSigningKeys(ctx context.Context, id uuid.UUID) (*liveKeys, error) {
	if s.watch == nil || !s.signCache.Stats().Watched {
		return s.loadLiveSigningKeys(ctx, id)
	}
	lk, err := s.signCache.Get(ctx, id.String(), func(ctx context.Context) (*liveKeys, error) {
		return s.loadLiveSigningKeys(tenancy.With(ctx, id), id)
	})
	if err != nil {
		return nil, err
	}
	return &liveKeys{keys: lk.keys, priv: lk.priv, cached: true}, nil
}

func (s *Service) loadLiveSigningKeys(ctx context.Context, id uuid.UUID) (*liveKeys, error) {
	lk := &liveKeys{}
	err := pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tenantsdb.New(tx).ListLiveSigningKeys(ctx, id)
		for _, r := range rows {
			lk.keys = append(lk.keys, signingKey{kid: r.Kid, alg: r.Alg, sealed: r.SealedPrivate, created: r.CreatedAt, signFrom: r.SignFrom, retireAt: r.RetireAt})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	lk.priv = make([]*ecdsa.PrivateKey, len(lk.keys))
	for i, k := range lk.keys {
		if k.alg == keyring.AlgES256 {
			lk.priv[i], _ = keyring.OpenES256(s.sealer, id, k.kid, k.sealed)
		}
	}
	return lk, nil
}

// checkBaseLines accepts component lines as RFC 9421 §2.5 builds them:
// each `"<identifier>": <value>` and LF-terminated, no other control
// characters. It keeps the signing oracle to well-formed bases.
func checkBaseLines(base []byte) error {
	if len(base) > maxSignatureBase {
		return apperr.Invalid("signature_base", "invalid_signature_base", "signature base is larger than %d bytes", maxSignatureBase)
	}
	if len(base) == 0 {
		return apperr.Invalid("signature_base", "invalid_signature_base", "a signature must cover at least one component")
	}
	if base[len(base)-1] != '\n' {
		return apperr.Invalid("signature_base", "invalid_signature_base", "signature base lines must end with LF (the @signature-params line is added by the service)")
	}
	for _, line := range strings.Split(string(base[:len(base)-1]), "\n") {
		if !strings.HasPrefix(line, `"`) || !strings.Contains(line, `": `) || strings.HasPrefix(line, `"@signature-params"`) {
			return apperr.Invalid("signature_base", "invalid_signature_base", "malformed signature base line")
		}
		for _, c := range []byte(line) {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return apperr.Invalid("signature_base", "invalid_signature_base", "control character in signature base")
			}
		}
	}
	return nil
}

// withKeyID parses the @signature-params value (an inner list with
// parameters), refuses a caller-chosen keyid or alg and appends keyid.
func withKeyID(params, kid string) (string, error) {
	bad := func(msg string) (string, error) {
		return "", apperr.Invalid("signature_params", "invalid_signature_params", "%s", msg)
	}
	if params == "" || len(params) > maxSignatureParams {
		return bad("signature_params must be a serialised inner list of components with parameters")
	}
	list, err := httpsfv.UnmarshalList([]string{params})
	if err != nil || len(list) != 1 {
		return bad("signature_params must be a serialised inner list of components with parameters")
	}
	il, ok := list[0].(httpsfv.InnerList)
	if !ok {
		return bad("signature_params must be an inner list")
	}
	if il.Params == nil {
		il.Params = httpsfv.NewParams()
	}
	for _, name := range []string{"keyid", "alg"} {
		if _, ok := il.Params.Get(name); ok {
			return bad("signature_params must not carry " + name + ": the service sets the key")
		}
	}
	il.Params.Add("keyid", kid)
	out, err := httpsfv.Marshal(il)
	if err != nil {
		return bad("signature_params cannot be serialised")
	}
	return out, nil
}

func parseTenantID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || id == uuid.Nil {
		return uuid.Nil, apperr.Invalid("tenant_id", "invalid_tenant_id", "tenant_id must be a UUID")
	}
	return id, nil
}
