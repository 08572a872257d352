package pricing

import (
	"context"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenantcache"
	"github.com/bcpdev/bcp/internal/wire"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
)

// Service implements pricingv1connect.PricingServiceHandler: it maps
// protos to the domain and back; the rules live in the domain files and
// the SQL in store.go.
type Service struct {
	pool  *pgxpool.Pool
	store store
	now   func() time.Time
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, store: store{pool: pool, cache: tenantcache.New[*tenantConfig](tenantcache.Options{})}, now: time.Now}
}

var _ pricingv1connect.PricingServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == pricingv1connect.PricingServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[pricingv1.PingRequest]) (*connect.Response[pricingv1.PingResponse], error) {
	return connect.NewResponse(&pricingv1.PingResponse{Service: "pricing", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}

// Quote prices a checkout against the tenant's configuration. It reads
// the configuration in one transaction and writes nothing.
func (s *Service) Quote(ctx context.Context, req *connect.Request[pricingv1.QuoteRequest]) (*connect.Response[pricingv1.QuoteResponse], error) {
	at := s.now()
	if ts := req.Msg.GetAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, apperr.Invalid("at", "invalid_time", "at is not a valid timestamp")
		}
		at = ts.AsTime()
	}
	r := NewRequest(req.Msg, at)
	cfg, err := s.store.quoteConfig(ctx, r)
	if err != nil {
		return nil, err
	}
	out, automatic, err := priceWithAutomatic(r, cfg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(wire.QuoteResponse(r.Checkout, out, automatic)), nil
}

// SetShippingRate creates a rate (no id) or replaces one.
func (s *Service) SetShippingRate(ctx context.Context, req *connect.Request[pricingv1.SetShippingRateRequest]) (*connect.Response[pricingv1.SetShippingRateResponse], error) {
	p := req.Msg.GetRate()
	if p == nil {
		return nil, apperr.Invalid("rate", "rate_required", "rate is required")
	}
	r := ShippingRate{
		ID: strings.TrimSpace(p.GetId()), Title: p.GetTitle(), Description: p.GetDescription(), Carrier: p.GetCarrier(),
		Regions: p.GetRegions(), Price: p.GetPrice(), FreeAbove: p.GetFreeAbove(), MinSubtotal: p.GetMinSubtotal(),
		MaxSubtotal: p.GetMaxSubtotal(), MinDays: p.GetMinDays(), MaxDays: p.GetMaxDays(), Active: p.GetActive(),
		Position: p.GetPosition(),
	}
	for _, c := range p.GetCepRanges() {
		r.CEPRanges = append(r.CEPRanges, CEPRange{From: c.GetFrom(), To: c.GetTo()})
	}
	if req.Msg.GetValidateOnly() {
		return connect.NewResponse(&pricingv1.SetShippingRateResponse{Violations: violationsToProto(rateViolations(&r))}), nil
	}
	if err := validateRate(&r); err != nil {
		return nil, err
	}
	out, err := s.store.setRate(ctx, r)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.SetShippingRateResponse{Rate: rateToProto(out)}), nil
}

