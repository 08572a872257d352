package tenants

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// DefaultCheckoutTTL is the session lifetime when the merchant sets none
// (UCP's default: 6 h); a merchant may set from MinCheckoutTTL to
// MaxCheckoutTTL (seconds).
const (
	DefaultCheckoutTTL = 6 * 60 * 60
	MinCheckoutTTL     = 5 * 60
	MaxCheckoutTTL     = 30 * 24 * 60 * 60
)

// ConsentPurposes are the purposes of the buyer_consent extension
// (2026-04-08 shape).
var ConsentPurposes = []string{"analytics", "preferences", "marketing", "sale_of_data"}

// LinkTypes are the well-known link types.
var LinkTypes = []string{"privacy_policy", "terms_of_service", "refund_policy", "shipping_policy", "faq"}

func (s *Service) GetSettings(ctx context.Context, req *connect.Request[tenantsv1.GetSettingsRequest]) (*connect.Response[tenantsv1.GetSettingsResponse], error) {
	id, err := uuid.Parse(req.Msg.GetTenantId())
	if err != nil {
		return nil, apperr.Invalid("tenant_id", "invalid_tenant_id", "tenant_id must be a UUID")
	}
	set, err := s.loadSettings(tenancy.With(ctx, id), id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetSettingsResponse{Settings: set}), nil
}

func (s *Service) SetSettings(ctx context.Context, req *connect.Request[tenantsv1.SetSettingsRequest]) (*connect.Response[tenantsv1.SetSettingsResponse], error) {
	in := req.Msg.GetSettings()
	if in == nil {
		return nil, apperr.Invalid("settings", "settings_required", "settings are required")
	}
	ttl, v := settingsViolations(in)
	if req.Msg.GetValidateOnly() {
		return connect.NewResponse(&tenantsv1.SetSettingsResponse{Violations: violationsToProto(v)}), nil
	}
	if err := v.First(); err != nil {
		return nil, err
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	links := in.GetLinks()
	if links == nil {
		links = []*tenantsv1.Link{}
	}
	linksJSON, _ := json.Marshal(links) // plain strings
	purposes := in.GetConsentPurposes()
	if purposes == nil {
		purposes = []string{}
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		_, err := q.UpsertSettings(ctx, tenantsdb.UpsertSettingsParams{
			TenantID: id, Links: linksJSON, ConsentPurposes: purposes, CheckoutTtlSeconds: int32(ttl),
		})
		if err != nil {
			return err
		}
		// Absent limits keep the stored ones (see Settings.rate_limits).
		if l := in.GetRateLimits(); l != nil {
			_, err = q.SetRateLimits(ctx, tenantsdb.SetRateLimitsParams{TenantID: id,
				MerchantRatePerSecond: l.GetMerchantRatePerSecond(), MerchantBurst: l.GetMerchantBurst(),
				AgentRatePerSecond: l.GetAgentRatePerSecond(), AgentBurst: l.GetAgentBurst()})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	set, err := s.loadSettings(ctx, id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetSettingsResponse{Settings: set}), nil
}

// settingsViolations checks settings as sent: every rule broken, and the
// checkout lifetime to store (0: the default).
func settingsViolations(in *tenantsv1.Settings) (ttl int64, v apperr.Violations) {
	for i, l := range in.GetLinks() {
		switch {
		case l.GetType() == "":
			v.Add(apperr.Invalid(fieldf("settings.links", i, "type"), "invalid_link", "link type is required"))
		case !slices.Contains(LinkTypes, l.GetType()) && l.GetTitle() == "":
			v.Add(apperr.Invalid(fieldf("settings.links", i, "title"), "invalid_link", "links of a custom type need a title"))
		}
		if u, err := url.Parse(l.GetUrl()); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			v.Add(apperr.Invalid(fieldf("settings.links", i, "url"), "invalid_link", "link url must be an absolute http(s) URL"))
		}
	}
	for i, p := range in.GetConsentPurposes() {
		if !slices.Contains(ConsentPurposes, p) {
			v.Add(apperr.Invalid(fieldf("settings.consent_purposes", i, ""), "invalid_consent_purpose", "unknown consent purpose %q (use %v)", p, ConsentPurposes))
		}
	}
	ttl = in.GetCheckoutTtlSeconds()
	if ttl == 0 {
		ttl = DefaultCheckoutTTL
	}
	if ttl < MinCheckoutTTL || ttl > MaxCheckoutTTL {
		v.Add(apperr.Invalid("settings.checkout_ttl_seconds", "invalid_ttl", "checkout lifetime must be between 5 minutes and 30 days"))
	}
	if l := in.GetRateLimits(); l != nil {
		v = append(v, rateLimitViolations(l)...)
	}
	return ttl, v
}

func violationsToProto(v apperr.Violations) []*tenantsv1.Violation {
	out := make([]*tenantsv1.Violation, len(v))
	for i, e := range v {
		out[i] = &tenantsv1.Violation{Field: e.Field, Code: e.Code, Message: e.Message}
	}
	return out
}

func (s *Service) loadSettings(ctx context.Context, id uuid.UUID) (*tenantsv1.Settings, error) {
	out := &tenantsv1.Settings{CheckoutTtlSeconds: DefaultCheckoutTTL, RateLimits: effectiveRateLimits(0, 0, 0, 0)}
	err := pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		row, err := tenantsdb.New(tx).GetSettings(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(row.Links, &out.Links); err != nil {
			return err
		}
		out.ConsentPurposes = row.ConsentPurposes
		out.CheckoutTtlSeconds = int64(row.CheckoutTtlSeconds)
		out.RateLimits = effectiveRateLimits(row.MerchantRatePerSecond, row.MerchantBurst, row.AgentRatePerSecond, row.AgentBurst)
		return nil
	})
	return out, err
}

func fieldf(base string, i int, member string) string {
	f := base + "[" + strconv.Itoa(i) + "]"
	if member != "" {
		f += "." + member
	}
	return f
}
