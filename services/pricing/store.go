package pricing

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/tenantcache"
	"github.com/bcpdev/bcp/services/pricing/pricingdb"
)

// store is the pricing schema, always read and written in the context
// tenant's scope through pgstore.InTenant. cache holds each tenant's quote
// configuration; every configuration write goes through inTenantWrite.
type store struct {
	pool  *pgxpool.Pool
	cache *tenantcache.Cache[*tenantConfig]
}

// inTenant runs fn with the sqlc queries in a tenant transaction.
func (s store) inTenant(ctx context.Context, fn func(q *pricingdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error { return fn(pricingdb.New(tx), tid) })
}

func notFound(what string) error {
	return apperr.NotFound("not_found", "%s not found", what)
}

// quoteConfig loads what a quote needs: active rates and pickup locations
// when fulfillment is negotiated, and the active discounts it may apply
// (automatic ones and those named by its codes) with their usage when
// discounts are.
func (s store) quoteConfig(ctx context.Context, req Request) (Config, error) {
	var cfg Config
	if !req.Fulfillment && !req.Discounts {
		return cfg, nil
	}
	tid, err := tenancy.From(ctx)
	if err != nil {
		return cfg, err
	}
	tc, err := s.config(ctx, tid)
	if err != nil {
		return cfg, err
	}
	if req.Fulfillment {
		// Shared with other quotes: the engine only reads them.
		cfg.Rates, cfg.Pickups = tc.rates, tc.pickups
	}
	if !req.Discounts {
		return cfg, nil
	}
	codes := req.Codes()
	limited := false
	for _, d := range tc.discounts {
		if d.Automatic || slices.Contains(codes, strings.ToLower(d.Code)) {
			cfg.Discounts = append(cfg.Discounts, d)
			limited = limited || d.UsageLimit > 0 || d.UsageLimitPerBuyer > 0
		}
	}
	if limited {
		// Usage counts change with every purchase: read them now.
		cfg.Discounts, err = s.quoteDiscounts(ctx, req, codes)
	}
	return cfg, err
}

// quoteDiscounts reads the discounts a quote may apply with their current
// usage (other checkouts' redemptions, the buyer's).
func (s store) quoteDiscounts(ctx context.Context, req Request, codes []string) ([]Discount, error) {
	if codes == nil {
		codes = []string{}
	}
	var out []Discount
	err := s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		rows, err := q.QuoteDiscounts(ctx, pricingdb.QuoteDiscountsParams{
			TenantID: tid, CheckoutID: req.Checkout.ID, BuyerEmail: req.BuyerEmail(), Codes: codes,
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			d := discountFromRow(r.PricingDiscount)
			d.TimesUsed, d.BuyerUsed = r.TimesUsed, r.BuyerUsed
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// --- shipping rates ---

func (s store) setRate(ctx context.Context, r ShippingRate) (ShippingRate, error) {
	var out ShippingRate
	err := s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var row pricingdb.PricingShippingRate
		var err error
		if r.ID == "" {
			row, err = q.InsertShippingRate(ctx, pricingdb.InsertShippingRateParams{
				TenantID: tid, ID: ids.New("shr"), Title: r.Title, Description: r.Description, Carrier: r.Carrier,
				Regions: nonNil(r.Regions), Price: r.Price, FreeAbove: r.FreeAbove, MinSubtotal: r.MinSubtotal,
				MaxSubtotal: r.MaxSubtotal, MinDays: r.MinDays, MaxDays: r.MaxDays, Active: r.Active, Position: r.Position,
			})
		} else {
			row, err = q.UpdateShippingRate(ctx, pricingdb.UpdateShippingRateParams{
				TenantID: tid, ID: r.ID, Title: r.Title, Description: r.Description, Carrier: r.Carrier,
				Regions: nonNil(r.Regions), Price: r.Price, FreeAbove: r.FreeAbove, MinSubtotal: r.MinSubtotal,
				MaxSubtotal: r.MaxSubtotal, MinDays: r.MinDays, MaxDays: r.MaxDays, Active: r.Active, Position: r.Position,
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("shipping rate")
			}
		}
		if err != nil {
			return err
		}
		if err := q.DeleteShippingRateCeps(ctx, pricingdb.DeleteShippingRateCepsParams{TenantID: tid, RateID: row.ID}); err != nil {
			return err
		}
		for i, cr := range r.CEPRanges {
			if err := q.InsertShippingRateCep(ctx, pricingdb.InsertShippingRateCepParams{
				TenantID: tid, RateID: row.ID, Position: int32(i), CepFrom: cr.From, CepTo: cr.To,
			}); err != nil {
				return err
			}
		}
		out = rateFromRow(row, slices.Clone(r.CEPRanges))
		return nil
	})
	return out, err
}

func (s store) listRates(ctx context.Context) ([]ShippingRate, error) {
	var out []ShippingRate
	err := s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var err error
		out, err = listRates(ctx, q, tid, false)
		return err
	})
	return out, err
}

