package agentauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/dunglas/httpsfv"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Policy is how a tenant requires agents to authenticate.
type Policy string

const (
	// PolicyEither accepts an API key or a signature; when both are sent
	// both must verify.
	PolicyEither Policy = "either"
	// PolicyAPIKey requires an API key; signatures are not looked at.
	PolicyAPIKey Policy = "api_key"
	// PolicySignature requires an RFC 9421 signature; API keys are not
	// looked at.
	PolicySignature Policy = "signature"
)

// TenantPolicy is what the Authenticator needs to know about a tenant.
type TenantPolicy struct {
	Auth Policy
	// SignAllResponses signs every tools/call response, not only those of
	// the operations that are always signed (Operation.Signed).
	SignAllResponses bool
	// Development tenants may name http/loopback agent profiles; passed to
	// the KeySource.
	Development bool
	// RequireCreated refuses signatures without created; RequireNonce
	// also those without a nonce (it implies RequireCreated). Whatever
	// they say, a created present is bounded to the window and a nonce
	// present is accepted once.
	RequireCreated, RequireNonce bool
}

// PolicyFromTenant reads the policy from a registry Tenant. ok is false
// when the message carries no policy (a registry that predates it), in
// which case the Authenticator must look it up.
func PolicyFromTenant(t *tenantsv1.Tenant) (TenantPolicy, bool) {
	p, ok := policyFromProto(t.GetAgentAuthPolicy())
	return TenantPolicy{Auth: p, SignAllResponses: t.GetSignAllResponses(),
		Development:    t.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
		RequireCreated: t.GetRequireSignatureCreated() || t.GetRequireSignatureNonce(), RequireNonce: t.GetRequireSignatureNonce()}, ok
}

func policyFromProto(p tenantsv1.AgentAuthPolicy) (Policy, bool) {
	switch p {
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER:
		return PolicyEither, true
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_API_KEY:
		return PolicyAPIKey, true
	case tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE:
		return PolicySignature, true
	}
	return "", false
}

type policyKey struct{}

// WithTenantPolicy hands the Authenticator the policy of the request's
// tenant, which the edge already holds from Host resolution; without it
// the Authenticator asks the registry (GetAgentAuthPolicy) and caches the
// answer for Options.PolicyTTL.
func WithTenantPolicy(ctx context.Context, p TenantPolicy) context.Context {
	return context.WithValue(ctx, policyKey{}, p)
}

// Principal is the authenticated agent.
type Principal struct {
	// Method is "signature" or "api_key": what authenticated the request.
	// When both were sent (PolicyEither) and verified, it is "signature".
	Method string
	// KeyID is the signature keyid (JWK kid) or the API key id.
	KeyID string
	// AgentProfileURL is the agent the request acts for: the profile named
	// by BCP-Agent/meta, or the API key's binding when the request names
	// none.
	AgentProfileURL string
	// APIKeyID and SignatureKeyID record each credential that verified.
	APIKeyID       string
	SignatureKeyID string
}

// Authentication methods.
const (
	MethodSignature = "signature"
	MethodAPIKey    = "api_key"
)

// PrincipalFrom returns the agent authenticated by Middleware. Requests
// that passed without credentials (public MCP methods) have none.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	if ar, ok := ctx.Value(requestKey{}).(*authRequest); ok && ar.principal != nil {
		return ar.principal, true
	}
	return nil, false
}

// DefaultPublicMethods are the MCP methods served without credentials:
// the handshake and tool discovery, which reveal nothing tenant-specific
// beyond what /.well-known/bcp publishes and act on nothing. A trailing
// "*" matches a prefix. tools/call and every other method need
// credentials.
var DefaultPublicMethods = []string{"initialize", "server/discover", "ping", "tools/list", "notifications/*"}

// Defaults.
const (
	DefaultMaxBodyBytes         = 4 << 20 // the MCP SDK's own limit
	DefaultPolicyTTL            = 5 * time.Second
	DefaultAPIKeyTTL            = 10 * time.Second
	DefaultForceRefreshInterval = 10 * time.Second
	// DefaultSignatureWindow bounds how old a signature's created may be;
	// DefaultClockSkew is the clock difference tolerated on created (both
	// ways) and expires.
	DefaultSignatureWindow = 5 * time.Minute
	DefaultClockSkew       = 30 * time.Second
	maxCacheEntries        = 100_000
	// rpcTimeout bounds each registry call made while a request waits.
	rpcTimeout = 5 * time.Second
)

