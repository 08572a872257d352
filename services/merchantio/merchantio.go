// Package merchantio exports a merchant's configuration as one JSON
// document and imports such a document into a tenant.
//
// The document holds the catalog (products, variants, prices, stock), the
// shipping rates, pickup points, discount codes, automatic discounts and
// the settings (links, consent purposes, checkout lifetime, AP2 mandates);
// an export also lists the AP2 mandates its orders were paid with (digest
// and claims), which import ignores. It carries no
// secrets and no platform ids other than catalog ids (products and
// variants keep theirs, so agents' item ids survive a move); pricing
// entries are matched by their natural key: rates by title, pickup points
// by name, discount codes by code (case-insensitively), automatic
// discounts by title.
//
// Import validates the whole document before changing anything: the JSON
// shape (unknown members are errors) and duplicate keys here; every rule
// of an entry by the service that owns it, which checks without storing:
// rates, pickup points and discounts by pricing (validate_only), settings
// by tenants (validate_only), the catalog by ImportProducts with dry_run.
// Every problem is reported with its JSON path ($.shipping_rates[1].price,
// $.catalog.products[0].variants[2].sku, …) and the owner's code and
// message, and nothing is applied when there is any.
//
// Applying is idempotent: entries equal to what the tenant has are left
// alone, so importing the same document twice changes nothing. Entries the
// tenant has and the document lacks are kept (import never deletes).
//
// Atomicity: the catalog is applied in one transaction (ImportProducts),
// but the catalog, pricing and tenants services own separate schemas and
// expose no cross-service transaction. After full validation the steps run
// in order catalog → shipping rates → pickup points → discounts → settings;
// a failure in the middle (a service unavailable, a concurrent edit making
// a code collide) leaves the earlier steps applied. The report says which
// step failed, and since import is idempotent, running it again once the
// cause is fixed completes it.
package merchantio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Format names the document version.
const Format = "bcp.merchant.v1"

// Document is a merchant's exported configuration.
type Document struct {
	Format             string         `json:"format"`
	Catalog            Catalog        `json:"catalog"`
	ShippingRates      []ShippingRate `json:"shipping_rates"`
	PickupPoints       []PickupPoint  `json:"pickup_points"`
	DiscountCodes      []Discount     `json:"discount_codes"`
	AutomaticDiscounts []Discount     `json:"automatic_discounts"`
	Settings           Settings       `json:"settings"`
	// AP2Mandates lists the orders paid with a verified AP2 checkout
	// mandate, with its digest and claims. Export only: import reads and
	// ignores it (orders are not configuration).
	AP2Mandates []OrderMandate `json:"ap2_mandates,omitempty"`
}

// OrderMandate is one order's AP2 mandate record (the orders service's
// ap2_mandate_json: digest, issuer and merchant kids, exp, aud, nonce,
// total, verified_at).
type OrderMandate struct {
	OrderID string `json:"order_id"`
	// The merchant's order number ("#1007").
	OrderLabel string          `json:"order_label,omitempty"`
	CheckoutID string          `json:"checkout_id"`
	Mandate    json.RawMessage `json:"mandate"`
}

type Catalog struct {
	Products []Product `json:"products"`
}

type Product struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	ImageURL    string `json:"image_url,omitempty"`
	// Category: absent on import keeps the stored one (documents written
	// before it existed); exported when set.
	Category *string   `json:"category,omitempty"`
	Active   bool      `json:"active"`
	Variants []Variant `json:"variants"`
}

type Variant struct {
	ID       string `json:"id"`
	SKU      string `json:"sku"`
	Title    string `json:"title"`
	Price    int64  `json:"price"`
	Currency string `json:"currency"`
	Stock    int64  `json:"stock"`
	Active   bool   `json:"active"`
	ImageURL string `json:"image_url,omitempty"`
}

type ShippingRate struct {
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Carrier     string     `json:"carrier,omitempty"`
	Regions     []string   `json:"regions,omitempty"`
	CEPRanges   []CEPRange `json:"cep_ranges,omitempty"`
	Price       int64      `json:"price"`
	FreeAbove   int64      `json:"free_above,omitempty"`
	MinSubtotal int64      `json:"min_subtotal,omitempty"`
	MaxSubtotal int64      `json:"max_subtotal,omitempty"`
	MinDays     int32      `json:"min_days"`
	MaxDays     int32      `json:"max_days"`
	Active      bool       `json:"active"`
	Position    int32      `json:"position"`
}

type CEPRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type PickupPoint struct {
	Name            string `json:"name"`
	StreetAddress   string `json:"street_address"`
	ExtendedAddress string `json:"extended_address,omitempty"`
	AddressLocality string `json:"address_locality"`
	AddressRegion   string `json:"address_region"`
	PostalCode      string `json:"postal_code"`
	AddressCountry  string `json:"address_country"`
	Price           int64  `json:"price"`
	Description     string `json:"description,omitempty"`
	Active          bool   `json:"active"`
	Position        int32  `json:"position"`
}

// Discount is a discount code (Code set) or an automatic discount.
type Discount struct {
	Code               string     `json:"code,omitempty"`
	Title              string     `json:"title"`
	Kind               string     `json:"kind"` // percent | fixed | free_shipping
	Value              int64      `json:"value"`
	MinSubtotal        int64      `json:"min_subtotal,omitempty"`
	StartsAt           *time.Time `json:"starts_at,omitempty"`
	EndsAt             *time.Time `json:"ends_at,omitempty"`
	UsageLimit         int64      `json:"usage_limit,omitempty"`
	UsageLimitPerBuyer int64      `json:"usage_limit_per_buyer,omitempty"`
	Priority           int32      `json:"priority"`
	Combinable         bool       `json:"combinable"`
	Active             bool       `json:"active"`
}

type Settings struct {
	Links              []Link   `json:"links"`
	ConsentPurposes    []string `json:"consent_purposes"`
	CheckoutTTLSeconds int64    `json:"checkout_ttl_seconds"`
	// AP2Mandates is the AP2 mandates opt-in; exported when on, and an
	// import sets it only when the document has it.
	AP2Mandates *bool `json:"ap2_mandates,omitempty"`
}

type Link struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// Problem is one reason a document cannot be imported.
type Problem struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message + " (" + p.Code + ")" }

// Clients are the services a document spans.
type Clients struct {
	Tenants tenantsv1connect.TenantServiceClient
	Catalog catalogv1connect.CatalogServiceClient
	Pricing pricingv1connect.PricingServiceClient
	// Orders, when set, adds the orders' AP2 mandates to an export.
	Orders ordersv1connect.OrdersServiceClient
}

