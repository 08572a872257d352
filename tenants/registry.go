package tenants

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/keyring"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

func (s *Service) createTenant(ctx context.Context, in *tenantsv1.CreateTenantRequest) (*tenantsv1.Tenant, error) {
	name := strings.TrimSpace(in.GetName())
	if name == "" || len(name) > 200 {
		return nil, apperr.Invalid("name", "invalid_name", "name is required (1 to 200 characters)")
	}
	env, err := envToDB(in.GetEnvironment())
	if err != nil {
		return nil, err
	}
	domains, err := normalizeDomains(in.GetDomains())
	if err != nil {
		return nil, err
	}
	if len(domains) == 0 {
		return nil, apperr.Invalid("domains", "domain_required", "a tenant needs at least one domain")
	}
	slug, derived := strings.TrimSpace(in.GetSlug()), false
	if slug == "" {
		slug, derived = Slugify(name), true
	}
	if !slugPattern.MatchString(slug) {
		return nil, apperr.Invalid("slug", "invalid_slug", "slug must be lower-case letters, digits and hyphens (%q)", slug)
	}
	id := uuid.New()
	key, err := keyring.GenerateES256(s.sealer, id)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	for attempt := 1; ; attempt++ {
		candidate := slug
		if attempt > 1 {
			candidate = fmt.Sprintf("%s-%d", strings.TrimRight(slug[:min(len(slug), 58)], "-"), attempt)
		}
		err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
			q := tenantsdb.New(tx)
			if _, err := q.InsertTenant(ctx, tenantsdb.InsertTenantParams{
				TenantID: id, Slug: candidate, Name: name, Environment: env, Capabilities: bcpnames.DefaultCapabilities,
			}); err != nil {
				return err
			}
			for i, d := range domains {
				if err := q.InsertDomain(ctx, tenantsdb.InsertDomainParams{TenantID: id, Domain: d, IsPrimary: i == 0}); err != nil {
					return err
				}
			}
			_, err := q.InsertSigningKey(ctx, tenantsdb.InsertSigningKeyParams{
				TenantID: id, Kid: key.JWK.Kid, Alg: key.JWK.Alg, PublicJwk: key.JWK.JSON(), SealedPrivate: key.Sealed, SignFrom: time.Now(),
			})
			return err
		})
		switch constraint(err) {
		case "tenants_slug_key":
			if derived && attempt < 50 {
				continue
			}
			return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_slug", "slug %q is taken", slug)
		case "domains_domain_key", "domains_pkey":
			return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_domain", "a domain in %v is already registered to a tenant", domains)
		}
		if err != nil {
			return nil, err
		}
		return s.loadTenant(ctx, id)
	}
}

// Slugify derives a slug from a display name: "Loja São João" → "loja-sao-joao".
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if f, ok := foldAccents[r]; ok {
			r = f
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	if out == "" {
		out = "loja"
	}
	return out
}

var foldAccents = map[rune]rune{
	'á': 'a', 'à': 'a', 'â': 'a', 'ã': 'a', 'ä': 'a', 'é': 'e', 'è': 'e', 'ê': 'e', 'ë': 'e',
	'í': 'i', 'ì': 'i', 'î': 'i', 'ï': 'i', 'ó': 'o', 'ò': 'o', 'ô': 'o', 'õ': 'o', 'ö': 'o',
	'ú': 'u', 'ù': 'u', 'û': 'u', 'ü': 'u', 'ç': 'c', 'ñ': 'n',
}