// Options configure an Authenticator.
type Options struct {
	// Tenants is the registry client (internal token): policy lookups,
	// AuthenticateAPIKey and SignWithCurrentKey. Required.
	Tenants tenantsv1connect.TenantServiceClient
	// Keys supplies agent profile keys. Nil: every signature fails with
	// key_not_found (API keys still work).
	Keys KeySource
	// Now is the clock for signature times and caches (default time.Now).
	Now func() time.Time
	// MaxBodyBytes bounds the request body read for authentication
	// (default 4 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// ClockSkew tolerated on created/expires (default DefaultClockSkew,
	// 30 s; negative: none).
	ClockSkew time.Duration
	// SignatureWindow refuses signatures whose created is older (plus
	// ClockSkew): default DefaultSignatureWindow, 5 min; negative: created
	// is only checked not to be in the future (replays are then refused by
	// nonce only). RFC 9421 §3.2.1 leaves the bound to the verifier; UCP
	// puts business-level replay protection in idempotency keys.
	SignatureWindow time.Duration
	// Nonces is the replay cache of signature nonces, shared by every edge
	// (default: the tenants service's, ClaimSignatureNonce through
	// Tenants). A signature carrying a nonce already claimed is refused.
	Nonces NonceStore
	// Algorithms allowed for agent signatures (nil: ES256, ES384, EdDSA).
	Algorithms []httpsig.Algorithm
	// Scheme agents use, when TLS ends before the edge (derives the
	// default port dropped from @authority). Empty: as the request arrived.
	Scheme string
	// PolicyTTL caches registry policy lookups (default 5 s); APIKeyTTL
	// caches successful API key lookups (default 10 s). Wire Invalidate
	// and Reset to the registry change feed to drop entries at once.
	PolicyTTL time.Duration
	APIKeyTTL time.Duration
	// ForceRefreshInterval is the minimum time between two forced refreshes
	// of one profile URL (default 10 s; negative: leave it to the
	// KeySource).
	ForceRefreshInterval time.Duration
	// PublicMethods are served without credentials (default
	// DefaultPublicMethods).
	PublicMethods []string
	// Operations are the BCP operations (the edge's operation table): the
	// REST route naming each and whether its responses are always signed.
	// Nil: REST requests name no operation and only merchants that sign
	// everything get signed responses.
	Operations []Operation
	// Logger (default slog.Default()). Secrets are never logged.
	Logger *slog.Logger
}

// Authenticator authenticates agents at the MCP endpoint and signs
// responses with the merchant's key. It is safe for concurrent use.
type Authenticator struct {
	opts     Options
	reqs     []httpsig.Requirement
	log      *slog.Logger
	signer   *RemoteSigner
	refresh  refreshLimiter
	policies *ttlCache[uuid.UUID, TenantPolicy]
	apiKeys  *ttlCache[apiKeyCacheKey, apiKeyEntry]
	ops      *operations
}

type apiKeyCacheKey struct {
	tenant uuid.UUID
	hash   [32]byte // SHA-256 of the secret: the secret itself is not kept
}

type apiKeyEntry struct {
	id, profile string
}

// New returns an Authenticator.
func New(opts Options) *Authenticator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.PolicyTTL <= 0 {
		opts.PolicyTTL = DefaultPolicyTTL
	}
	if opts.APIKeyTTL <= 0 {
		opts.APIKeyTTL = DefaultAPIKeyTTL
	}
	if opts.SignatureWindow == 0 {
		opts.SignatureWindow = DefaultSignatureWindow
	}
	if opts.ClockSkew == 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	if opts.Nonces == nil && opts.Tenants != nil {
		opts.Nonces = RemoteNonces{Tenants: opts.Tenants}
	}
	if opts.ForceRefreshInterval == 0 {
		opts.ForceRefreshInterval = DefaultForceRefreshInterval
	}
	if opts.PublicMethods == nil {
		opts.PublicMethods = DefaultPublicMethods
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Keys == nil {
		opts.Keys = KeySourceFunc(func(context.Context, string, bool, bool) ([]json.RawMessage, error) { return nil, nil })
	}
	return &Authenticator{
		opts: opts,
		// BCP signs bcp-agent; an agent using the UCP-Agent alias must sign
		// that header instead.
		reqs:     append(httpsig.RequestRequirements("bcp-agent"), httpsig.RequireIfHeader("ucp-agent")),
		log:      opts.Logger,
		signer:   &RemoteSigner{Tenants: opts.Tenants, Now: opts.Now},
		refresh:  refreshLimiter{interval: opts.ForceRefreshInterval, last: map[string]time.Time{}},
		policies: newTTLCache[uuid.UUID, TenantPolicy](),
		apiKeys:  newTTLCache[apiKeyCacheKey, apiKeyEntry](),
		ops:      newOperations(opts.Operations),
	}
}