// ListShippingRates lists every rate, active or not, by position.
func (s *Service) ListShippingRates(ctx context.Context, _ *connect.Request[pricingv1.ListShippingRatesRequest]) (*connect.Response[pricingv1.ListShippingRatesResponse], error) {
	rates, err := s.store.listRates(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pricingv1.ListShippingRatesResponse{}
	for _, r := range rates {
		resp.Rates = append(resp.Rates, rateToProto(r))
	}
	return connect.NewResponse(resp), nil
}

// DeleteShippingRate deletes a rate.
func (s *Service) DeleteShippingRate(ctx context.Context, req *connect.Request[pricingv1.DeleteShippingRateRequest]) (*connect.Response[pricingv1.DeleteShippingRateResponse], error) {
	if req.Msg.GetId() == "" {
		return nil, apperr.Invalid("id", "id_required", "id is required")
	}
	if err := s.store.deleteRate(ctx, req.Msg.GetId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.DeleteShippingRateResponse{}), nil
}

func rateToProto(r ShippingRate) *pricingv1.ShippingRate {
	out := &pricingv1.ShippingRate{
		Id: r.ID, Title: r.Title, Description: r.Description, Carrier: r.Carrier, Regions: r.Regions,
		Price: r.Price, FreeAbove: r.FreeAbove, MinSubtotal: r.MinSubtotal, MaxSubtotal: r.MaxSubtotal,
		MinDays: r.MinDays, MaxDays: r.MaxDays, Active: r.Active, Position: r.Position,
	}
	for _, c := range r.CEPRanges {
		out.CepRanges = append(out.CepRanges, &pricingv1.CepRange{From: c.From, To: c.To})
	}
	return out
}

// SetPickupLocation creates a location (no id) or replaces one.
func (s *Service) SetPickupLocation(ctx context.Context, req *connect.Request[pricingv1.SetPickupLocationRequest]) (*connect.Response[pricingv1.SetPickupLocationResponse], error) {
	p := req.Msg.GetLocation()
	if p == nil {
		return nil, apperr.Invalid("location", "location_required", "location is required")
	}
	l := PickupLocation{
		ID: strings.TrimSpace(p.GetId()), Name: p.GetName(), StreetAddress: p.GetStreetAddress(), ExtendedAddress: p.GetExtendedAddress(),
		AddressLocality: p.GetAddressLocality(), AddressRegion: p.GetAddressRegion(), PostalCode: p.GetPostalCode(),
		AddressCountry: p.GetAddressCountry(), Price: p.GetPrice(), Description: p.GetDescription(), Active: p.GetActive(),
		Position: p.GetPosition(),
	}
	if req.Msg.GetValidateOnly() {
		return connect.NewResponse(&pricingv1.SetPickupLocationResponse{Violations: violationsToProto(pickupViolations(&l))}), nil
	}
	if err := validatePickup(&l); err != nil {
		return nil, err
	}
	out, err := s.store.setPickup(ctx, l)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.SetPickupLocationResponse{Location: pickupToProto(out)}), nil
}

// ListPickupLocations lists every location, active or not, by position.
func (s *Service) ListPickupLocations(ctx context.Context, _ *connect.Request[pricingv1.ListPickupLocationsRequest]) (*connect.Response[pricingv1.ListPickupLocationsResponse], error) {
	locs, err := s.store.listPickups(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pricingv1.ListPickupLocationsResponse{}
	for _, l := range locs {
		resp.Locations = append(resp.Locations, pickupToProto(l))
	}
	return connect.NewResponse(resp), nil
}

// DeletePickupLocation deletes a location.
func (s *Service) DeletePickupLocation(ctx context.Context, req *connect.Request[pricingv1.DeletePickupLocationRequest]) (*connect.Response[pricingv1.DeletePickupLocationResponse], error) {
	if req.Msg.GetId() == "" {
		return nil, apperr.Invalid("id", "id_required", "id is required")
	}
	if err := s.store.deletePickup(ctx, req.Msg.GetId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.DeletePickupLocationResponse{}), nil
}

func pickupToProto(l PickupLocation) *pricingv1.PickupLocation {
	return &pricingv1.PickupLocation{
		Id: l.ID, Name: l.Name, StreetAddress: l.StreetAddress, ExtendedAddress: l.ExtendedAddress,
		AddressLocality: l.AddressLocality, AddressRegion: l.AddressRegion, PostalCode: l.PostalCode,
		AddressCountry: l.AddressCountry, Price: l.Price, Description: l.Description, Active: l.Active, Position: l.Position,
	}
}

var kindFromProto = map[pricingv1.Discount_Kind]string{
	pricingv1.Discount_KIND_PERCENT:       KindPercent,
	pricingv1.Discount_KIND_FIXED:         KindFixed,
	pricingv1.Discount_KIND_FREE_SHIPPING: KindFreeShipping,
}

// SetDiscount creates a discount (no id) or replaces one. times_used is
// read-only and ignored.
func (s *Service) SetDiscount(ctx context.Context, req *connect.Request[pricingv1.SetDiscountRequest]) (*connect.Response[pricingv1.SetDiscountResponse], error) {
	p := req.Msg.GetDiscount()
	if p == nil {
		return nil, apperr.Invalid("discount", "discount_required", "discount is required")
	}
	d := Discount{
		ID: strings.TrimSpace(p.GetId()), Code: p.GetCode(), Title: p.GetTitle(), Kind: kindFromProto[p.GetKind()],
		Value: p.GetValue(), Automatic: p.GetAutomatic(), MinSubtotal: p.GetMinSubtotal(), UsageLimit: p.GetUsageLimit(),
		UsageLimitPerBuyer: p.GetUsageLimitPerBuyer(), Priority: p.GetPriority(), Combinable: p.GetCombinable(),
		Active: p.GetActive(),
	}
	var v apperr.Violations
	var err error
	d.StartsAt, err = optTime("discount.starts_at", p.GetStartsAt())
	v.Add(err)
	d.EndsAt, err = optTime("discount.ends_at", p.GetEndsAt())
	v.Add(err)
	v = append(v, discountViolations(&d)...)
	if req.Msg.GetValidateOnly() {
		return connect.NewResponse(&pricingv1.SetDiscountResponse{Violations: violationsToProto(v)}), nil
	}
	if err := v.First(); err != nil {
		return nil, err
	}
	out, err := s.store.setDiscount(ctx, d)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.SetDiscountResponse{Discount: discountToProto(out)}), nil
}