func normalizeDomains(in []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for i, raw := range in {
		d := hostname.Normalize(raw)
		if msg := hostname.Validate(d); msg != "" {
			return nil, apperr.Invalid(fmt.Sprintf("domains[%d]", i), "invalid_domain", "%q: %s", raw, msg)
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// constraint returns the name of the unique/check constraint err violates.
func constraint(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.ConstraintName
	}
	return ""
}

// resolveRef finds a tenant id from an id, slug or domain.
func (s *Service) resolveRef(ctx context.Context, ref string) (uuid.UUID, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return uuid.Nil, apperr.Invalid("tenant", "tenant_required", "a tenant (id, slug or domain) is required")
	}
	var row tenantsdb.TenantsTenant
	err := pgstore.InRegistry(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		var err error
		if id, perr := uuid.Parse(ref); perr == nil {
			row, err = q.GetTenantByID(ctx, id)
		} else if slugPattern.MatchString(ref) && !strings.Contains(ref, ".") {
			row, err = q.GetTenantBySlug(ctx, ref)
		} else {
			row, err = q.GetTenantByDomain(ctx, hostname.Normalize(ref))
		}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, apperr.NotFound("tenant_not_found", "no tenant %q", ref)
	}
	return row.TenantID, err
}

func (s *Service) getTenant(ctx context.Context, ref string) (*tenantsv1.Tenant, error) {
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s.loadTenant(tenancy.With(ctx, id), id)
}

// loadTenant reads a tenant and its domains in the tenant's own scope.
func (s *Service) loadTenant(ctx context.Context, id uuid.UUID) (*tenantsv1.Tenant, error) {
	var out *tenantsv1.Tenant
	err := pgstore.InTenant(tenancy.With(ctx, id), s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		row, err := q.GetTenantByID(ctx, id)
		if err != nil {
			return err
		}
		domains, err := q.ListDomains(ctx, id)
		if err != nil {
			return err
		}
		out = toProto(row, domains)
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("tenant_not_found", "no tenant %s", id)
	}
	return out, err
}

func (s *Service) listTenants(ctx context.Context, pageSize int32, token string) ([]*tenantsv1.Tenant, string, error) {
	return s.tenantPage(ctx, pageSize, token, func(q *tenantsdb.Queries, after *string, size int32) ([]tenantsdb.TenantsTenant, error) {
		return q.ListTenants(ctx, tenantsdb.ListTenantsParams{AfterSlug: after, PageSize: size})
	})
}

// tenantPage reads one page of tenants (keyset by slug; the page token is
// the last slug) and their domains in one registry transaction; fetch
// picks the tenants (all, or those matching a search).
func (s *Service) tenantPage(ctx context.Context, pageSize int32, token string,
	fetch func(q *tenantsdb.Queries, after *string, size int32) ([]tenantsdb.TenantsTenant, error)) ([]*tenantsv1.Tenant, string, error) {
	if pageSize <= 0 || pageSize > 500 {
		pageSize = 100
	}
	var after *string
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", apperr.Invalid("page_token", "invalid_page_token", "malformed page token")
		}
		s := string(b)
		after = &s
	}
	var out []*tenantsv1.Tenant
	err := pgstore.InRegistry(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		rows, err := fetch(q, after, pageSize)
		if err != nil {
			return err
		}
		ids := make([]uuid.UUID, len(rows))
		for i, r := range rows {
			ids[i] = r.TenantID
		}
		domains, err := q.ListDomainsForTenants(ctx, ids)
		if err != nil {
			return err
		}
		byTenant := map[uuid.UUID][]tenantsdb.TenantsDomain{}
		for _, d := range domains {
			byTenant[d.TenantID] = append(byTenant[d.TenantID], d)
		}
		for _, r := range rows {
			out = append(out, toProto(r, byTenant[r.TenantID]))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if int32(len(out)) == pageSize {
		next = base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].Slug))
	}
	return out, next, nil
}

func (s *Service) setStatus(ctx context.Context, ref string, status tenantsv1.TenantStatus) (*tenantsv1.Tenant, error) {
	var st string
	switch status {
	case tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE:
		st = "active"
	case tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED:
		st = "suspended"
	default:
		return nil, apperr.Invalid("status", "invalid_status", "status must be ACTIVE or SUSPENDED")
	}
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).SetTenantStatus(ctx, tenantsdb.SetTenantStatusParams{TenantID: id, Status: st})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.loadTenant(ctx, id)
}

// setName renames a tenant; the name has the same bounds as at creation.
// The slug and domains do not change.
func (s *Service) setName(ctx context.Context, ref, name string) (*tenantsv1.Tenant, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, apperr.Invalid("name", "invalid_name", "name is required (1 to 200 characters)")
	}
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).SetTenantName(ctx, tenantsdb.SetTenantNameParams{TenantID: id, Name: name})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.loadTenant(ctx, id)
}

