package admin

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
)

// Pickup points: create, edit and delete through the pricing service. The
// opening hours are the location's description, the text agents show as
// the pickup option ("Seg. a sex., 9h às 18h").

type pickupForm struct {
	New                                  bool
	ID                                   string
	Name, Street, Extended, City, Region string
	CEP, Price, Hours                    string
	Active                               bool
	Errors                               fieldErrors
	Error                                string
	position                             int32
}

func pickupToForm(l *pricingv1.PickupLocation) pickupForm {
	f := pickupForm{ID: l.GetId(), Name: l.GetName(), Street: l.GetStreetAddress(), Extended: l.GetExtendedAddress(), City: l.GetAddressLocality(),
		Region: l.GetAddressRegion(), CEP: fmtCEP(l.GetPostalCode()), Hours: l.GetDescription(), Active: l.GetActive(), position: l.GetPosition(), Errors: fieldErrors{}}
	if l.GetPrice() > 0 {
		f.Price = FormatReais(l.GetPrice())
	}
	return f
}

func parsePickupForm(r *http.Request) pickupForm {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return pickupForm{Name: g("name"), Street: g("street_address"), Extended: g("extended_address"), City: g("address_locality"),
		Region: g("address_region"), CEP: g("postal_code"), Price: g("price"), Hours: g("hours"), Active: g("active") == "on"}
}

// toLocation reads the form; the UF and the CEP are pricing's to check
// (reject shows what it says).
func (f *pickupForm) toLocation() *pricingv1.PickupLocation {
	f.Errors = fieldErrors{}
	l := &pricingv1.PickupLocation{Id: f.ID, Name: f.Name, StreetAddress: f.Street, ExtendedAddress: f.Extended, AddressLocality: f.City,
		AddressRegion: f.Region, PostalCode: f.CEP, AddressCountry: "BR", Description: f.Hours, Active: f.Active, Position: f.position}
	if f.Name == "" {
		f.Errors.add("name", "Informe o nome do ponto de retirada.")
	}
	if f.Street == "" {
		f.Errors.add("street_address", "Informe rua e número.")
	}
	if f.City == "" {
		f.Errors.add("address_locality", "Informe a cidade.")
	}
	if f.Price != "" {
		var msg string
		if l.Price, msg = ParseBRL(f.Price); msg != "" {
			f.Errors.add("price", strings.Replace(msg, "preço", "valor", 1))
		}
	}
	if len([]rune(f.Hours)) > 300 {
		f.Errors.add("hours", "No máximo 300 caracteres.")
	}
	return l
}

// reject shows a rule pricing says the location breaks next to its field.
func (f *pickupForm) reject(field, msg string) {
	switch field = strings.TrimPrefix(field, "location."); field {
	case "postal_code":
		f.Errors.add(field, "CEP inválido: "+msg)
	case "address_region":
		f.Errors.add(field, "UF inválida: "+msg)
	case "name", "street_address", "extended_address", "address_locality", "price":
		f.Errors.add(field, "Valor recusado: "+msg)
	case "description":
		f.Errors.add("hours", "Valor recusado: "+msg)
	default:
		f.Error = "Ponto de retirada recusado: " + msg
	}
}

func (a *Admin) findPickup(r *http.Request, id string) (*pricingv1.PickupLocation, error) {
	resp, err := a.opts.Pricing.ListPickupLocations(r.Context(), connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil {
		return nil, err
	}
	return withID(resp.Msg.GetLocations(), id, "pickup_not_found")
}

func (a *Admin) pickupEdit(rw http.ResponseWriter, r *http.Request) {
	f := pickupForm{New: true, Active: true, Errors: fieldErrors{}}
	if id := r.PathValue("id"); id != "" {
		l, err := a.findPickup(r, id)
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f = pickupToForm(l)
	}
	a.render(rw, r, http.StatusOK, "pickup", a.newPage(r, "Ponto de retirada", "frete", f))
}

func (a *Admin) pickupSave(rw http.ResponseWriter, r *http.Request) {
	f := parsePickupForm(r)
	f.New = r.PathValue("id") == ""
	if !f.New {
		l, err := a.findPickup(r, r.PathValue("id"))
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f.ID, f.position = l.GetId(), l.GetPosition()
	}
	l := f.toLocation()
	// Every rule pricing says the location breaks, next to the form's own.
	v, err := a.opts.Pricing.SetPickupLocation(r.Context(), connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: l, ValidateOnly: true}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	for _, x := range v.Msg.GetViolations() {
		f.reject(x.GetField(), x.GetMessage())
	}
	if len(f.Errors) == 0 && f.Error == "" {
		_, err := a.opts.Pricing.SetPickupLocation(r.Context(), connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: l}))
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
	a.render(rw, r, http.StatusUnprocessableEntity, "pickup", a.newPage(r, "Ponto de retirada", "frete", f))
}

func (a *Admin) pickupDelete(rw http.ResponseWriter, r *http.Request) {
	l, err := a.findPickup(r, r.PathValue("id"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	if r.PostFormValue("confirm") != "on" {
		f := pickupToForm(l)
		f.Errors.add("confirm", "Marque a confirmação para excluir.")
		a.render(rw, r, http.StatusUnprocessableEntity, "pickup", a.newPage(r, "Ponto de retirada", "frete", f))
		return
	}
	if _, err := a.opts.Pricing.DeletePickupLocation(r.Context(), connect.NewRequest(&pricingv1.DeletePickupLocationRequest{Id: l.GetId()})); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	http.Redirect(rw, r, "/admin/frete?ok=excluido", http.StatusSeeOther)
}