func violationsToProto(v apperr.Violations) []*pricingv1.Violation {
	out := make([]*pricingv1.Violation, len(v))
	for i, e := range v {
		out[i] = &pricingv1.Violation{Field: e.Field, Code: e.Code, Message: e.Message}
	}
	return out
}

func optTime(field string, ts *timestamppb.Timestamp) (*time.Time, error) {
	if ts == nil {
		return nil, nil
	}
	if err := ts.CheckValid(); err != nil {
		return nil, apperr.Invalid(field, "invalid_time", "%s is not a valid timestamp", field)
	}
	t := ts.AsTime()
	return &t, nil
}

// ListDiscounts lists every discount with its usage, by priority.
func (s *Service) ListDiscounts(ctx context.Context, _ *connect.Request[pricingv1.ListDiscountsRequest]) (*connect.Response[pricingv1.ListDiscountsResponse], error) {
	ds, err := s.store.listDiscounts(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pricingv1.ListDiscountsResponse{}
	for _, d := range ds {
		resp.Discounts = append(resp.Discounts, discountToProto(d))
	}
	return connect.NewResponse(resp), nil
}

// DeleteDiscount deletes a discount and its redemption history.
func (s *Service) DeleteDiscount(ctx context.Context, req *connect.Request[pricingv1.DeleteDiscountRequest]) (*connect.Response[pricingv1.DeleteDiscountResponse], error) {
	if req.Msg.GetId() == "" {
		return nil, apperr.Invalid("id", "id_required", "id is required")
	}
	if err := s.store.deleteDiscount(ctx, req.Msg.GetId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.DeleteDiscountResponse{}), nil
}

func discountToProto(d Discount) *pricingv1.Discount {
	out := &pricingv1.Discount{
		Id: d.ID, Code: d.Code, Title: d.Title, Value: d.Value, Automatic: d.Automatic, MinSubtotal: d.MinSubtotal,
		UsageLimit: d.UsageLimit, UsageLimitPerBuyer: d.UsageLimitPerBuyer, Priority: d.Priority,
		Combinable: d.Combinable, Active: d.Active, TimesUsed: d.TimesUsed,
	}
	for k, v := range kindFromProto {
		if v == d.Kind {
			out.Kind = k
		}
	}
	if d.StartsAt != nil {
		out.StartsAt = timestamppb.New(*d.StartsAt)
	}
	if d.EndsAt != nil {
		out.EndsAt = timestamppb.New(*d.EndsAt)
	}
	return out
}

// RedeemDiscounts records the discounts a completed checkout used.
// Retrying with the same checkout id records nothing new.
func (s *Service) RedeemDiscounts(ctx context.Context, req *connect.Request[pricingv1.RedeemDiscountsRequest]) (*connect.Response[pricingv1.RedeemDiscountsResponse], error) {
	checkoutID := strings.TrimSpace(req.Msg.GetCheckoutId())
	if checkoutID == "" || len(checkoutID) > 100 {
		return nil, apperr.Invalid("checkout_id", "invalid_checkout_id", "checkout_id is required (at most 100 characters)")
	}
	var refs []string
	for i, ref := range req.Msg.GetDiscountIds() {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			return nil, apperr.Invalid("discount_ids", "invalid_discount_id", "discount_ids[%d] is empty", i)
		}
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return connect.NewResponse(&pricingv1.RedeemDiscountsResponse{}), nil
	}
	if err := s.store.redeem(ctx, checkoutID, normalizeEmail(req.Msg.GetBuyerEmail()), refs); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pricingv1.RedeemDiscountsResponse{}), nil
}