func (s *Service) addDomain(ctx context.Context, ref, domain string, primary bool) (*tenantsv1.Tenant, error) {
	ds, err := normalizeDomains([]string{domain})
	if err != nil {
		return nil, apperr.Invalid("domain", "invalid_domain", "%s", apperr.As(err).Message)
	}
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		if primary {
			if err := q.ClearPrimaryDomain(ctx, id); err != nil {
				return err
			}
		}
		if err := q.InsertDomain(ctx, tenantsdb.InsertDomainParams{TenantID: id, Domain: ds[0], IsPrimary: primary}); err != nil {
			return err
		}
		return q.PromoteOldestDomain(ctx, id)
	})
	if c := constraint(err); c == "domains_domain_key" || c == "domains_pkey" {
		return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_domain", "domain %s is already registered to a tenant", ds[0])
	}
	if err != nil {
		return nil, err
	}
	return s.loadTenant(ctx, id)
}

func (s *Service) removeDomain(ctx context.Context, ref, domain string) (*tenantsv1.Tenant, error) {
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	d := hostname.Normalize(domain)
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		n, err := q.CountDomains(ctx, id)
		if err != nil {
			return err
		}
		deleted, err := q.DeleteDomain(ctx, tenantsdb.DeleteDomainParams{TenantID: id, Domain: d})
		if err != nil {
			return err
		}
		if deleted == 0 {
			return apperr.NotFound("domain_not_found", "tenant has no domain %s", d)
		}
		if n <= 1 {
			return apperr.New(apperr.KindFailedPrecondition, "last_domain", "cannot remove the tenant's only domain; add another first")
		}
		return q.PromoteOldestDomain(ctx, id)
	})
	if err != nil {
		return nil, err
	}
	return s.loadTenant(ctx, id)
}

// resolveHost is the edge's lookup: Host → tenant.
func (s *Service) resolveHost(ctx context.Context, host string) (*tenantsv1.Tenant, error) {
	h := hostname.Normalize(host)
	var row tenantsdb.TenantsTenant
	err := pgstore.InRegistry(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		row, err = tenantsdb.New(tx).GetTenantByDomain(ctx, h)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("unknown_host", "no merchant at %s", h)
	}
	if err != nil {
		return nil, err
	}
	return s.loadTenant(ctx, row.TenantID)
}

func (s *Service) discovery(ctx context.Context, tenantID string) (*tenantsv1.GetDiscoveryResponse, error) {
	id, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, apperr.Invalid("tenant_id", "invalid_tenant_id", "tenant_id must be a UUID")
	}
	ctx = tenancy.With(ctx, id)
	out := &tenantsv1.GetDiscoveryResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		row, err := q.GetTenantByID(ctx, id)
		if err != nil {
			return err
		}
		domains, err := q.ListDomains(ctx, id)
		if err != nil {
			return err
		}
		out.Tenant = toProto(row, domains)
		handlers, err := q.ListPaymentHandlers(ctx, id)
		if err != nil {
			return err
		}
		for _, h := range handlers {
			out.PaymentHandlers = append(out.PaymentHandlers, handlerToProto(h))
		}
		keys, err := q.ListPublishedSigningKeys(ctx, id)
		if err != nil {
			return err
		}
		for _, k := range keys {
			out.SigningKeysJson = append(out.SigningKeysJson, string(k.PublicJwk))
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("tenant_not_found", "no tenant %s", id)
	}
	return out, err
}

// API keys.

const apiKeyPrefix = "bcp_sk_"