// Export reads the tenant's configuration. Output order is stable
// (products by id, variants by SKU, rates and pickup points by position
// then title/name, codes by code, automatic discounts by title).
func Export(ctx context.Context, c Clients, tenantID uuid.UUID) (*Document, error) {
	tctx := tenancy.With(ctx, tenantID)
	doc := &Document{Format: Format, Catalog: Catalog{Products: []Product{}}, ShippingRates: []ShippingRate{}, PickupPoints: []PickupPoint{},
		DiscountCodes: []Discount{}, AutomaticDiscounts: []Discount{}}
	token := ""
	for {
		r, err := c.Catalog.ListProducts(tctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 500, PageToken: token}))
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		for _, p := range r.Msg.GetProducts() {
			doc.Catalog.Products = append(doc.Catalog.Products, productFromProto(p))
		}
		if token = r.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	sort.Slice(doc.Catalog.Products, func(i, j int) bool { return doc.Catalog.Products[i].ID < doc.Catalog.Products[j].ID })
	rates, err := c.Pricing.ListShippingRates(tctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		return nil, fmt.Errorf("shipping rates: %w", err)
	}
	for _, r := range rates.Msg.GetRates() {
		doc.ShippingRates = append(doc.ShippingRates, rateFromProto(r))
	}
	sort.SliceStable(doc.ShippingRates, func(i, j int) bool {
		a, b := doc.ShippingRates[i], doc.ShippingRates[j]
		return a.Position < b.Position || (a.Position == b.Position && a.Title < b.Title)
	})
	locs, err := c.Pricing.ListPickupLocations(tctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil {
		return nil, fmt.Errorf("pickup points: %w", err)
	}
	for _, l := range locs.Msg.GetLocations() {
		doc.PickupPoints = append(doc.PickupPoints, pickupFromProto(l))
	}
	sort.SliceStable(doc.PickupPoints, func(i, j int) bool {
		a, b := doc.PickupPoints[i], doc.PickupPoints[j]
		return a.Position < b.Position || (a.Position == b.Position && a.Name < b.Name)
	})
	ds, err := c.Pricing.ListDiscounts(tctx, connect.NewRequest(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		return nil, fmt.Errorf("discounts: %w", err)
	}
	for _, d := range ds.Msg.GetDiscounts() {
		if d.GetAutomatic() {
			doc.AutomaticDiscounts = append(doc.AutomaticDiscounts, discountFromProto(d))
		} else {
			doc.DiscountCodes = append(doc.DiscountCodes, discountFromProto(d))
		}
	}
	sort.Slice(doc.DiscountCodes, func(i, j int) bool { return doc.DiscountCodes[i].Code < doc.DiscountCodes[j].Code })
	sort.Slice(doc.AutomaticDiscounts, func(i, j int) bool { return doc.AutomaticDiscounts[i].Title < doc.AutomaticDiscounts[j].Title })
	set, err := c.Tenants.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tenantID.String()}))
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	doc.Settings = Settings{Links: []Link{}, ConsentPurposes: []string{}, CheckoutTTLSeconds: set.Msg.GetSettings().GetCheckoutTtlSeconds()}
	for _, l := range set.Msg.GetSettings().GetLinks() {
		doc.Settings.Links = append(doc.Settings.Links, Link{Type: l.GetType(), URL: l.GetUrl(), Title: l.GetTitle()})
	}
	doc.Settings.ConsentPurposes = append(doc.Settings.ConsentPurposes, set.Msg.GetSettings().GetConsentPurposes()...)
	disc, err := c.Tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID.String()}))
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	if slices.Contains(disc.Msg.GetTenant().GetCapabilities(), bcpnames.AP2Mandate) {
		on := true
		doc.Settings.AP2Mandates = &on
	}
	if c.Orders != nil {
		token := ""
		for {
			r, err := c.Orders.ListOrders(tctx, connect.NewRequest(&ordersv1.ListOrdersRequest{PageSize: 500, PageToken: token}))
			if err != nil {
				return nil, fmt.Errorf("orders: %w", err)
			}
			for _, o := range r.Msg.GetOrders() {
				if m := o.GetAp2MandateJson(); len(m) > 0 {
					doc.AP2Mandates = append(doc.AP2Mandates, OrderMandate{OrderID: o.GetId(), OrderLabel: o.GetLabel(), CheckoutID: o.GetCheckoutId(), Mandate: json.RawMessage(m)})
				}
			}
			if token = r.Msg.GetNextPageToken(); token == "" {
				break
			}
		}
		sort.Slice(doc.AP2Mandates, func(i, j int) bool { return doc.AP2Mandates[i].OrderID < doc.AP2Mandates[j].OrderID })
	}
	return doc, nil
}

// Marshal renders a document as indented JSON (what export writes).
func Marshal(doc *Document) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Decode parses a document strictly: unknown members, trailing data and
// type errors are problems with their JSON path.
func Decode(data []byte) (*Document, []Problem) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc Document
	if err := dec.Decode(&doc); err != nil {
		path := "$"
		var te *json.UnmarshalTypeError
		if ok := asType(err, &te); ok && te.Field != "" {
			path = "$." + te.Field
		}
		return nil, []Problem{{Path: path, Code: "invalid_json", Message: err.Error()}}
	}
	if dec.More() {
		return nil, []Problem{{Path: "$", Code: "invalid_json", Message: "trailing data after the document"}}
	}
	if doc.Format != Format {
		return nil, []Problem{{Path: "$.format", Code: "unsupported_format", Message: fmt.Sprintf("format must be %q", Format)}}
	}
	return &doc, nil
}

func asType(err error, target **json.UnmarshalTypeError) bool {
	return errors.As(err, target)
}

// Report counts what an import did per section.
type Report struct {
	Catalog            string `json:"catalog"`
	ShippingRates      Counts `json:"shipping_rates"`
	PickupPoints       Counts `json:"pickup_points"`
	DiscountCodes      Counts `json:"discount_codes"`
	AutomaticDiscounts Counts `json:"automatic_discounts"`
	Settings           string `json:"settings"` // "unchanged" or "updated"
}

type Counts struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

