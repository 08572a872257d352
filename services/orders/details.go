package orders

import (
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// details is what the merchant needs to ship and account for the order
// (issue 34) and the BCP order does not carry: the buyer, each settled
// delivery with its option and address, and the payment. Read from the
// completed checkout; the payment from the caller (the checkout service
// has the payments service's attempt), or else from the checkout's
// instrument.
func details(c *ordersv1.PaidCheckout, pay *ordersv1.OrderPayment) *ordersv1.OrderDetails {
	d := &ordersv1.OrderDetails{Buyer: &ordersv1.OrderBuyer{}}
	if b := c.GetBuyer(); b != nil {
		d.Buyer = &ordersv1.OrderBuyer{FirstName: clip(b.GetFirstName()), LastName: clip(b.GetLastName()), Email: clip(b.GetEmail()), PhoneNumber: clip(b.GetPhoneNumber())}
	}
	for _, m := range c.GetMethods() {
		if !settled(m) {
			continue
		}
		del := &ordersv1.OrderDelivery{MethodType: m.GetType(), LineItemIds: m.GetLineItemIds(), Address: address(m.GetAddress())}
		if m.GetType() == bcp.MethodPickup {
			del.LocationName = clip(m.GetLocationName())
		}
		for _, g := range m.GetGroups() {
			if !g.GetSelected() {
				continue
			}
			if opt := g.GetOption(); opt != nil {
				del.OptionTitle, del.OptionDescription, del.Carrier = clip(opt.GetTitle()), clip(opt.GetDescription()), clip(opt.GetCarrier())
				for _, t := range opt.GetTotals() {
					if t.GetType() == bcp.TotalTotal {
						del.OptionAmount = t.GetAmount()
					}
				}
				if del.OptionAmount == 0 && len(opt.GetTotals()) > 0 {
					del.OptionAmount = opt.GetTotals()[0].GetAmount()
				}
			}
			if len(m.GetLineItemIds()) == 0 {
				del.LineItemIds = append(del.LineItemIds, g.GetLineItemIds()...)
			}
		}
		d.Deliveries = append(d.Deliveries, del)
	}
	d.Payment = instrumentPayment(c.GetInstrument())
	if pay != nil {
		// The caller's record wins; what it left empty comes from the
		// checkout's instrument.
		in := d.Payment
		or := func(a, b string) string {
			if a != "" {
				return clip(a)
			}
			return b
		}
		d.Payment = &ordersv1.OrderPayment{Method: or(pay.GetMethod(), in.GetMethod()), HandlerId: or(pay.GetHandlerId(), in.GetHandlerId()),
			EndToEndId: clip(pay.GetEndToEndId()), Txid: or(pay.GetTxid(), in.GetTxid()),
			CardBrand: in.GetCardBrand(), CardLastDigits: in.GetCardLastDigits()}
		if pay.GetCardBrand() != "" || pay.GetCardLastDigits() != "" {
			d.Payment.CardBrand, d.Payment.CardLastDigits = clip(pay.GetCardBrand()), clip(pay.GetCardLastDigits())
		}
	}
	return d
}

func address(a *ordersv1.OrderAddress) *ordersv1.OrderAddress {
	return &ordersv1.OrderAddress{FirstName: clip(a.GetFirstName()), LastName: clip(a.GetLastName()), PhoneNumber: clip(a.GetPhoneNumber()),
		StreetAddress: clip(a.GetStreetAddress()), ExtendedAddress: clip(a.GetExtendedAddress()), AddressLocality: clip(a.GetAddressLocality()),
		AddressRegion: clip(a.GetAddressRegion()), PostalCode: clip(a.GetPostalCode()), AddressCountry: clip(a.GetAddressCountry())}
}

// instrumentPayment is the completed checkout's instrument as recorded:
// its type, handler and display (card brand and last digits, or the Pix
// txid), bounded.
func instrumentPayment(in *ordersv1.OrderPayment) *ordersv1.OrderPayment {
	return &ordersv1.OrderPayment{Method: clip(in.GetMethod()), HandlerId: clip(in.GetHandlerId()), Txid: clip(in.GetTxid()),
		CardBrand: clip(in.GetCardBrand()), CardLastDigits: clip(in.GetCardLastDigits())}
}

// clip bounds what an agent typed before it is stored.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "")
	}
	return s
}

// buyerName is "first last".
func buyerName(b *ordersv1.OrderBuyer) string {
	return strings.TrimSpace(b.GetFirstName() + " " + b.GetLastName())
}

var detailsJSON = protojson.MarshalOptions{UseProtoNames: true}

// decodeDetails reads the stored details; nil for orders created before
// they were recorded (or unreadable ones: the order still shows).
func decodeDetails(raw []byte) *ordersv1.OrderDetails {
	if len(raw) == 0 {
		return nil
	}
	d := &ordersv1.OrderDetails{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, d); err != nil {
		return nil
	}
	return d
}
