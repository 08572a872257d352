package orders

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/bcpdev/bcp/internal/jsonstr"
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

// marshalDetails is detailsJSON.Marshal(d) written directly, without
// protojson's reflection: the same JSON value (proto names, fields left
// out when empty, int64 as a quoted decimal, messages that are set even
// when empty), stored as jsonb and read by decodeDetails. A string that is
// not valid UTF-8 takes protojson's path, which refuses it.
func marshalDetails(d *ordersv1.OrderDetails) ([]byte, error) {
	w := detailsWriter{b: make([]byte, 0, 512)}
	w.b = append(w.b, '{')
	if b := d.GetBuyer(); b != nil {
		w.key("buyer")
		w.b = append(w.b, '{')
		w.str("first_name", b.GetFirstName())
		w.str("last_name", b.GetLastName())
		w.str("email", b.GetEmail())
		w.str("phone_number", b.GetPhoneNumber())
		w.end()
	}
	if ds := d.GetDeliveries(); len(ds) > 0 {
		w.key("deliveries")
		w.b = append(w.b, '[')
		for i, del := range ds {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, '{')
			w.str("method_type", del.GetMethodType())
			w.str("option_title", del.GetOptionTitle())
			w.str("option_description", del.GetOptionDescription())
			w.str("carrier", del.GetCarrier())
			if n := del.GetOptionAmount(); n != 0 {
				w.key("option_amount")
				w.b = append(w.b, '"')
				w.b = strconv.AppendInt(w.b, n, 10)
				w.b = append(w.b, '"')
			}
			w.str("location_name", del.GetLocationName())
			if a := del.GetAddress(); a != nil {
				w.key("address")
				w.b = append(w.b, '{')
				w.str("first_name", a.GetFirstName())
				w.str("last_name", a.GetLastName())
				w.str("phone_number", a.GetPhoneNumber())
				w.str("street_address", a.GetStreetAddress())
				w.str("extended_address", a.GetExtendedAddress())
				w.str("address_locality", a.GetAddressLocality())
				w.str("address_region", a.GetAddressRegion())
				w.str("postal_code", a.GetPostalCode())
				w.str("address_country", a.GetAddressCountry())
				w.end()
			}
			if ids := del.GetLineItemIds(); len(ids) > 0 {
				w.key("line_item_ids")
				w.b = append(w.b, '[')
				for j, id := range ids {
					if j > 0 {
						w.b = append(w.b, ',')
					}
					w.quote(id)
				}
				w.b = append(w.b, ']')
			}
			w.end()
		}
		w.b = append(w.b, ']')
	}
	if p := d.GetPayment(); p != nil {
		w.key("payment")
		w.b = append(w.b, '{')
		w.str("method", p.GetMethod())
		w.str("handler_id", p.GetHandlerId())
		w.str("end_to_end_id", p.GetEndToEndId())
		w.str("txid", p.GetTxid())
		w.str("card_brand", p.GetCardBrand())
		w.str("card_last_digits", p.GetCardLastDigits())
		w.end()
	}
	w.b = append(w.b, '}')
	if w.invalid {
		return detailsJSON.Marshal(d)
	}
	return w.b, nil
}

// detailsWriter appends JSON to b.
type detailsWriter struct {
	b       []byte
	invalid bool // a string was not valid UTF-8
}

// key starts an object's member: after a comma unless it is the first
// (the object just opened).
func (w *detailsWriter) key(k string) {
	if w.b[len(w.b)-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

// end closes an object.
func (w *detailsWriter) end() { w.b = append(w.b, '}') }

// str writes k: v unless v is empty (proto3: not emitted).
func (w *detailsWriter) str(k, v string) {
	if v == "" {
		return
	}
	w.key(k)
	w.quote(v)
}

// quote appends v as a JSON string.
func (w *detailsWriter) quote(v string) {
	if !utf8.ValidString(v) {
		w.invalid = true
	}
	w.b = jsonstr.Append(w.b, v)
}
