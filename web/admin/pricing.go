package admin

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
)

// fieldErrors holds messages by form field name.
type fieldErrors map[string]string

func (e fieldErrors) add(field, msg string) {
	if _, ok := e[field]; !ok {
		e[field] = msg
	}
}

// ---- shipping rates and pickup points ----

type shippingData struct {
	Rates   []*pricingv1.ShippingRate
	Pickups []*pricingv1.PickupLocation
}

func (a *Admin) shipping(rw http.ResponseWriter, r *http.Request) {
	rates, err := a.opts.Pricing.ListShippingRates(r.Context(), connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	pickups, err := a.opts.Pricing.ListPickupLocations(r.Context(), connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "shipping", a.newPage(r, "Frete e retirada", "frete", shippingData{Rates: rates.Msg.GetRates(), Pickups: pickups.Msg.GetLocations()}))
}

type rateForm struct {
	New                                bool
	ID                                 string
	Title, Carrier, Description        string
	Regions, CepRanges                 string
	Price, FreeAbove, MinDays, MaxDays string
	Active                             bool
	Errors                             fieldErrors
	Error                              string
	cepLines                           []int // the line of each range in CepRanges
}

func rateToForm(rt *pricingv1.ShippingRate) rateForm {
	f := rateForm{ID: rt.GetId(), Title: rt.GetTitle(), Carrier: rt.GetCarrier(), Description: rt.GetDescription(),
		Regions: strings.Join(rt.GetRegions(), ", "), Price: FormatReais(rt.GetPrice()), Active: rt.GetActive(),
		MinDays: strconv.Itoa(int(rt.GetMinDays())), MaxDays: strconv.Itoa(int(rt.GetMaxDays()))}
	if rt.GetFreeAbove() > 0 {
		f.FreeAbove = FormatReais(rt.GetFreeAbove())
	}
	var lines []string
	for _, c := range rt.GetCepRanges() {
		lines = append(lines, fmtCEP(c.GetFrom())+" a "+fmtCEP(c.GetTo()))
	}
	f.CepRanges = strings.Join(lines, "\n")
	return f
}

func fmtCEP(s string) string {
	if len(s) == 8 {
		return s[:5] + "-" + s[5:]
	}
	return s
}

// cepRangeLine is the form's syntax of one range: two CEPs (their shape
// tells where the separator is, which may itself be a hyphen) joined by
// "a", "até" or a dash. Whether they make a range is pricing's to say.
var cepRangeLine = regexp.MustCompile(`^(\d{5})-?(\d{3})\s*(?:a|até|-|–|—)\s*(\d{5})-?(\d{3})$`)

// parseCEPRanges reads one range per line ("01000-000 a 09999-999") and
// the line of each.
func parseCEPRanges(text string) ([]*pricingv1.CepRange, []int, string) {
	var out []*pricingv1.CepRange
	var lines []int
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		m := cepRangeLine.FindStringSubmatch(line)
		if m == nil {
			return nil, nil, fmt.Sprintf("Linha %d: faixa de CEP inválida (%q); use 01000-000 a 09999-999.", i+1, line)
		}
		out = append(out, &pricingv1.CepRange{From: m[1] + m[2], To: m[3] + m[4]})
		lines = append(lines, i+1)
	}
	return out, lines, ""
}

func parseDays(s string) (int32, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil && n >= 0 && n <= 365
}