func listRates(ctx context.Context, q *pricingdb.Queries, tid uuid.UUID, onlyActive bool) ([]ShippingRate, error) {
	rows, err := q.ListShippingRates(ctx, pricingdb.ListShippingRatesParams{TenantID: tid, OnlyActive: onlyActive})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	rateIDs := make([]string, len(rows))
	for i, r := range rows {
		rateIDs[i] = r.ID
	}
	ceps, err := q.ListShippingRateCeps(ctx, pricingdb.ListShippingRateCepsParams{TenantID: tid, RateIds: rateIDs})
	if err != nil {
		return nil, err
	}
	byRate := map[string][]CEPRange{}
	for _, c := range ceps {
		byRate[c.RateID] = append(byRate[c.RateID], CEPRange{From: c.CepFrom, To: c.CepTo})
	}
	out := make([]ShippingRate, len(rows))
	for i, r := range rows {
		out[i] = rateFromRow(r, byRate[r.ID])
	}
	return out, nil
}

func rateFromRow(r pricingdb.PricingShippingRate, ceps []CEPRange) ShippingRate {
	return ShippingRate{
		ID: r.ID, Title: r.Title, Description: r.Description, Carrier: r.Carrier, Regions: r.Regions, CEPRanges: ceps,
		Price: r.Price, FreeAbove: r.FreeAbove, MinSubtotal: r.MinSubtotal, MaxSubtotal: r.MaxSubtotal,
		MinDays: r.MinDays, MaxDays: r.MaxDays, Active: r.Active, Position: r.Position,
	}
}

func (s store) deleteRate(ctx context.Context, id string) error {
	return s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		n, err := q.DeleteShippingRate(ctx, pricingdb.DeleteShippingRateParams{TenantID: tid, ID: id})
		if err == nil && n == 0 {
			return notFound("shipping rate")
		}
		return err
	})
}

// --- pickup locations ---

func (s store) setPickup(ctx context.Context, p PickupLocation) (PickupLocation, error) {
	var out PickupLocation
	err := s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var row pricingdb.PricingPickupLocation
		var err error
		if p.ID == "" {
			row, err = q.InsertPickupLocation(ctx, pricingdb.InsertPickupLocationParams{
				TenantID: tid, ID: ids.New("pkp"), Name: p.Name, StreetAddress: p.StreetAddress, ExtendedAddress: p.ExtendedAddress,
				AddressLocality: p.AddressLocality, AddressRegion: p.AddressRegion, PostalCode: p.PostalCode,
				AddressCountry: p.AddressCountry, Price: p.Price, Description: p.Description, Active: p.Active, Position: p.Position,
			})
		} else {
			row, err = q.UpdatePickupLocation(ctx, pricingdb.UpdatePickupLocationParams{
				TenantID: tid, ID: p.ID, Name: p.Name, StreetAddress: p.StreetAddress, ExtendedAddress: p.ExtendedAddress,
				AddressLocality: p.AddressLocality, AddressRegion: p.AddressRegion, PostalCode: p.PostalCode,
				AddressCountry: p.AddressCountry, Price: p.Price, Description: p.Description, Active: p.Active, Position: p.Position,
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("pickup location")
			}
		}
		if err != nil {
			return err
		}
		out = pickupFromRow(row)
		return nil
	})
	return out, err
}

func (s store) listPickups(ctx context.Context) ([]PickupLocation, error) {
	var out []PickupLocation
	err := s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var err error
		out, err = listPickups(ctx, q, tid, false)
		return err
	})
	return out, err
}