func (a *Authenticator) now() time.Time { return a.opts.Now() }

// Invalidate drops what is cached for a tenant (policy, API keys). Wire it
// to the registry change feed next to the edge's other caches.
func (a *Authenticator) Invalidate(tenantID string) {
	id, err := uuid.Parse(tenantID)
	if err != nil {
		return
	}
	a.policies.deleteFunc(func(k uuid.UUID) bool { return k == id })
	a.apiKeys.deleteFunc(func(k apiKeyCacheKey) bool { return k.tenant == id })
}

// Reset drops every cached entry (change feed reset).
func (a *Authenticator) Reset() {
	a.policies.clear()
	a.apiKeys.clear()
}

// Handler is Middleware(SignResponses(next)): authenticate, then sign the
// responses that must be signed.
func (a *Authenticator) Handler(next http.Handler) http.Handler {
	return a.Middleware(a.SignResponses(next))
}

type requestKey struct{}

// authRequest is what the middleware learned of a request, in one context
// value (requestKey): its JSON-RPC messages (or REST operation), and the
// agent authenticated (nil: none, a public method).
type authRequest struct {
	rpc       rpcRequest
	principal *Principal
}

// Middleware authenticates every request before next sees it. The body is
// read once (at most MaxBodyBytes) and restored for next. On failure it
// answers with a JSON-RPC error itself and next is never called.
//
// Requests pass without credentials only when they are POSTs whose
// JSON-RPC messages all are PublicMethods; every other request, including
// GET and DELETE, needs credentials. The tenant must be in the context
// (tenancy.With), as the edge's Host routing puts it.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isREST(r.Context()) {
			a.restMiddleware(next).ServeHTTP(w, r)
			return
		}
		body, f := readBody(r, a.opts.MaxBodyBytes)
		if f != nil {
			WriteFailure(w, nil, f)
			return
		}
		rpc, err := parseRPC(body)
		if err != nil {
			if errors.Is(err, errNULProfile) {
				f := fail(http.StatusBadRequest, CodeInvalidParams, ErrCodeInvalidParams, "invalid params", err.Error())
				f.Paths = []string{ProfilePath}
				WriteFailure(w, rpc.responseID(), f)
			} else if errors.Is(err, errBadProfile) {
				WriteFailure(w, rpc.responseID(), fail(http.StatusBadRequest, CodeDiscovery, ErrCodeInvalidProfileURL, "invalid agent profile", err.Error()))
			} else {
				WriteFailure(w, nil, fail(http.StatusBadRequest, CodeInvalidRequest, ErrCodeInvalidRequest, "invalid request", "the JSON-RPC message repeats a member"))
			}
			return
		}
		r.Body = NewBody(body)
		r.ContentLength = int64(len(body))
		ar := &authRequest{rpc: rpc}
		ctx := context.WithValue(r.Context(), requestKey{}, ar)
		if r.Method == http.MethodPost && rpc.isPublic(a.opts.PublicMethods) {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		p, f := a.authenticate(ctx, r, body, rpc)
		if f != nil {
			a.log.DebugContext(ctx, "agent authentication failed", "code", f.Code, "status", f.Status, "detail", f.Content)
			WriteFailure(w, rpc.responseID(), f)
			return
		}
		ar.principal = p
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Body is a request body read whole, as Middleware hands it on: a reader
// of the bytes that also gives them (Unread), so that a layer behind it
// need not read and copy them again.
type Body struct {
	r bytes.Reader
	b []byte
}

// NewBody returns a Body reading b.
func NewBody(b []byte) *Body {
	body := &Body{b: b}
	body.r.Reset(b)
	return body
}

func (b *Body) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close does nothing: the bytes are in memory.
func (b *Body) Close() error { return nil }

// Unread returns the bytes not read yet (all of them unless someone read
// from the body), without copying them: callers must not modify them.
func (b *Body) Unread() []byte { return b.b[len(b.b)-b.r.Len():] }

func readBody(r *http.Request, limit int64) ([]byte, *Failure) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, fail(http.StatusRequestEntityTooLarge, CodeInvalidRequest, ErrCodeRequestTooLarge, "request too large", "the request body exceeds the limit")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, fail(http.StatusBadRequest, CodeInvalidRequest, ErrCodeInvalidRequest, "invalid request", "the request body could not be read")
	}
	if int64(len(body)) > limit {
		return nil, fail(http.StatusRequestEntityTooLarge, CodeInvalidRequest, ErrCodeRequestTooLarge, "request too large", "the request body exceeds the limit")
	}
	return body, nil
}