func (s *Service) createAPIKey(ctx context.Context, in *tenantsv1.CreateAPIKeyRequest) (*tenantsv1.APIKey, string, error) {
	id, err := s.resolveRef(ctx, in.GetTenant())
	if err != nil {
		return nil, "", err
	}
	t, err := s.loadTenant(ctx, id)
	if err != nil {
		return nil, "", err
	}
	profile := strings.TrimSpace(in.GetAgentProfileUrl())
	if msg := checkProfileURL(profile, t.Environment == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT); msg != "" {
		return nil, "", apperr.Invalid("agent_profile_url", "invalid_profile_url", "%s", msg)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	secret := apiKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	hash := HashAPIKey(secret)
	ctx = tenancy.With(ctx, id)
	var row tenantsdb.TenantsApiKey
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		row, err = tenantsdb.New(tx).InsertAPIKey(ctx, tenantsdb.InsertAPIKeyParams{
			TenantID: id, ID: ids.New("key"), KeyHash: hash[:], DisplayPrefix: secret[:len(apiKeyPrefix)+6],
			AgentProfileUrl: profile, Label: strings.TrimSpace(in.GetLabel()),
		})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return apiKeyToProto(row), secret, nil
}

// HashAPIKey is how keys are stored and looked up.
func HashAPIKey(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// checkProfileURL accepts absolute https URLs (http only for development
// tenants, whose agents run locally).
func checkProfileURL(raw string, dev bool) string {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "agent profile URL must be an absolute URL"
	}
	if u.Scheme != "https" && !(dev && u.Scheme == "http") {
		return "agent profile URL must use https"
	}
	if u.User != nil || u.Fragment != "" {
		return "agent profile URL must not carry credentials or a fragment"
	}
	return ""
}

func (s *Service) revokeAPIKey(ctx context.Context, ref, keyID string) (*tenantsv1.APIKey, error) {
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var row tenantsdb.TenantsApiKey
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		row, err = tenantsdb.New(tx).RevokeAPIKey(ctx, tenantsdb.RevokeAPIKeyParams{TenantID: id, ID: keyID})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("api_key_not_found", "tenant has no API key %q", keyID)
	}
	if err != nil {
		return nil, err
	}
	return apiKeyToProto(row), nil
}

func (s *Service) listAPIKeys(ctx context.Context, ref string) ([]*tenantsv1.APIKey, error) {
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var out []*tenantsv1.APIKey
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tenantsdb.New(tx).ListAPIKeys(ctx, id)
		for _, r := range rows {
			out = append(out, apiKeyToProto(r))
		}
		return err
	})
	return out, err
}

// Payment handlers.

