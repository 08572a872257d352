package pricing

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
)

// ShippingRate is a merchant shipping option, offered where it matches.
type ShippingRate struct {
	ID          string
	Title       string
	Description string
	Carrier     string
	// Regions are UFs; with CEPRanges empty too, the rate covers Brazil.
	Regions     []string
	CEPRanges   []CEPRange
	Price       int64
	FreeAbove   int64 // 0: never free
	MinSubtotal int64
	MaxSubtotal int64 // 0: no upper bound
	MinDays     int32
	MaxDays     int32
	Active      bool
	Position    int32
}

// CEPRange is an inclusive range of 8-digit CEPs.
type CEPRange struct{ From, To string }

// PickupLocation is a store or point where buyers collect orders.
type PickupLocation struct {
	ID              string
	Name            string
	StreetAddress   string
	ExtendedAddress string
	AddressLocality string
	AddressRegion   string
	PostalCode      string // 8 digits
	AddressCountry  string
	Price           int64
	Description     string
	Active          bool
	Position        int32
}

// Discount kinds.
const (
	KindPercent      = "percent"       // Value in basis points of the remaining merchandise amount
	KindFixed        = "fixed"         // Value in centavos, capped at the remaining merchandise amount
	KindFreeShipping = "free_shipping" // the selected shipping options cost nothing
)

// Discount is a code or automatic discount.
type Discount struct {
	ID                 string
	Code               string // "" for automatic discounts
	Title              string
	Kind               string
	Value              int64
	Automatic          bool
	MinSubtotal        int64
	StartsAt, EndsAt   *time.Time
	UsageLimit         int64 // 0: unlimited
	UsageLimitPerBuyer int64 // 0: unlimited
	Priority           int32 // lower applies first; >= 1
	Combinable         bool
	Active             bool
	// TimesUsed counts redemptions (for a quote: by other checkouts).
	TimesUsed int64
	// BuyerUsed counts the quoted buyer's redemptions (quotes only).
	BuyerUsed int64
}

// Config is the merchant configuration a quote uses: active rates, pickup
// locations and the discounts that may apply.
type Config struct {
	Rates     []ShippingRate
	Pickups   []PickupLocation
	Discounts []Discount
}

// ufs are the 27 Brazilian federative units.
var ufs = map[string]bool{
	"AC": true, "AL": true, "AP": true, "AM": true, "BA": true, "CE": true, "DF": true, "ES": true, "GO": true,
	"MA": true, "MT": true, "MS": true, "MG": true, "PA": true, "PB": true, "PR": true, "PE": true, "PI": true,
	"RJ": true, "RN": true, "RS": true, "RO": true, "RR": true, "SC": true, "SP": true, "SE": true, "TO": true,
}

// normalizeUF returns the upper-case UF and whether it is one of the 27.
func normalizeUF(s string) (string, bool) {
	u := strings.ToUpper(strings.TrimSpace(s))
	return u, ufs[u]
}

// normalizeCEP accepts "01310100", "01310-100" or "01.310-100" and returns
// the 8 digits.
func normalizeCEP(s string) (string, bool) {
	s = strings.TrimSpace(s)
	var b [8]byte
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if n == 8 {
				return "", false
			}
			b[n] = c
			n++
		case c == '-' || c == '.':
		default:
			return "", false
		}
	}
	if n != 8 {
		return "", false
	}
	return string(b[:]), true
}

// formatCEP renders 8 digits as "01310-100".
func formatCEP(d string) string {
	if len(d) != 8 {
		return d
	}
	return d[:5] + "-" + d[5:]
}

func checkLen(field, code, v string, lo, hi int) error {
	if n := len([]rune(v)); n < lo || n > hi {
		if lo > 0 {
			return apperr.Invalid(field, code, "%s is required (%d to %d characters)", field, lo, hi)
		}
		return apperr.Invalid(field, code, "%s is at most %d characters", field, hi)
	}
	return nil
}

func checkAmount(field, code string, v int64) error {
	if v < 0 || v > MaxAmount {
		return apperr.Invalid(field, code, "%s must be between 0 and %d centavos", field, MaxAmount)
	}
	return nil
}