func (a *Authenticator) authenticate(ctx context.Context, r *http.Request, body []byte, rpc rpcRequest) (*Principal, *Failure) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		a.log.ErrorContext(ctx, "agentauth: no tenant in the request context; mount the middleware behind Host routing")
		return nil, fail(http.StatusInternalServerError, CodeInternal, ErrCodeInternal, "internal error", "internal error")
	}
	pol, err := a.tenantPolicy(ctx, tid)
	if err != nil {
		return nil, a.serviceFailure(ctx, "policy lookup", err)
	}

	apiKey, f := apiKeyFrom(r.Header)
	if f != nil {
		return nil, f
	}
	signed := len(r.Header.Values(httpsig.SignatureInputHeader)) > 0 || len(r.Header.Values(httpsig.SignatureHeader)) > 0
	useKey, useSig := apiKey != "", signed
	switch pol.Auth {
	case PolicyAPIKey:
		useSig = false
		if !useKey {
			f := authFailure(ErrCodeUnauthenticated, "this merchant requires an agent API key (X-API-Key or Authorization: Bearer)")
			f.Challenge = challengeAPIKey
			return nil, f
		}
	case PolicySignature:
		useKey = false
		if !useSig {
			f := authFailure(ErrCodeSignatureMissing, "this merchant requires an RFC 9421 signature made with a key of the agent profile")
			f.Challenge, f.acceptParams = challengeSignature, pol.acceptParams()
			return nil, f
		}
	default:
		if !useKey && !useSig {
			f := authFailure(ErrCodeUnauthenticated, "send an agent API key (X-API-Key or Authorization: Bearer) or an RFC 9421 signature")
			f.Challenge, f.acceptParams = challengeBoth, pol.acceptParams()
			return nil, f
		}
	}

	profile, f := requestProfile(r.Header, rpc)
	if f != nil {
		return nil, f
	}
	p := &Principal{AgentProfileURL: profile}
	if useKey {
		e, f := a.checkAPIKey(ctx, tid, apiKey)
		if f != nil {
			return nil, f
		}
		if profile != "" && e.profile != profile {
			return nil, fail(http.StatusForbidden, CodeProtocol, ErrCodeProfileMismatch, "agent profile mismatch",
				"the API key is bound to another agent profile than the one this request names")
		}
		p.Method, p.KeyID, p.APIKeyID, p.AgentProfileURL = MethodAPIKey, e.id, e.id, e.profile
		// A request naming no profile acts for the key's; a signature sent
		// with the key is then checked against that profile's keys.
		profile = e.profile
	}
	if useSig {
		if profile == "" {
			return nil, fail(http.StatusBadRequest, CodeDiscovery, ErrCodeInvalidProfileURL, "invalid agent profile",
				`a signed request must name its agent profile (BCP-Agent: profile="<url>" or meta["ucp-agent"].profile), whose keys verify it`)
		}
		v := &httpsig.Verifier{
			Keys: a.resolver(profile, pol.Development), Algorithms: a.opts.Algorithms, Requirements: a.reqs,
			MaxAge: max(a.opts.SignatureWindow, 0), ClockSkew: a.skew(), Now: a.opts.Now, Scheme: a.opts.Scheme,
			RequireCreated: pol.RequireCreated || pol.RequireNonce, RequireNonce: pol.RequireNonce,
		}
		res, err := v.VerifyRequest(ctx, r, body)
		if err != nil {
			if f := signatureFailure(err); f != nil {
				return nil, f
			}
			return nil, a.serviceFailure(ctx, "agent profile keys", err)
		}
		if f := a.claimNonce(ctx, profile, res); f != nil {
			return nil, f
		}
		p.Method, p.KeyID, p.SignatureKeyID = MethodSignature, res.KeyID, res.KeyID
	}
	return p, nil
}