var (
	handlerID     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	reverseDomain = regexp.MustCompile(`^[a-z](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?)+$`)
	datePattern   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// handlerFields are a handler's stored values, defaults filled in.
type handlerFields struct {
	version, instruments, config, env string
	// connection is the secrets' Summary when secrets are sent.
	connection []byte
}

// handlerViolations checks a handler as sent (and its secrets): every rule
// broken, and the values to store.
func handlerViolations(h *tenantsv1.PaymentHandler, secrets string) (handlerFields, apperr.Violations) {
	var v apperr.Violations
	if !handlerID.MatchString(h.GetId()) {
		v.Add(apperr.Invalid("handler.id", "invalid_handler_id", "handler id must be 1-64 letters, digits, '_', '.', '-'"))
	}
	if !reverseDomain.MatchString(h.GetName()) {
		v.Add(apperr.Invalid("handler.name", "invalid_handler_name", "handler name must be a reverse-domain name such as br.dev.bcp.pix"))
	}
	f := handlerFields{version: h.GetVersion(), instruments: h.GetAvailableInstrumentsJson(), config: h.GetConfigJson(), env: h.GetEnvironment()}
	if f.version == "" {
		f.version = bcpnames.Version
	}
	if !datePattern.MatchString(f.version) {
		v.Add(apperr.Invalid("handler.version", "invalid_version", "version must be YYYY-MM-DD"))
	}
	if f.instruments == "" {
		f.instruments = "[]"
	}
	v.Add(checkInstruments(f.instruments))
	if f.config == "" {
		f.config = "{}"
	}
	if !isJSONObject(f.config) {
		v.Add(apperr.Invalid("handler.config_json", "invalid_config", "config must be a JSON object"))
	}
	if f.env == "" {
		f.env = "sandbox"
	}
	if f.env != "sandbox" && f.env != "production" {
		v.Add(apperr.Invalid("handler.environment", "invalid_environment", "environment must be sandbox or production"))
	}
	for _, u := range []struct{ field, url string }{{"handler.spec", h.GetSpec()}, {"handler.schema", h.GetSchema()}} {
		if u.url == "" {
			continue
		}
		if p, err := url.Parse(u.url); err != nil || p.Scheme != "https" || p.Host == "" {
			v.Add(apperr.Invalid(u.field, "invalid_url", "%s must be an https URL", u.field))
		}
	}
	if secrets != "" {
		if !isJSONObject(secrets) {
			v.Add(apperr.Invalid("secrets_json", "invalid_secrets", "secrets must be a JSON object"))
		} else if sec, err := handlersecrets.Parse([]byte(secrets)); err != nil {
			v.Add(apperr.Invalid("secrets_json", "invalid_secrets", "%v", err))
		} else {
			sum, sv := handlersecrets.Check(sec, time.Now())
			for _, e := range sv {
				v.Add(e)
			}
			if sec.PSP != nil && h.GetName() != bcpnames.PixHandler {
				v.Add(apperr.Invalid("secrets_json.psp", "invalid_secrets", "PSP settings belong to a %s handler", bcpnames.PixHandler))
			}
			if sec.Stripe != nil && h.GetName() == bcpnames.PixHandler {
				v.Add(apperr.Invalid("secrets_json.stripe", "invalid_secrets", "Stripe settings belong to a delegated card handler"))
			}
			f.connection, _ = json.Marshal(sum)
		}
	}
	return f, v
}

// setPaymentHandler stores a handler; validate_only answers its violations
// instead.
func (s *Service) setPaymentHandler(ctx context.Context, in *tenantsv1.SetPaymentHandlerRequest) (*tenantsv1.PaymentHandler, apperr.Violations, error) {
	h := in.GetHandler()
	if h == nil {
		return nil, nil, apperr.Invalid("handler", "handler_required", "handler is required")
	}
	f, v := handlerViolations(h, in.GetSecretsJson())
	if in.GetValidateOnly() {
		return nil, v, nil
	}
	if err := v.First(); err != nil {
		return nil, nil, err
	}
	version, instruments, config, env := f.version, f.instruments, f.config, f.env
	id, err := s.resolveRef(ctx, in.GetTenant())
	if err != nil {
		return nil, nil, err
	}
	var sealed []byte
	if sec := in.GetSecretsJson(); sec != "" {
		if sealed, err = s.sealer.Seal([]byte(sec), handlerSecretsAAD(id, h.GetId())); err != nil {
			return nil, nil, err
		}
	}
	ctx = tenancy.With(ctx, id)
	var row tenantsdb.TenantsPaymentHandler
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		row, err = tenantsdb.New(tx).UpsertPaymentHandler(ctx, tenantsdb.UpsertPaymentHandlerParams{
			TenantID: id, ID: h.GetId(), Name: h.GetName(), Version: version, Spec: h.GetSpec(), SchemaUrl: h.GetSchema(),
			AvailableInstruments: json.RawMessage(instruments), Config: json.RawMessage(config), SealedSecrets: sealed,
			Connection: f.connection, Environment: env, Position: h.GetPosition(),
		})
		if err != nil {
			return err
		}
		// A connection test says nothing about settings it did not see.
		return tenantsdb.New(tx).DeleteHandlerTest(ctx, tenantsdb.DeleteHandlerTestParams{TenantID: id, HandlerID: h.GetId()})
	})
	if err != nil {
		return nil, nil, err
	}
	return handlerToProto(row), nil, nil
}

// paymentHandlerSecrets opens the tenant's handlers' secrets for the
// payments service, by handler id.
func (s *Service) paymentHandlerSecrets(ctx context.Context, tenantID string) (map[string]string, error) {
	if svcauth.Principal(ctx) != "service" {
		return nil, apperr.New(apperr.KindPermissionDenied, "internal_only", "payment handler secrets are for the payments service only")
	}
	id, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, apperr.Invalid("tenant_id", "invalid_tenant_id", "tenant_id must be a UUID")
	}
	ctx = tenancy.With(ctx, id)
	var rows []tenantsdb.ListPaymentHandlerSecretsRow
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		rows, err = tenantsdb.New(tx).ListPaymentHandlerSecrets(ctx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		plain, err := s.sealer.Open(r.SealedSecrets, handlerSecretsAAD(id, r.ID))
		if err != nil {
			return nil, fmt.Errorf("handler %s: %w", r.ID, err)
		}
		out[r.ID] = string(plain)
	}
	return out, nil
}

func handlerSecretsAAD(tenant uuid.UUID, handlerID string) []byte {
	return []byte("bcp/handler-secrets/" + tenant.String() + "/" + handlerID)
}