// validateRate checks a rate and normalises it in place (trimmed text,
// upper-case unique UFs, CEPs as 8 digits).
func validateRate(r *ShippingRate) error { return rateViolations(r).First() }

func rateViolations(r *ShippingRate) apperr.Violations {
	var v apperr.Violations
	r.Title, r.Description, r.Carrier = strings.TrimSpace(r.Title), strings.TrimSpace(r.Description), strings.TrimSpace(r.Carrier)
	v.Add(checkLen("rate.title", "invalid_title", r.Title, 1, 100))
	v.Add(checkLen("rate.description", "invalid_description", r.Description, 0, 300))
	v.Add(checkLen("rate.carrier", "invalid_carrier", r.Carrier, 0, 100))
	v.Add(checkAmount("rate.price", "invalid_price", r.Price))
	v.Add(checkAmount("rate.free_above", "invalid_free_above", r.FreeAbove))
	v.Add(checkAmount("rate.min_subtotal", "invalid_min_subtotal", r.MinSubtotal))
	v.Add(checkAmount("rate.max_subtotal", "invalid_max_subtotal", r.MaxSubtotal))
	if r.MaxSubtotal != 0 && r.MaxSubtotal < r.MinSubtotal {
		v.Add(apperr.Invalid("rate.max_subtotal", "invalid_max_subtotal", "max_subtotal must be 0 (no limit) or at least min_subtotal"))
	}
	if r.MinDays < 0 {
		v.Add(apperr.Invalid("rate.min_days", "invalid_min_days", "min_days must be zero or more"))
	}
	if r.MaxDays < 0 || (r.MaxDays != 0 && r.MaxDays < r.MinDays) {
		v.Add(apperr.Invalid("rate.max_days", "invalid_max_days", "max_days must be 0 (unknown) or at least min_days"))
	}
	if len(r.Regions) > 27 || len(r.CEPRanges) > 500 {
		v.Add(apperr.Invalid("rate.regions", "too_many_regions", "at most 27 UFs and 500 CEP ranges"))
		return v
	}
	regions := make([]string, 0, len(r.Regions))
	for i, reg := range r.Regions {
		uf, ok := normalizeUF(reg)
		if !ok {
			v.Add(apperr.Invalid(fmt.Sprintf("rate.regions[%d]", i), "unknown_uf", "%q is not a Brazilian UF", reg))
			continue
		}
		if !slices.Contains(regions, uf) {
			regions = append(regions, uf)
		}
	}
	r.Regions = regions
	for i, cr := range r.CEPRanges {
		f := fmt.Sprintf("rate.cep_ranges[%d]", i)
		from, okFrom := normalizeCEP(cr.From)
		if !okFrom {
			v.Add(apperr.Invalid(f+".from", "invalid_cep", "%q is not a CEP (8 digits)", cr.From))
		}
		to, okTo := normalizeCEP(cr.To)
		if !okTo {
			v.Add(apperr.Invalid(f+".to", "invalid_cep", "%q is not a CEP (8 digits)", cr.To))
		}
		switch {
		case !okFrom || !okTo:
		case from > to:
			v.Add(apperr.Invalid(f, "invalid_cep_range", "from (%s) must not be after to (%s)", from, to))
		default:
			r.CEPRanges[i] = CEPRange{From: from, To: to}
		}
	}
	return v
}

// validatePickup checks a pickup location and normalises it in place.
func validatePickup(p *PickupLocation) error { return pickupViolations(p).First() }