// Validate checks the whole document for tenantID without changing
// anything: each entry by the service that owns its rules (a dry run or a
// validate_only call), keys repeated within the document here.
func Validate(ctx context.Context, c Clients, tenantID uuid.UUID, doc *Document) ([]Problem, error) {
	ps := duplicateKeys(doc)
	tctx := tenancy.With(ctx, tenantID)
	for i, r := range doc.ShippingRates {
		res, err := c.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rateToProto(r), ValidateOnly: true}))
		if err != nil {
			return nil, fmt.Errorf("shipping rates dry run: %w", err)
		}
		ps = withViolations(ps, fmt.Sprintf("$.shipping_rates[%d]", i), "rate.", res.Msg.GetViolations())
	}
	for i, l := range doc.PickupPoints {
		res, err := c.Pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: pickupToProto(l), ValidateOnly: true}))
		if err != nil {
			return nil, fmt.Errorf("pickup points dry run: %w", err)
		}
		ps = withViolations(ps, fmt.Sprintf("$.pickup_points[%d]", i), "location.", res.Msg.GetViolations())
	}
	for _, section := range []struct {
		path      string
		list      []Discount
		automatic bool
	}{{"$.discount_codes", doc.DiscountCodes, false}, {"$.automatic_discounts", doc.AutomaticDiscounts, true}} {
		for i, d := range section.list {
			res, err := c.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: discountToProto(d, section.automatic), ValidateOnly: true}))
			if err != nil {
				return nil, fmt.Errorf("discounts dry run: %w", err)
			}
			ps = withViolations(ps, fmt.Sprintf("%s[%d]", section.path, i), "discount.", res.Msg.GetViolations())
		}
	}
	set, err := c.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tenantID.String(), Settings: settingsToProto(doc.Settings), ValidateOnly: true}))
	if err != nil {
		return nil, fmt.Errorf("settings dry run: %w", err)
	}
	ps = withViolations(ps, "$.settings", "settings.", set.Msg.GetViolations())
	if len(doc.Catalog.Products) > 0 {
		r, err := c.Catalog.ImportProducts(tctx, connect.NewRequest(&catalogv1.ImportProductsRequest{
			Products: productsToProto(doc.Catalog.Products), DryRun: true}))
		if err != nil {
			return nil, fmt.Errorf("catalog dry run: %w", err)
		}
		for _, e := range r.Msg.GetErrors() {
			p := "$.catalog"
			if e.GetPath() != "" {
				p += "." + e.GetPath()
			}
			ps = append(ps, Problem{Path: p, Code: e.GetCode(), Message: e.GetMessage()})
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
	return ps, nil
}

// violation is what pricing and tenants answer a validate_only call with.
type violation interface {
	GetField() string
	GetCode() string
	GetMessage() string
}

// withViolations appends an entry's violations as problems at the entry's
// path: the owner names a field relative to its request ("rate.price"),
// whose members are the document's.
func withViolations[V violation](ps []Problem, path, prefix string, vs []V) []Problem {
	for _, v := range vs {
		ps = append(ps, Problem{Path: path + "." + strings.TrimPrefix(v.GetField(), prefix), Code: v.GetCode(), Message: v.GetMessage()})
	}
	return ps
}

// Import validates doc and, only when it has no problem, applies it.
func Import(ctx context.Context, c Clients, tenantID uuid.UUID, doc *Document) (*Report, []Problem, error) {
	ps, err := Validate(ctx, c, tenantID, doc)
	if err != nil || len(ps) > 0 {
		return nil, ps, err
	}
	rep, err := apply(ctx, c, tenantID, doc)
	return rep, nil, err
}

func apply(ctx context.Context, c Clients, tenantID uuid.UUID, doc *Document) (*Report, error) {
	tctx := tenancy.With(ctx, tenantID)
	rep := &Report{Catalog: "unchanged", Settings: "unchanged"}
	if len(doc.Catalog.Products) > 0 {
		r, err := c.Catalog.ImportProducts(tctx, connect.NewRequest(&catalogv1.ImportProductsRequest{Products: productsToProto(doc.Catalog.Products)}))
		if err != nil {
			return rep, fmt.Errorf("catalog (nothing applied yet): %w", err)
		}
		if len(r.Msg.GetErrors()) > 0 {
			return rep, fmt.Errorf("catalog (nothing applied yet): %s: %s", r.Msg.GetErrors()[0].GetPath(), r.Msg.GetErrors()[0].GetMessage())
		}
		rep.Catalog = fmt.Sprintf("created %d, updated %d, unchanged %d", r.Msg.GetCreated(), r.Msg.GetUpdated(), r.Msg.GetUnchanged())
	}
	rates, err := c.Pricing.ListShippingRates(tctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		return rep, fmt.Errorf("shipping rates (catalog applied): %w", err)
	}
	for _, want := range doc.ShippingRates {
		p := rateToProto(want)
		i := slices.IndexFunc(rates.Msg.GetRates(), func(r *pricingv1.ShippingRate) bool { return r.GetTitle() == want.Title })
		if i >= 0 {
			have := proto.Clone(rates.Msg.GetRates()[i]).(*pricingv1.ShippingRate)
			p.Id = have.GetId()
			if proto.Equal(have, p) {
				rep.ShippingRates.Unchanged++
				continue
			}
			rep.ShippingRates.Updated++
		} else {
			rep.ShippingRates.Created++
		}
		if _, err := c.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: p})); err != nil {
			return rep, fmt.Errorf("shipping rate %q (catalog applied): %w", want.Title, err)
		}
	}
	locs, err := c.Pricing.ListPickupLocations(tctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil {
		return rep, fmt.Errorf("pickup points (catalog and rates applied): %w", err)
	}
	for _, want := range doc.PickupPoints {
		p := pickupToProto(want)
		i := slices.IndexFunc(locs.Msg.GetLocations(), func(l *pricingv1.PickupLocation) bool { return l.GetName() == want.Name })
		if i >= 0 {
			have := locs.Msg.GetLocations()[i]
			p.Id = have.GetId()
			if proto.Equal(have, p) {
				rep.PickupPoints.Unchanged++
				continue
			}
			rep.PickupPoints.Updated++
		} else {
			rep.PickupPoints.Created++
		}
		if _, err := c.Pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: p})); err != nil {
			return rep, fmt.Errorf("pickup point %q (catalog and rates applied): %w", want.Name, err)
		}
	}
	ds, err := c.Pricing.ListDiscounts(tctx, connect.NewRequest(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		return rep, fmt.Errorf("discounts (catalog, rates and pickup points applied): %w", err)
	}
	setDiscount := func(want Discount, automatic bool, counts *Counts) error {
		p := discountToProto(want, automatic)
		i := slices.IndexFunc(ds.Msg.GetDiscounts(), func(d *pricingv1.Discount) bool {
			if automatic {
				return d.GetAutomatic() && d.GetTitle() == want.Title
			}
			return !d.GetAutomatic() && strings.EqualFold(d.GetCode(), want.Code)
		})
		if i >= 0 {
			have := proto.Clone(ds.Msg.GetDiscounts()[i]).(*pricingv1.Discount)
			have.TimesUsed = 0
			p.Id = have.GetId()
			if proto.Equal(have, p) {
				counts.Unchanged++
				return nil
			}
			counts.Updated++
		} else {
			counts.Created++
		}
		_, err := c.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: p}))
		return err
	}
	for _, d := range doc.DiscountCodes {
		if err := setDiscount(d, false, &rep.DiscountCodes); err != nil {
			return rep, fmt.Errorf("discount code %q (catalog, rates and pickup points applied): %w", d.Code, err)
		}
	}
	for _, d := range doc.AutomaticDiscounts {
		if err := setDiscount(d, true, &rep.AutomaticDiscounts); err != nil {
			return rep, fmt.Errorf("automatic discount %q (catalog, rates, pickup points and codes applied): %w", d.Title, err)
		}
	}
	cur, err := c.Tenants.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tenantID.String()}))
	if err != nil {
		return rep, fmt.Errorf("settings (everything else applied): %w", err)
	}
	want := settingsToProto(doc.Settings)
	have := cur.Msg.GetSettings()
	if have == nil || !proto.Equal(normalizeSettings(have), normalizeSettings(want)) {
		if _, err := c.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tenantID.String(), Settings: want})); err != nil {
			return rep, fmt.Errorf("settings (everything else applied): %w", err)
		}
		rep.Settings = "updated"
	}
	if on := doc.Settings.AP2Mandates; on != nil {
		disc, err := c.Tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID.String()}))
		if err != nil {
			return rep, fmt.Errorf("AP2 mandates (everything else applied): %w", err)
		}
		if slices.Contains(disc.Msg.GetTenant().GetCapabilities(), bcpnames.AP2Mandate) != *on {
			if _, err := c.Tenants.SetAP2Mandates(ctx, connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: tenantID.String(), Enabled: *on})); err != nil {
				return rep, fmt.Errorf("AP2 mandates (everything else applied): %w", err)
			}
			rep.Settings = "updated"
		}
	}
	return rep, nil
}