// checkInstruments validates available_instruments: a non-empty array of
// objects with a string "type" and, optionally, an object "constraints".
func checkInstruments(raw string) error {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return apperr.Invalid("handler.available_instruments_json", "invalid_instruments", "available instruments must be a JSON array of objects")
	}
	if len(list) == 0 {
		return apperr.Invalid("handler.available_instruments_json", "invalid_instruments", "list at least one available instrument, e.g. [{\"type\":\"pix\"}]")
	}
	for i, it := range list {
		var typ string
		if err := json.Unmarshal(it["type"], &typ); err != nil || typ == "" {
			return apperr.Invalid("handler.available_instruments_json["+strconv.Itoa(i)+"].type", "invalid_instruments", "each instrument needs a string type")
		}
		if c, ok := it["constraints"]; ok && !isJSONObject(string(c)) {
			return apperr.Invalid("handler.available_instruments_json["+strconv.Itoa(i)+"].constraints", "invalid_instruments", "constraints must be an object")
		}
	}
	return nil
}

func isJSONObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

func (s *Service) removePaymentHandler(ctx context.Context, ref, handlerID string) error {
	id, err := s.resolveRef(ctx, ref)
	if err != nil {
		return err
	}
	ctx = tenancy.With(ctx, id)
	return pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		n, err := tenantsdb.New(tx).DeletePaymentHandler(ctx, tenantsdb.DeletePaymentHandlerParams{TenantID: id, ID: handlerID})
		if err == nil && n == 0 {
			return apperr.NotFound("handler_not_found", "tenant has no payment handler %q", handlerID)
		}
		return err
	})
}

// Conversions.

func toProto(t tenantsdb.TenantsTenant, domains []tenantsdb.TenantsDomain) *tenantsv1.Tenant {
	out := &tenantsv1.Tenant{
		Id: t.TenantID.String(), Slug: t.Slug, Name: t.Name, Capabilities: t.Capabilities,
		CreateTime: timestamppb.New(t.CreatedAt), AgentAuthPolicy: policyToProto(t.AgentAuthPolicy), SignAllResponses: t.SignAllResponses,
		RequireSignatureCreated: t.RequireSignatureCreated, RequireSignatureNonce: t.RequireSignatureNonce,
	}
	switch t.Status {
	case "active":
		out.Status = tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE
	case "suspended":
		out.Status = tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED
	}
	switch t.Environment {
	case "production":
		out.Environment = tenantsv1.Environment_ENVIRONMENT_PRODUCTION
	case "sandbox":
		out.Environment = tenantsv1.Environment_ENVIRONMENT_SANDBOX
	case "development":
		out.Environment = tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT
	}
	for _, d := range domains {
		out.Domains = append(out.Domains, d.Domain)
		if d.IsPrimary {
			out.PrimaryDomain = d.Domain
		}
	}
	return out
}

func envToDB(e tenantsv1.Environment) (string, error) {
	switch e {
	case tenantsv1.Environment_ENVIRONMENT_UNSPECIFIED, tenantsv1.Environment_ENVIRONMENT_PRODUCTION:
		return "production", nil
	case tenantsv1.Environment_ENVIRONMENT_SANDBOX:
		return "sandbox", nil
	case tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT:
		return "development", nil
	}
	return "", apperr.Invalid("environment", "invalid_environment", "unknown environment %v", e)
}

func apiKeyToProto(k tenantsdb.TenantsApiKey) *tenantsv1.APIKey {
	out := &tenantsv1.APIKey{
		Id: k.ID, TenantId: k.TenantID.String(), DisplayPrefix: k.DisplayPrefix, AgentProfileUrl: k.AgentProfileUrl,
		Label: k.Label, CreateTime: timestamppb.New(k.CreatedAt),
	}
	if k.RevokedAt != nil {
		out.RevokeTime = timestamppb.New(*k.RevokedAt)
	}
	return out
}

func handlerToProto(h tenantsdb.TenantsPaymentHandler) *tenantsv1.PaymentHandler {
	return &tenantsv1.PaymentHandler{
		Id: h.ID, Name: h.Name, Version: h.Version, Spec: h.Spec, Schema: h.SchemaUrl,
		AvailableInstrumentsJson: compactJSON(h.AvailableInstruments), ConfigJson: compactJSON(h.Config),
		Environment: h.Environment, HasSecrets: len(h.SealedSecrets) > 0, Position: h.Position, ConnectionJson: compactJSON(h.Connection),
	}
}

// compactJSON renders stored jsonb (which PostgreSQL re-spaces) compactly.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