func (f *rateForm) toRate() *pricingv1.ShippingRate {
	f.Errors = fieldErrors{}
	rt := &pricingv1.ShippingRate{Id: f.ID, Title: f.Title, Carrier: f.Carrier, Description: f.Description, Active: f.Active}
	if f.Title == "" {
		f.Errors.add("title", "Informe o nome da opção (ex.: PAC).")
	}
	// The UFs and CEPs are pricing's to check (reject shows what it says).
	rt.Regions = strings.FieldsFunc(strings.ToUpper(f.Regions), func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
	var msg string
	if rt.CepRanges, f.cepLines, msg = parseCEPRanges(f.CepRanges); msg != "" {
		f.Errors.add("cep_ranges", msg)
	}
	if rt.Price, msg = ParseBRL(f.Price); msg != "" {
		f.Errors.add("price", msg)
	}
	if f.FreeAbove != "" {
		if rt.FreeAbove, msg = ParseBRL(f.FreeAbove); msg != "" {
			f.Errors.add("free_above", msg)
		}
	}
	var ok bool
	if rt.MinDays, ok = parseDays(f.MinDays); !ok {
		f.Errors.add("min_days", "Prazo em dias: número inteiro de 0 a 365.")
	}
	if rt.MaxDays, ok = parseDays(f.MaxDays); !ok {
		f.Errors.add("max_days", "Prazo em dias: número inteiro de 0 a 365.")
	} else if rt.MaxDays != 0 && rt.MaxDays < rt.MinDays {
		f.Errors.add("max_days", "O prazo máximo não pode ser menor que o mínimo.")
	}
	return rt
}

// reject shows a rule pricing says the rate breaks next to its field; a
// CEP range's by its line.
func (f *rateForm) reject(field, msg string) {
	field = strings.TrimPrefix(field, "rate.")
	var k int
	if _, err := fmt.Sscanf(field, "cep_ranges[%d]", &k); err == nil && k >= 0 && k < len(f.cepLines) {
		f.Errors.add("cep_ranges", fmt.Sprintf("Linha %d: faixa de CEP recusada: %s", f.cepLines[k], msg))
		return
	}
	if i := strings.IndexAny(field, "[."); i > 0 {
		field = field[:i]
	}
	switch field {
	case "title", "carrier", "description", "regions", "cep_ranges", "price", "free_above", "min_days", "max_days":
		f.Errors.add(field, "Valor recusado: "+msg)
	default:
		f.Error = "Tarifa recusada: " + msg
	}
}

func parseRateForm(r *http.Request) rateForm {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return rateForm{Title: g("title"), Carrier: g("carrier"), Description: g("description"), Regions: g("regions"), CepRanges: g("cep_ranges"),
		Price: g("price"), FreeAbove: g("free_above"), MinDays: g("min_days"), MaxDays: g("max_days"), Active: g("active") == "on"}
}

// withID picks the item with id from a list the pricing service returned
// (it has list RPCs only; a merchant's lists are short). Another
// merchant's id is simply not in the list: not found.
func withID[T interface{ GetId() string }](list []T, id, code string) (T, error) {
	var zero T
	for _, it := range list {
		if it.GetId() == id {
			return it, nil
		}
	}
	return zero, apperr.NotFound(code, "no %s", id)
}

func (a *Admin) findRate(r *http.Request, id string) (*pricingv1.ShippingRate, error) {
	resp, err := a.opts.Pricing.ListShippingRates(r.Context(), connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		return nil, err
	}
	return withID(resp.Msg.GetRates(), id, "rate_not_found")
}

func (a *Admin) rateEdit(rw http.ResponseWriter, r *http.Request) {
	f := rateForm{New: true, Active: true}
	if id := r.PathValue("id"); id != "" {
		rt, err := a.findRate(r, id)
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f = rateToForm(rt)
	}
	a.render(rw, r, http.StatusOK, "rate", a.newPage(r, "Tarifa de frete", "frete", f))
}

func (a *Admin) rateSave(rw http.ResponseWriter, r *http.Request) {
	f := parseRateForm(r)
	f.New = r.PathValue("id") == ""
	if !f.New {
		if _, err := a.findRate(r, r.PathValue("id")); err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f.ID = r.PathValue("id")
	}
	rt := f.toRate()
	// Every rule pricing says the rate breaks, next to the form's own.
	v, err := a.opts.Pricing.SetShippingRate(r.Context(), connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rt, ValidateOnly: true}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	for _, x := range v.Msg.GetViolations() {
		f.reject(x.GetField(), x.GetMessage())
	}
	if len(f.Errors) == 0 && f.Error == "" {
		_, err := a.opts.Pricing.SetShippingRate(r.Context(), connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rt}))
		if err == nil {
			http.Redirect(rw, r, "/admin/frete?ok=salvo", http.StatusSeeOther)
			return
		}
		e := appErr(err)
		if e.Kind != apperr.KindInvalidArgument {
			a.serviceError(rw, r, err)
			return
		}
		f.reject(e.Field, e.Message)
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "rate", a.newPage(r, "Tarifa de frete", "frete", f))
}

// ---- discounts ----

type discountsData struct {
	Discounts []*pricingv1.Discount
}