func normalizeSettings(s *tenantsv1.Settings) *tenantsv1.Settings {
	out := proto.Clone(s).(*tenantsv1.Settings)
	if len(out.Links) == 0 {
		out.Links = nil
	}
	if len(out.ConsentPurposes) == 0 {
		out.ConsentPurposes = nil
	}
	// Rate limits are not part of the merchant file; SetSettings without
	// them keeps the stored ones.
	out.RateLimits = nil
	return out
}

// Conversions.

func productFromProto(p *catalogv1.Product) Product {
	out := Product{ID: p.GetId(), Title: p.GetTitle(), Description: p.GetDescription(), ImageURL: p.GetImageUrl(), Active: p.GetActive(), Variants: []Variant{}}
	if c := p.GetCategory(); c != "" {
		out.Category = &c
	}
	for _, v := range p.GetVariants() {
		out.Variants = append(out.Variants, Variant{ID: v.GetId(), SKU: v.GetSku(), Title: v.GetTitle(), Price: v.GetPrice(),
			Currency: v.GetCurrency(), Stock: v.GetStock(), Active: v.GetActive(), ImageURL: v.GetImageUrl()})
	}
	sort.Slice(out.Variants, func(i, j int) bool { return out.Variants[i].SKU < out.Variants[j].SKU })
	return out
}

