package admin

import (
	"net/http"
	"strings"

	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// orderDetails is what the merchant ships from (issue 34): the buyer, each
// delivery with its option and address, and the payment. The orders
// service records them at creation; an order created before that has
// none (Recorded false), and its deliveries come from the order's
// fulfillment expectations instead.
type orderDetails struct {
	Recorded   bool
	BuyerName  string
	Email      string
	Phone      string
	Deliveries []deliveryView
	Payment    paymentView
}

type deliveryView struct {
	Pickup      bool
	Method      string // "Envio" | "Retirada"
	Option      string // the selected option's title
	Description string
	Carrier     string
	Amount      int64
	HasAmount   bool
	Location    string   // pickup: the location's name
	Recipient   string   // shipping: the name on the address, if any
	Phone       string   // the address's phone, if any
	Lines       []string // the address, line by line
}

type paymentView struct {
	Method     string // pix | card | ""
	Label      string // "Pix", "Cartão Visa final 4242"
	EndToEndID string
	Txid       string
	Brand      string
	LastDigits string
	HandlerID  string
}

func newOrderDetails(o *bcp.Order, det *ordersv1.OrderDetails) orderDetails {
	if det == nil {
		d := orderDetails{}
		for _, x := range o.Fulfillment.Expectations {
			v := deliveryView{Pickup: x.MethodType == bcp.MethodPickup, Option: x.Description}
			v.Method = methodLabel(x.MethodType)
			a := x.Destination
			v.Lines = addressLines(a.StreetAddress, a.ExtendedAddress, a.AddressLocality, a.AddressRegion, a.PostalCode, a.AddressCountry)
			d.Deliveries = append(d.Deliveries, v)
		}
		return d
	}
	b := det.GetBuyer()
	d := orderDetails{Recorded: true, BuyerName: strings.TrimSpace(b.GetFirstName() + " " + b.GetLastName()), Email: b.GetEmail(), Phone: b.GetPhoneNumber()}
	for _, x := range det.GetDeliveries() {
		a := x.GetAddress()
		v := deliveryView{Pickup: x.GetMethodType() == bcp.MethodPickup, Method: methodLabel(x.GetMethodType()), Option: x.GetOptionTitle(),
			Description: x.GetOptionDescription(), Carrier: x.GetCarrier(), Amount: x.GetOptionAmount(), HasAmount: x.GetOptionTitle() != "",
			Location: x.GetLocationName(), Recipient: strings.TrimSpace(a.GetFirstName() + " " + a.GetLastName()), Phone: a.GetPhoneNumber(),
			Lines: addressLines(a.GetStreetAddress(), a.GetExtendedAddress(), a.GetAddressLocality(), a.GetAddressRegion(), a.GetPostalCode(), a.GetAddressCountry())}
		d.Deliveries = append(d.Deliveries, v)
	}
	p := det.GetPayment()
	d.Payment = paymentView{Method: p.GetMethod(), EndToEndID: p.GetEndToEndId(), Txid: p.GetTxid(), Brand: p.GetCardBrand(),
		LastDigits: p.GetCardLastDigits(), HandlerID: p.GetHandlerId()}
	d.Payment.Label = paymentLabel(p.GetMethod())
	if p.GetMethod() == "card" {
		if p.GetCardBrand() != "" {
			d.Payment.Label += " " + brandName(p.GetCardBrand())
		}
		if p.GetCardLastDigits() != "" {
			d.Payment.Label += " final " + p.GetCardLastDigits()
		}
	}
	return d
}

func methodLabel(t string) string {
	switch t {
	case bcp.MethodShipping:
		return "Envio"
	case bcp.MethodPickup:
		return "Retirada"
	}
	return t
}

// brandName is how a card brand is written ("visa" → "Visa").
func brandName(b string) string {
	switch strings.ToLower(b) {
	case "visa":
		return "Visa"
	case "mastercard":
		return "Mastercard"
	case "amex", "american_express":
		return "American Express"
	case "elo":
		return "Elo"
	case "hipercard":
		return "Hipercard"
	}
	return b
}

// addressLines is a Brazilian address, line by line: street and
// complement; city – UF; CEP; the country when not Brazil.
func addressLines(street, extended, city, region, cep, country string) []string {
	var lines []string
	if extended != "" {
		street = strings.TrimPrefix(street+", "+extended, ", ")
	}
	if street != "" {
		lines = append(lines, street)
	}
	if region != "" {
		city = strings.TrimPrefix(city+" – "+region, " – ")
	}
	if city != "" {
		lines = append(lines, city)
	}
	if cep != "" {
		lines = append(lines, "CEP "+fmtCEP(cep))
	}
	if country != "" && country != "BR" {
		lines = append(lines, country)
	}
	return lines
}

// slipData is the packing slip: what goes in the box and where it goes.
type slipData struct {
	Order   *bcp.Order
	Details orderDetails
}

// packingSlip is a printable page (print CSS hides the admin around it):
// the order number, ship-to, method and the items with their quantities.
func (a *Admin) packingSlip(rw http.ResponseWriter, r *http.Request) {
	l, err := a.loadOrder(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "slip", a.newPage(r, "Separação · "+orderTitle(l.order), "pedidos", slipData{Order: l.order, Details: l.details}))
}