func (a *Admin) discounts(rw http.ResponseWriter, r *http.Request) {
	resp, err := a.opts.Pricing.ListDiscounts(r.Context(), connect.NewRequest(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "discounts", a.newPage(r, "Descontos", "descontos", discountsData{Discounts: resp.Msg.GetDiscounts()}))
}

type discountForm struct {
	New                                      bool
	ID                                       string
	Code, Title, Kind, Value, MinSubtotal    string
	StartsAt, EndsAt                         string // datetime-local, São Paulo time
	UsageLimit, UsageLimitPerBuyer, Priority string
	Automatic, Combinable, Active            bool
	Errors                                   fieldErrors
	Error                                    string
}

const localLayout = "2006-01-02T15:04"

func discountToForm(d *pricingv1.Discount) discountForm {
	f := discountForm{ID: d.GetId(), Code: d.GetCode(), Title: d.GetTitle(), Automatic: d.GetAutomatic(), Combinable: d.GetCombinable(), Active: d.GetActive(),
		UsageLimit: strconv.FormatInt(d.GetUsageLimit(), 10), UsageLimitPerBuyer: strconv.FormatInt(d.GetUsageLimitPerBuyer(), 10), Priority: strconv.Itoa(int(d.GetPriority()))}
	switch d.GetKind() {
	case pricingv1.Discount_KIND_PERCENT:
		f.Kind, f.Value = "percent", formatPercent(d.GetValue())
	case pricingv1.Discount_KIND_FIXED:
		f.Kind, f.Value = "fixed", FormatReais(d.GetValue())
	case pricingv1.Discount_KIND_FREE_SHIPPING:
		f.Kind = "free_shipping"
	}
	if d.GetMinSubtotal() > 0 {
		f.MinSubtotal = FormatReais(d.GetMinSubtotal())
	}
	if d.GetStartsAt() != nil {
		f.StartsAt = d.GetStartsAt().AsTime().In(saoPaulo).Format(localLayout)
	}
	if d.GetEndsAt() != nil {
		f.EndsAt = d.GetEndsAt().AsTime().In(saoPaulo).Format(localLayout)
	}
	return f
}

func parseDiscountForm(r *http.Request) discountForm {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return discountForm{Code: g("code"), Title: g("title"), Kind: g("kind"), Value: g("value"), MinSubtotal: g("min_subtotal"),
		StartsAt: g("starts_at"), EndsAt: g("ends_at"), UsageLimit: g("usage_limit"), UsageLimitPerBuyer: g("usage_limit_per_buyer"),
		Priority: g("priority"), Automatic: g("automatic") == "on", Combinable: g("combinable") == "on", Active: g("active") == "on"}
}

// toDiscount reads the form; the code is pricing's to check (reject shows
// what it says).
func (f *discountForm) toDiscount(now time.Time) *pricingv1.Discount {
	f.Errors = fieldErrors{}
	d := &pricingv1.Discount{Id: f.ID, Code: strings.ToUpper(f.Code), Title: f.Title, Automatic: f.Automatic, Combinable: f.Combinable, Active: f.Active}
	if f.Title == "" {
		f.Errors.add("title", "Informe o título mostrado ao comprador.")
	}
	var msg string
	switch f.Kind {
	case "percent":
		d.Kind = pricingv1.Discount_KIND_PERCENT
		v, m := ParseBRL(strings.TrimSuffix(f.Value, "%"))
		if m != "" || v < 1 || v > 10000 {
			f.Errors.add("value", "Percentual entre 0,01 e 100.")
		}
		d.Value = v
	case "fixed":
		d.Kind = pricingv1.Discount_KIND_FIXED
		if d.Value, msg = ParseBRL(f.Value); msg != "" {
			f.Errors.add("value", strings.Replace(msg, "preço", "valor", 1))
		} else if d.Value == 0 {
			f.Errors.add("value", "O valor do desconto deve ser maior que zero.")
		}
	case "free_shipping":
		d.Kind = pricingv1.Discount_KIND_FREE_SHIPPING
		f.Value = ""
	default:
		f.Errors.add("kind", "Escolha o tipo de desconto.")
	}
	if f.MinSubtotal != "" {
		if d.MinSubtotal, msg = ParseBRL(f.MinSubtotal); msg != "" {
			f.Errors.add("min_subtotal", strings.Replace(msg, "preço", "valor", 1))
		}
	}
	var starts, ends time.Time
	if f.StartsAt != "" {
		t, err := time.ParseInLocation(localLayout, f.StartsAt, saoPaulo)
		if err != nil {
			f.Errors.add("starts_at", "Data e hora inválidas.")
		} else {
			starts, d.StartsAt = t, timestamppb.New(t)
		}
	}
	if f.EndsAt != "" {
		t, err := time.ParseInLocation(localLayout, f.EndsAt, saoPaulo)
		switch {
		case err != nil:
			f.Errors.add("ends_at", "Data e hora inválidas.")
		case !starts.IsZero() && !t.After(starts):
			f.Errors.add("ends_at", "O fim deve ser depois do início.")
		case !t.After(now):
			f.Errors.add("ends_at", "Esta data já passou: o desconto nasceria expirado.")
		default:
			ends, d.EndsAt = t, timestamppb.New(t)
		}
	}
	_ = ends
	nonNeg := func(field, s string) int64 {
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > 1_000_000_000 {
			f.Errors.add(field, "Número inteiro, zero ou mais.")
		}
		return n
	}
	d.UsageLimit = nonNeg("usage_limit", f.UsageLimit)
	d.UsageLimitPerBuyer = nonNeg("usage_limit_per_buyer", f.UsageLimitPerBuyer)
	d.Priority = int32(min(nonNeg("priority", f.Priority), 1_000_000))
	return d
}

// reject shows a rule pricing says the discount breaks next to its field.
func (f *discountForm) reject(field, msg string) {
	switch field = strings.TrimPrefix(field, "discount."); field {
	case "code", "title", "kind", "value", "min_subtotal", "starts_at", "ends_at", "usage_limit", "usage_limit_per_buyer", "priority":
		f.Errors.add(field, "Valor recusado: "+msg)
	default:
		f.Error = "Desconto recusado: " + msg
	}
}

func (a *Admin) findDiscount(r *http.Request, id string) (*pricingv1.Discount, error) {
	resp, err := a.opts.Pricing.ListDiscounts(r.Context(), connect.NewRequest(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		return nil, err
	}
	return withID(resp.Msg.GetDiscounts(), id, "discount_not_found")
}

func (a *Admin) discountEdit(rw http.ResponseWriter, r *http.Request) {
	f := discountForm{New: true, Active: true, Combinable: true, Kind: "percent"}
	if id := r.PathValue("id"); id != "" {
		d, err := a.findDiscount(r, id)
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f = discountToForm(d)
	}
	a.render(rw, r, http.StatusOK, "discount", a.newPage(r, "Desconto", "descontos", f))
}

func (a *Admin) discountSave(rw http.ResponseWriter, r *http.Request) {
	f := parseDiscountForm(r)
	f.New = r.PathValue("id") == ""
	if !f.New {
		if _, err := a.findDiscount(r, r.PathValue("id")); err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f.ID = r.PathValue("id")
	}
	d := f.toDiscount(time.Now())
	// Every rule pricing says the discount breaks, next to the form's own.
	v, err := a.opts.Pricing.SetDiscount(r.Context(), connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: d, ValidateOnly: true}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	for _, x := range v.Msg.GetViolations() {
		f.reject(x.GetField(), x.GetMessage())
	}
	if len(f.Errors) == 0 && f.Error == "" {
		_, err := a.opts.Pricing.SetDiscount(r.Context(), connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: d}))
		if err == nil {
			http.Redirect(rw, r, "/admin/descontos?ok=salvo", http.StatusSeeOther)
			return
		}
		e := appErr(err)
		switch {
		case e.Kind == apperr.KindAlreadyExists:
			f.Errors.add("code", "Já existe um desconto com este código.")
		case e.Kind == apperr.KindInvalidArgument:
			f.reject(e.Field, e.Message)
		default:
			a.serviceError(rw, r, err)
			return
		}
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "discount", a.newPage(r, "Desconto", "descontos", f))
}

// formatPercent shows basis points as a percentage: 1000 → "10",
// 1250 → "12,5", 1 → "0,01".
func formatPercent(bp int64) string {
	s := FormatReais(bp)
	if strings.HasSuffix(s, ",00") {
		return strings.TrimSuffix(s, ",00")
	}
	return strings.TrimSuffix(s, "0")
}