func productsToProto(ps []Product) []*catalogv1.Product {
	out := make([]*catalogv1.Product, 0, len(ps))
	for _, p := range ps {
		pp := &catalogv1.Product{Id: p.ID, Title: p.Title, Description: p.Description, ImageUrl: p.ImageURL, Category: p.Category, Active: p.Active}
		for _, v := range p.Variants {
			pp.Variants = append(pp.Variants, &catalogv1.Variant{Id: v.ID, Sku: v.SKU, Title: v.Title, Price: v.Price,
				Currency: v.Currency, Stock: v.Stock, Active: v.Active, ImageUrl: v.ImageURL})
		}
		out = append(out, pp)
	}
	return out
}

func rateFromProto(r *pricingv1.ShippingRate) ShippingRate {
	out := ShippingRate{Title: r.GetTitle(), Description: r.GetDescription(), Carrier: r.GetCarrier(), Regions: r.GetRegions(),
		Price: r.GetPrice(), FreeAbove: r.GetFreeAbove(), MinSubtotal: r.GetMinSubtotal(), MaxSubtotal: r.GetMaxSubtotal(),
		MinDays: r.GetMinDays(), MaxDays: r.GetMaxDays(), Active: r.GetActive(), Position: r.GetPosition()}
	for _, c := range r.GetCepRanges() {
		out.CEPRanges = append(out.CEPRanges, CEPRange{From: c.GetFrom(), To: c.GetTo()})
	}
	return out
}

func rateToProto(r ShippingRate) *pricingv1.ShippingRate {
	out := &pricingv1.ShippingRate{Title: r.Title, Description: r.Description, Carrier: r.Carrier, Regions: r.Regions,
		Price: r.Price, FreeAbove: r.FreeAbove, MinSubtotal: r.MinSubtotal, MaxSubtotal: r.MaxSubtotal,
		MinDays: r.MinDays, MaxDays: r.MaxDays, Active: r.Active, Position: r.Position}
	for _, c := range r.CEPRanges {
		out.CepRanges = append(out.CepRanges, &pricingv1.CepRange{From: c.From, To: c.To})
	}
	return out
}

func pickupFromProto(l *pricingv1.PickupLocation) PickupPoint {
	return PickupPoint{Name: l.GetName(), StreetAddress: l.GetStreetAddress(), ExtendedAddress: l.GetExtendedAddress(),
		AddressLocality: l.GetAddressLocality(), AddressRegion: l.GetAddressRegion(), PostalCode: l.GetPostalCode(),
		AddressCountry: l.GetAddressCountry(), Price: l.GetPrice(), Description: l.GetDescription(), Active: l.GetActive(), Position: l.GetPosition()}
}

