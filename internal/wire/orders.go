package wire

import (
	"encoding/json"

	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// PaidCheckout is what the orders service makes an order of, read from
// the completed checkout c: currency, lines and totals, attribution, the
// buyer, the shipping and pickup methods that settled a destination
// (with that destination and each group's selected option) and the
// selected instrument with its display. Strings go as c holds them.
func PaidCheckout(c *bcp.Checkout) *ordersv1.PaidCheckout {
	p := &ordersv1.PaidCheckout{Currency: c.Currency, Totals: OrderTotals(c.Totals), Attribution: c.Attribution,
		Lines: make([]*ordersv1.PaidLine, len(c.LineItems))}
	for i, l := range c.LineItems {
		p.Lines[i] = &ordersv1.PaidLine{Id: l.ID, ItemId: l.Item.ID, Title: l.Item.Title, Price: l.Item.Price, ImageUrl: l.Item.ImageURL,
			Quantity: l.Quantity, Totals: OrderTotals(l.Totals), ParentId: l.ParentID}
	}
	if b := c.Buyer; b != nil {
		p.Buyer = &ordersv1.OrderBuyer{FirstName: b.FirstName, LastName: b.LastName, Email: b.Email, PhoneNumber: b.PhoneNumber}
	}
	if c.Fulfillment != nil {
		for _, m := range c.Fulfillment.Methods {
			if pm := paidMethod(m); pm != nil {
				p.Methods = append(p.Methods, pm)
			}
		}
	}
	if c.Payment != nil && len(c.Payment.Instruments) > 0 {
		p.Instrument = instrument(c.Payment.Instruments)
	}
	return p
}

// paidMethod is a shipping or pickup method with its selected destination
// (the one selected_destination_id names, or the only one); nil for any
// other method.
func paidMethod(m bcp.FulfillmentMethod) *ordersv1.PaidMethod {
	if m.Type != bcp.MethodShipping && m.Type != bcp.MethodPickup {
		return nil
	}
	var dest *bcp.Destination
	switch {
	case m.SelectedDestinationID != nil:
		for i := range m.Destinations {
			if m.Destinations[i].ID == *m.SelectedDestinationID {
				dest = &m.Destinations[i]
				break
			}
		}
	case len(m.Destinations) == 1:
		dest = &m.Destinations[0]
	}
	if dest == nil {
		return nil
	}
	addr := dest.PostalAddress
	if dest.Address != nil {
		addr = *dest.Address
	}
	pm := &ordersv1.PaidMethod{Type: m.Type, LineItemIds: m.LineItemIDs, Address: OrderAddress(addr), LocationName: dest.Name}
	for _, g := range m.Groups {
		pg := &ordersv1.PaidGroup{LineItemIds: g.LineItemIDs, Selected: g.SelectedOptionID != nil}
		if pg.Selected {
			for _, o := range g.Options {
				if o.ID == *g.SelectedOptionID {
					pg.Option = &ordersv1.PaidOption{Title: o.Title, Description: o.Description, Carrier: o.Carrier, Totals: OrderTotals(o.Totals)}
				}
			}
		}
		pm.Groups = append(pm.Groups, pg)
	}
	return pm
}

// instrument is the selected instrument of ins (the last one marked
// selected, or else the first): type, handler and what its display says
// (card brand and last digits, Pix txid; nothing of a display that is not
// that object).
func instrument(ins []bcp.PaymentInstrument) *ordersv1.OrderPayment {
	in := ins[0]
	for _, x := range ins {
		if x.Selected != nil && *x.Selected {
			in = x
		}
	}
	p := &ordersv1.OrderPayment{Method: in.Type, HandlerId: in.HandlerID}
	PaymentDisplay(p, in.Display)
	return p
}

// PaymentDisplay fills p's card brand and last digits and Pix txid from an
// instrument's display object (the agent's, or the attempt's as payments
// recorded it); a display that is not that object leaves them empty.
func PaymentDisplay(p *ordersv1.OrderPayment, display []byte) {
	if len(display) == 0 {
		return
	}
	var d struct {
		Brand      string `json:"brand"`
		LastDigits string `json:"last_digits"`
		Pix        struct {
			Txid string `json:"txid"`
		} `json:"pix"`
	}
	if json.Unmarshal(display, &d) == nil {
		p.CardBrand, p.CardLastDigits, p.Txid = d.Brand, d.LastDigits, d.Pix.Txid
	}
}

// OrderAddress is a as the orders messages carry it.
func OrderAddress(a bcp.PostalAddress) *ordersv1.OrderAddress {
	return &ordersv1.OrderAddress{FirstName: a.FirstName, LastName: a.LastName, PhoneNumber: a.PhoneNumber,
		StreetAddress: a.StreetAddress, ExtendedAddress: a.ExtendedAddress, AddressLocality: a.AddressLocality,
		AddressRegion: a.AddressRegion, PostalCode: a.PostalCode, AddressCountry: a.AddressCountry}
}

// PostalAddress is the BCP address of an orders message's a.
func PostalAddress(a *ordersv1.OrderAddress) bcp.PostalAddress {
	return bcp.PostalAddress{ExtendedAddress: a.GetExtendedAddress(), StreetAddress: a.GetStreetAddress(), AddressLocality: a.GetAddressLocality(),
		AddressRegion: a.GetAddressRegion(), AddressCountry: a.GetAddressCountry(), PostalCode: a.GetPostalCode(), FirstName: a.GetFirstName(),
		LastName: a.GetLastName(), PhoneNumber: a.GetPhoneNumber()}
}

// OrderTotals are ts as the orders messages carry them (nil for none).
func OrderTotals(ts []bcp.Total) []*ordersv1.OrderTotal {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*ordersv1.OrderTotal, len(ts))
	back := make([]ordersv1.OrderTotal, len(ts)) // one allocation for the messages
	for i, t := range ts {
		o := &back[i]
		o.Type, o.DisplayText, o.Amount = t.Type, t.DisplayText, t.Amount
		out[i] = o
		for _, l := range t.Lines {
			out[i].Lines = append(out[i].Lines, &ordersv1.OrderTotalLine{DisplayText: l.DisplayText, Amount: l.Amount})
		}
	}
	return out
}

// Totals are the BCP totals of an orders message's ts (nil for none).
func Totals(ts []*ordersv1.OrderTotal) []bcp.Total {
	if len(ts) == 0 {
		return nil
	}
	out := make([]bcp.Total, len(ts))
	for i, t := range ts {
		out[i] = bcp.Total{Type: t.GetType(), DisplayText: t.GetDisplayText(), Amount: t.GetAmount()}
		for _, l := range t.GetLines() {
			out[i].Lines = append(out[i].Lines, bcp.TotalLine{DisplayText: l.GetDisplayText(), Amount: l.GetAmount()})
		}
	}
	return out
}
