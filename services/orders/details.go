package orders

import (
	"encoding/json"
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
func details(c *bcp.Checkout, pay *ordersv1.OrderPayment) *ordersv1.OrderDetails {
	d := &ordersv1.OrderDetails{Buyer: &ordersv1.OrderBuyer{}}
	if b := c.Buyer; b != nil {
		d.Buyer = &ordersv1.OrderBuyer{FirstName: clip(b.FirstName), LastName: clip(b.LastName), Email: clip(b.Email), PhoneNumber: clip(b.PhoneNumber)}
	}
	if f := c.Fulfillment; f != nil {
		for _, m := range f.Methods {
			if m.Type != bcp.MethodShipping && m.Type != bcp.MethodPickup {
				continue
			}
			dest, ok := selectedDestination(m)
			if !ok {
				continue
			}
			del := &ordersv1.OrderDelivery{MethodType: m.Type, LineItemIds: m.LineItemIDs}
			addr := dest.PostalAddress
			if dest.Address != nil {
				addr = *dest.Address
			}
			del.Address = address(addr)
			if m.Type == bcp.MethodPickup {
				del.LocationName = clip(dest.Name)
			}
			for _, g := range m.Groups {
				if g.SelectedOptionID == nil {
					continue
				}
				for _, opt := range g.Options {
					if opt.ID != *g.SelectedOptionID {
						continue
					}
					del.OptionTitle, del.OptionDescription, del.Carrier = clip(opt.Title), clip(opt.Description), clip(opt.Carrier)
					for _, t := range opt.Totals {
						if t.Type == bcp.TotalTotal {
							del.OptionAmount = t.Amount
						}
					}
					if del.OptionAmount == 0 && len(opt.Totals) > 0 {
						del.OptionAmount = opt.Totals[0].Amount
					}
				}
				if len(m.LineItemIDs) == 0 {
					del.LineItemIds = append(del.LineItemIds, g.LineItemIDs...)
				}
			}
			d.Deliveries = append(d.Deliveries, del)
		}
	}
	d.Payment = instrumentPayment(c)
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

func address(a bcp.PostalAddress) *ordersv1.OrderAddress {
	return &ordersv1.OrderAddress{FirstName: clip(a.FirstName), LastName: clip(a.LastName), PhoneNumber: clip(a.PhoneNumber),
		StreetAddress: clip(a.StreetAddress), ExtendedAddress: clip(a.ExtendedAddress), AddressLocality: clip(a.AddressLocality),
		AddressRegion: clip(a.AddressRegion), PostalCode: clip(a.PostalCode), AddressCountry: clip(a.AddressCountry)}
}

// instrumentPayment reads the completed checkout's instrument: its type,
// handler and display (card brand and last digits, or the Pix txid).
func instrumentPayment(c *bcp.Checkout) *ordersv1.OrderPayment {
	p := &ordersv1.OrderPayment{}
	if c.Payment == nil || len(c.Payment.Instruments) == 0 {
		return p
	}
	in := c.Payment.Instruments[0]
	for _, x := range c.Payment.Instruments {
		if x.Selected != nil && *x.Selected {
			in = x
		}
	}
	p.Method, p.HandlerId = clip(in.Type), clip(in.HandlerID)
	var disp struct {
		Brand      string `json:"brand"`
		LastDigits string `json:"last_digits"`
		Pix        struct {
			Txid string `json:"txid"`
		} `json:"pix"`
	}
	if len(in.Display) > 0 && json.Unmarshal(in.Display, &disp) == nil {
		p.CardBrand, p.CardLastDigits, p.Txid = clip(disp.Brand), clip(disp.LastDigits), clip(disp.Pix.Txid)
	}
	return p
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