func pickupToProto(p PickupPoint) *pricingv1.PickupLocation {
	return &pricingv1.PickupLocation{Name: p.Name, StreetAddress: p.StreetAddress, ExtendedAddress: p.ExtendedAddress,
		AddressLocality: p.AddressLocality, AddressRegion: p.AddressRegion, PostalCode: p.PostalCode,
		AddressCountry: p.AddressCountry, Price: p.Price, Description: p.Description, Active: p.Active, Position: p.Position}
}

var kinds = map[string]pricingv1.Discount_Kind{
	"percent": pricingv1.Discount_KIND_PERCENT, "fixed": pricingv1.Discount_KIND_FIXED, "free_shipping": pricingv1.Discount_KIND_FREE_SHIPPING,
}

func discountFromProto(d *pricingv1.Discount) Discount {
	out := Discount{Code: d.GetCode(), Title: d.GetTitle(), Value: d.GetValue(), MinSubtotal: d.GetMinSubtotal(),
		UsageLimit: d.GetUsageLimit(), UsageLimitPerBuyer: d.GetUsageLimitPerBuyer(), Priority: d.GetPriority(),
		Combinable: d.GetCombinable(), Active: d.GetActive()}
	for name, k := range kinds {
		if k == d.GetKind() {
			out.Kind = name
		}
	}
	if d.StartsAt != nil {
		t := d.GetStartsAt().AsTime().UTC()
		out.StartsAt = &t
	}
	if d.EndsAt != nil {
		t := d.GetEndsAt().AsTime().UTC()
		out.EndsAt = &t
	}
	return out
}

func discountToProto(d Discount, automatic bool) *pricingv1.Discount {
	out := &pricingv1.Discount{Code: d.Code, Title: d.Title, Kind: kinds[d.Kind], Value: d.Value, Automatic: automatic,
		MinSubtotal: d.MinSubtotal, UsageLimit: d.UsageLimit, UsageLimitPerBuyer: d.UsageLimitPerBuyer,
		Priority: d.Priority, Combinable: d.Combinable, Active: d.Active}
	if d.StartsAt != nil {
		out.StartsAt = timestamppb.New(*d.StartsAt)
	}
	if d.EndsAt != nil {
		out.EndsAt = timestamppb.New(*d.EndsAt)
	}
	return out
}

func settingsToProto(s Settings) *tenantsv1.Settings {
	out := &tenantsv1.Settings{ConsentPurposes: s.ConsentPurposes, CheckoutTtlSeconds: s.CheckoutTTLSeconds}
	for _, l := range s.Links {
		out.Links = append(out.Links, &tenantsv1.Link{Type: l.Type, Url: l.URL, Title: l.Title})
	}
	return out
}

// duplicateKeys reports entries whose key (rates and automatic discounts
// by title, pickup points by name, codes case-insensitively) repeats an
// earlier one: import matches entries to the tenant's by that key, so the
// second would overwrite the first. Every other rule is its owner's.
func duplicateKeys(doc *Document) []Problem {
	var ps []Problem
	check := func(section, member, code string, n int, key func(int) string) {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			k := key(i)
			if j, dup := seen[k]; dup && k != "" {
				ps = append(ps, Problem{Path: fmt.Sprintf("$.%s[%d].%s", section, i, member), Code: code,
					Message: fmt.Sprintf("same %s as $.%s[%d]", member, section, j)})
				continue
			}
			seen[k] = i
		}
	}
	check("shipping_rates", "title", "duplicate_title", len(doc.ShippingRates), func(i int) string { return strings.TrimSpace(doc.ShippingRates[i].Title) })
	check("pickup_points", "name", "duplicate_name", len(doc.PickupPoints), func(i int) string { return strings.TrimSpace(doc.PickupPoints[i].Name) })
	check("discount_codes", "code", "duplicate_code", len(doc.DiscountCodes), func(i int) string { return strings.ToLower(strings.TrimSpace(doc.DiscountCodes[i].Code)) })
	check("automatic_discounts", "title", "duplicate_title", len(doc.AutomaticDiscounts), func(i int) string { return strings.TrimSpace(doc.AutomaticDiscounts[i].Title) })
	return ps
}