// apiKeyFrom returns the API key the request carries: X-API-Key or an
// Authorization Bearer token (other schemes are not API keys).
func apiKeyFrom(h http.Header) (string, *Failure) {
	var keys []string
	for _, v := range h.Values("X-Api-Key") {
		if v = strings.TrimSpace(v); v != "" {
			keys = append(keys, v)
		}
	}
	for _, v := range h.Values("Authorization") {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != "" {
			keys = append(keys, strings.TrimSpace(tok))
		}
	}
	for _, k := range keys[min(1, len(keys)):] {
		if k != keys[0] {
			f := authFailure(ErrCodeInvalidAPIKey, "the request carries more than one API key")
			f.Challenge = challengeAPIKey
			return "", f
		}
	}
	if len(keys) == 0 {
		return "", nil
	}
	return keys[0], nil
}

// requestProfile returns the agent profile URL the request names, from
// BCP-Agent (or its alias UCP-Agent) and meta["ucp-agent"].profile of each
// tools/call; all that are present must agree. "" when none is named.
func requestProfile(h http.Header, rpc rpcRequest) (string, *Failure) {
	var profile, from string
	add := func(p, source string) *Failure {
		if profile == "" {
			profile, from = p, source
			return nil
		}
		if p != profile {
			return fail(http.StatusForbidden, CodeProtocol, ErrCodeProfileMismatch, "agent profile mismatch",
				"the agent profile in "+source+" differs from the one in "+from)
		}
		return nil
	}
	// The fields by their canonical keys (a lookup with another spelling
	// allocates the canonical one) and their names in messages.
	for _, f := range agentFields {
		name := f.name
		vals := h[f.key]
		if len(vals) == 0 {
			continue
		}
		p, err := parseAgentHeader(vals)
		if err != nil {
			return "", fail(http.StatusBadRequest, CodeDiscovery, ErrCodeInvalidProfileURL, "invalid agent profile",
				name+` must be a structured-field dictionary with profile="<url>"`)
		}
		if fl := add(p, name); fl != nil {
			return "", fl
		}
	}
	for _, m := range rpc.messages {
		if m.profile != "" {
			if f := add(m.profile, `meta["ucp-agent"].profile`); f != nil {
				return "", f
			}
		}
	}
	return profile, nil
}

// agentFields are the agent header fields, BCP-Agent and its alias
// UCP-Agent: their canonical keys in an http.Header and their names.
var agentFields = []struct{ key, name string }{{"Bcp-Agent", "BCP-Agent"}, {"Ucp-Agent", "UCP-Agent"}}

// parseAgentHeader reads profile="<url>" from a BCP-Agent/UCP-Agent field
// (an RFC 8941 dictionary). An agent sends the same field on every
// request: the profiles of single-line fields are kept (agentHeaders).
func parseAgentHeader(values []string) (string, error) {
	if len(values) != 1 || len(values[0]) > maxKeptAgentHeader {
		return parseAgentDictionary(values)
	}
	v := values[0]
	agentHeaders.RLock()
	p, ok := agentHeaders.m[v]
	agentHeaders.RUnlock()
	if ok {
		return p, nil
	}
	p, err := parseAgentDictionary(values)
	if err != nil {
		return "", err
	}
	agentHeaders.Lock()
	if len(agentHeaders.m) >= maxAgentHeaders {
		clear(agentHeaders.m) // a flood of distinct fields: start over, bounded
	}
	agentHeaders.m[v] = p
	agentHeaders.Unlock()
	return p, nil
}

// agentHeaders maps BCP-Agent/UCP-Agent field values (one line, at most
// maxKeptAgentHeader bytes) parseAgentDictionary accepted to their
// profile: at most maxAgentHeaders of them (≈ 2 MB).
var agentHeaders = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const (
	maxKeptAgentHeader = 512
	maxAgentHeaders    = 4096
)