func pickupViolations(p *PickupLocation) apperr.Violations {
	var v apperr.Violations
	p.Name, p.StreetAddress, p.ExtendedAddress = strings.TrimSpace(p.Name), strings.TrimSpace(p.StreetAddress), strings.TrimSpace(p.ExtendedAddress)
	p.AddressLocality, p.Description = strings.TrimSpace(p.AddressLocality), strings.TrimSpace(p.Description)
	v.Add(checkLen("location.name", "invalid_name", p.Name, 1, 200))
	v.Add(checkLen("location.street_address", "invalid_address", p.StreetAddress, 1, 300))
	v.Add(checkLen("location.extended_address", "invalid_address", p.ExtendedAddress, 0, 300))
	v.Add(checkLen("location.address_locality", "invalid_address", p.AddressLocality, 1, 200))
	if uf, ok := normalizeUF(p.AddressRegion); ok {
		p.AddressRegion = uf
	} else {
		v.Add(apperr.Invalid("location.address_region", "unknown_uf", "%q is not a Brazilian UF", p.AddressRegion))
	}
	if cep, ok := normalizeCEP(p.PostalCode); ok {
		p.PostalCode = cep
	} else {
		v.Add(apperr.Invalid("location.postal_code", "invalid_cep", "%q is not a CEP (8 digits)", p.PostalCode))
	}
	switch c := strings.ToUpper(strings.TrimSpace(p.AddressCountry)); c {
	case "", "BR":
		p.AddressCountry = "BR"
	default:
		v.Add(apperr.Invalid("location.address_country", "unsupported_country", "pickup locations must be in Brazil (BR)"))
	}
	v.Add(checkAmount("location.price", "invalid_price", p.Price))
	v.Add(checkLen("location.description", "invalid_description", p.Description, 0, 300))
	return v
}

var codePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateDiscount checks a discount and normalises it in place. An unset
// priority (0) becomes 1, the first stacking position.
func validateDiscount(d *Discount) error { return discountViolations(d).First() }

func discountViolations(d *Discount) apperr.Violations {
	var v apperr.Violations
	d.Code, d.Title = strings.TrimSpace(d.Code), strings.TrimSpace(d.Title)
	switch {
	case d.Automatic && d.Code != "":
		v.Add(apperr.Invalid("discount.code", "invalid_code", "automatic discounts have no code"))
	case d.Automatic:
	case d.Code == "":
		v.Add(apperr.Invalid("discount.code", "code_required", "a discount that is not automatic needs a code"))
	case !codePattern.MatchString(d.Code):
		v.Add(apperr.Invalid("discount.code", "invalid_code", "codes are 1 to 64 letters, digits, '-' or '_'"))
	}
	v.Add(checkLen("discount.title", "invalid_title", d.Title, 1, 200))
	switch d.Kind {
	case KindPercent:
		if d.Value < 1 || d.Value > 10000 {
			v.Add(apperr.Invalid("discount.value", "invalid_value", "a percent discount is 1 to 10000 basis points (0.01 %% to 100 %%)"))
		}
	case KindFixed:
		if d.Value < 1 || d.Value > MaxAmount {
			v.Add(apperr.Invalid("discount.value", "invalid_value", "a fixed discount is more than 0 centavos"))
		}
	case KindFreeShipping:
		if d.Value != 0 {
			v.Add(apperr.Invalid("discount.value", "invalid_value", "a free shipping discount takes no value"))
		}
	default:
		v.Add(apperr.Invalid("discount.kind", "invalid_kind", "kind must be percent, fixed or free_shipping"))
	}
	v.Add(checkAmount("discount.min_subtotal", "invalid_min_subtotal", d.MinSubtotal))
	if d.StartsAt != nil && d.EndsAt != nil && !d.EndsAt.After(*d.StartsAt) {
		v.Add(apperr.Invalid("discount.ends_at", "invalid_ends_at", "ends_at must be after starts_at"))
	}
	if d.UsageLimit < 0 {
		v.Add(apperr.Invalid("discount.usage_limit", "invalid_usage_limit", "usage_limit must be zero (unlimited) or more"))
	}
	if d.UsageLimitPerBuyer < 0 {
		v.Add(apperr.Invalid("discount.usage_limit_per_buyer", "invalid_usage_limit", "usage_limit_per_buyer must be zero (unlimited) or more"))
	}
	if d.Priority < 0 {
		v.Add(apperr.Invalid("discount.priority", "invalid_priority", "priority must be zero (first) or more"))
	}
	if d.Priority == 0 {
		d.Priority = 1
	}
	return v
}