func listPickups(ctx context.Context, q *pricingdb.Queries, tid uuid.UUID, onlyActive bool) ([]PickupLocation, error) {
	rows, err := q.ListPickupLocations(ctx, pricingdb.ListPickupLocationsParams{TenantID: tid, OnlyActive: onlyActive})
	if err != nil {
		return nil, err
	}
	out := make([]PickupLocation, len(rows))
	for i, r := range rows {
		out[i] = pickupFromRow(r)
	}
	return out, nil
}

func pickupFromRow(r pricingdb.PricingPickupLocation) PickupLocation {
	return PickupLocation{
		ID: r.ID, Name: r.Name, StreetAddress: r.StreetAddress, ExtendedAddress: r.ExtendedAddress,
		AddressLocality: r.AddressLocality, AddressRegion: r.AddressRegion, PostalCode: r.PostalCode,
		AddressCountry: r.AddressCountry, Price: r.Price, Description: r.Description, Active: r.Active, Position: r.Position,
	}
}

func (s store) deletePickup(ctx context.Context, id string) error {
	return s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		n, err := q.DeletePickupLocation(ctx, pricingdb.DeletePickupLocationParams{TenantID: tid, ID: id})
		if err == nil && n == 0 {
			return notFound("pickup location")
		}
		return err
	})
}

// --- discounts ---

func (s store) setDiscount(ctx context.Context, d Discount) (Discount, error) {
	var out Discount
	err := s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var row pricingdb.PricingDiscount
		var err error
		if d.ID == "" {
			row, err = q.InsertDiscount(ctx, pricingdb.InsertDiscountParams{
				TenantID: tid, ID: ids.New("dsc"), Code: d.Code, Title: d.Title, Kind: d.Kind, Value: d.Value,
				Automatic: d.Automatic, MinSubtotal: d.MinSubtotal, StartsAt: d.StartsAt, EndsAt: d.EndsAt,
				UsageLimit: d.UsageLimit, UsageLimitPerBuyer: d.UsageLimitPerBuyer, Priority: d.Priority,
				Combinable: d.Combinable, Active: d.Active,
			})
		} else {
			row, err = q.UpdateDiscount(ctx, pricingdb.UpdateDiscountParams{
				TenantID: tid, ID: d.ID, Code: d.Code, Title: d.Title, Kind: d.Kind, Value: d.Value,
				Automatic: d.Automatic, MinSubtotal: d.MinSubtotal, StartsAt: d.StartsAt, EndsAt: d.EndsAt,
				UsageLimit: d.UsageLimit, UsageLimitPerBuyer: d.UsageLimitPerBuyer, Priority: d.Priority,
				Combinable: d.Combinable, Active: d.Active,
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("discount")
			}
		}
		if err != nil {
			if apperr.IsKind(err, apperr.KindAlreadyExists) {
				// The only unique key a new or edited discount can hit is
				// its code (case-insensitively).
				return &apperr.Error{Kind: apperr.KindAlreadyExists, Code: "duplicate_code", Field: "discount.code",
					Message: "another discount already uses the code " + d.Code, Err: err}
			}
			return err
		}
		out = discountFromRow(row)
		out.TimesUsed, err = q.GetDiscountUsage(ctx, pricingdb.GetDiscountUsageParams{TenantID: tid, DiscountID: row.ID})
		return err
	})
	return out, err
}