func parseAgentDictionary(values []string) (string, error) {
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return "", err
	}
	m, ok := d.Get("profile")
	if !ok {
		return "", errors.New("no profile member")
	}
	it, ok := m.(httpsfv.Item)
	if !ok {
		return "", errors.New("profile is not an item")
	}
	s, ok := it.Value.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", errors.New("profile is not a string")
	}
	return strings.TrimSpace(s), nil
}

// checkAPIKey authenticates secret in tenant tid. Successful lookups are
// cached under the secret's SHA-256 for APIKeyTTL.
func (a *Authenticator) checkAPIKey(ctx context.Context, tid uuid.UUID, secret string) (apiKeyEntry, *Failure) {
	k := apiKeyCacheKey{tenant: tid, hash: sha256.Sum256([]byte(secret))}
	if e, ok := a.apiKeys.get(k, a.now()); ok {
		return e, nil
	}
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := a.opts.Tenants.AuthenticateAPIKey(rctx, connect.NewRequest(&tenantsv1.AuthenticateAPIKeyRequest{TenantId: tid.String(), Secret: secret}))
	if err != nil {
		if e := apperr.As(err); e.Kind == apperr.KindNotFound || e.Kind == apperr.KindInvalidArgument {
			f := authFailure(ErrCodeInvalidAPIKey, "the API key is not valid for this merchant")
			f.Challenge = challengeAPIKey
			return apiKeyEntry{}, f
		}
		return apiKeyEntry{}, a.serviceFailure(ctx, "API key lookup", err)
	}
	e := apiKeyEntry{id: resp.Msg.GetApiKeyId(), profile: strings.TrimSpace(resp.Msg.GetAgentProfileUrl())}
	a.apiKeys.put(k, e, a.now().Add(a.opts.APIKeyTTL))
	return e, nil
}

// tenantPolicy returns the tenant's policy from the context, the cache or
// the registry.
func (a *Authenticator) tenantPolicy(ctx context.Context, tid uuid.UUID) (TenantPolicy, error) {
	if p, ok := ctx.Value(policyKey{}).(TenantPolicy); ok && p.Auth != "" {
		return p, nil
	}
	if p, ok := a.policies.get(tid, a.now()); ok {
		return p, nil
	}
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := a.opts.Tenants.GetAgentAuthPolicy(rctx, connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: tid.String()}))
	if err != nil {
		return TenantPolicy{}, err
	}
	auth, ok := policyFromProto(resp.Msg.GetPolicy())
	if !ok {
		auth = PolicyEither // the registry's default
	}
	p := TenantPolicy{Auth: auth, SignAllResponses: resp.Msg.GetSignAllResponses(),
		Development:    resp.Msg.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
		RequireCreated: resp.Msg.GetRequireSignatureCreated() || resp.Msg.GetRequireSignatureNonce(), RequireNonce: resp.Msg.GetRequireSignatureNonce()}
	a.policies.put(tid, p, a.now().Add(a.opts.PolicyTTL))
	return p, nil
}

func (a *Authenticator) serviceFailure(ctx context.Context, what string, err error) *Failure {
	e := apperr.As(err)
	if e.Kind == apperr.KindUnavailable || e.Kind == apperr.KindAborted {
		a.log.WarnContext(ctx, "agentauth: dependency unavailable", "what", what, "err", err)
		return fail(http.StatusServiceUnavailable, CodeProtocol, ErrCodeUnavailable, "temporarily unavailable", "the platform is temporarily unavailable, retry shortly")
	}
	a.log.ErrorContext(ctx, "agentauth: dependency failed", "what", what, "err", err)
	return fail(http.StatusInternalServerError, CodeInternal, ErrCodeInternal, "internal error", "internal error")
}

// ttlCache is a small map with per-entry expiry, bounded by random
// eviction (keys can be attacker-influenced).
type ttlCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[K comparable, V any]() *ttlCache[K, V] {
	return &ttlCache[K, V]{m: map[K]ttlEntry[V]{}}
}

func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if len(c.m) < maxCacheEntries {
			break
		}
		delete(c.m, k)
	}
	c.m[k] = ttlEntry[V]{v: v, expires: expires}
}

func (c *ttlCache[K, V]) deleteFunc(match func(K) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if match(k) {
			delete(c.m, k)
		}
	}
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