func (s store) listDiscounts(ctx context.Context) ([]Discount, error) {
	var out []Discount
	err := s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		rows, err := q.ListDiscounts(ctx, tid)
		if err != nil {
			return err
		}
		for _, r := range rows {
			d := discountFromRow(r.PricingDiscount)
			d.TimesUsed = r.TimesUsed
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

func discountFromRow(r pricingdb.PricingDiscount) Discount {
	return Discount{
		ID: r.ID, Code: r.Code, Title: r.Title, Kind: r.Kind, Value: r.Value, Automatic: r.Automatic,
		MinSubtotal: r.MinSubtotal, StartsAt: r.StartsAt, EndsAt: r.EndsAt, UsageLimit: r.UsageLimit,
		UsageLimitPerBuyer: r.UsageLimitPerBuyer, Priority: r.Priority, Combinable: r.Combinable, Active: r.Active,
	}
}

func (s store) deleteDiscount(ctx context.Context, id string) error {
	return s.inTenantWrite(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		n, err := q.DeleteDiscount(ctx, pricingdb.DeleteDiscountParams{TenantID: tid, ID: id})
		if err == nil && n == 0 {
			return notFound("discount")
		}
		return err
	})
}

// redeem records that checkoutID used the referenced discounts (ids or
// codes), all or nothing: in one statement when none has a usage limit,
// else in one transaction. A discount already redeemed by this checkout
// is skipped, so retries are harmless. Limits are enforced under a row
// lock: if another checkout took the last use since the quote, nothing is
// recorded and the caller gets FailedPrecondition, to re-price.
func (s store) redeem(ctx context.Context, checkoutID, email string, refs []string) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	// Discounts without usage limits need no lock: one statement records
	// them. It writes nothing when a ref names no discount or a discount
	// has a limit; the transaction below then decides.
	// Its refs array would make PostgreSQL plan it on every call (0.4 ms,
	// twice its execution): see SingleGenericPlan.
	var rows []pricingdb.RedeemUnlimitedRow
	err = pgstore.SingleGenericPlan(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		rows, err = pricingdb.New(q).RedeemUnlimited(ctx, pricingdb.RedeemUnlimitedParams{
			TenantID: tid, Refs: refs, CheckoutID: checkoutID, BuyerEmail: email,
		})
		return err
	})
	if err != nil {
		return err
	}
	limited := false
	for _, r := range rows {
		if r.DiscountID == "" {
			return apperr.NotFound("discount_not_found", "no discount with id or code %q", r.Ref)
		}
		limited = limited || r.Limited
	}
	if !limited {
		return nil
	}
	return s.redeemLimited(ctx, checkoutID, email, refs)
}

// redeemLimited redeems under each discount's row lock, so that usage
// limits hold against concurrent checkouts.
func (s store) redeemLimited(ctx context.Context, checkoutID, email string, refs []string) error {
	return s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
		var discountIDs []string
		for _, ref := range refs {
			id, err := q.ResolveDiscountRef(ctx, pricingdb.ResolveDiscountRefParams{TenantID: tid, Ref: ref})
			if errors.Is(err, pgx.ErrNoRows) {
				return apperr.NotFound("discount_not_found", "no discount with id or code %q", ref)
			}
			if err != nil {
				return err
			}
			if !slices.Contains(discountIDs, id) {
				discountIDs = append(discountIDs, id)
			}
		}
		// Locks in id order, so concurrent redemptions cannot deadlock.
		slices.Sort(discountIDs)
		for _, id := range discountIDs {
			d, err := q.LockDiscount(ctx, pricingdb.LockDiscountParams{TenantID: tid, ID: id})
			if err != nil {
				return err
			}
			done, err := q.RedemptionExists(ctx, pricingdb.RedemptionExistsParams{TenantID: tid, DiscountID: id, CheckoutID: checkoutID})
			if err != nil {
				return err
			}
			if done {
				continue
			}
			if d.UsageLimit > 0 {
				used, err := q.GetDiscountUsage(ctx, pricingdb.GetDiscountUsageParams{TenantID: tid, DiscountID: id})
				if err != nil {
					return err
				}
				if used >= d.UsageLimit {
					return apperr.New(apperr.KindFailedPrecondition, "discount_usage_limit_reached", "discount %s has reached its usage limit", id)
				}
			}
			if d.UsageLimitPerBuyer > 0 {
				if email == "" {
					return apperr.New(apperr.KindFailedPrecondition, "discount_buyer_required", "discount %s is limited per buyer and needs the buyer's e-mail", id)
				}
				used, err := q.CountBuyerRedemptions(ctx, pricingdb.CountBuyerRedemptionsParams{TenantID: tid, DiscountID: id, BuyerEmail: email})
				if err != nil {
					return err
				}
				if used >= d.UsageLimitPerBuyer {
					return apperr.New(apperr.KindFailedPrecondition, "discount_buyer_limit_reached", "the buyer has used discount %s the maximum number of times", id)
				}
			}
			if err := q.InsertRedemption(ctx, pricingdb.InsertRedemptionParams{
				TenantID: tid, DiscountID: id, CheckoutID: checkoutID, BuyerEmail: email,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// normalizeEmail is how buyer e-mails are stored and compared.
func normalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }
