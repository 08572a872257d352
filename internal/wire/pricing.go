// Package wire converts the BCP wire types (protocol/bcp: what agents send
// and receive, and the stored session document) to and from the typed
// protobuf messages the services exchange, so no service hands another a
// whole checkout as JSON. Every conversion carries what the receiving
// service reads or returns as the checkout's JSON did: a selection sent
// as "" is kept apart from none (optional fields), and an empty array is
// no array (the JSON members are omitempty).
package wire

import (
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// QuoteRequest is what pricing needs of checkout c, whose previous priced
// state is prev (nil on create): its id, lines, currency, buyer e-mail,
// fulfillment methods and discount codes as submitted, and prev's methods.
func QuoteRequest(c, prev *bcp.Checkout, capabilities []string, at *timestamppb.Timestamp) *pricingv1.QuoteRequest {
	r := &pricingv1.QuoteRequest{Capabilities: capabilities, At: at, CheckoutId: c.ID, Currency: c.Currency, Lines: make([]*pricingv1.QuoteLine, len(c.LineItems))}
	for i, l := range c.LineItems {
		r.Lines[i] = &pricingv1.QuoteLine{Id: l.ID, VariantId: l.Item.ID, Quantity: l.Quantity, UnitPrice: l.Item.Price}
	}
	if c.Buyer != nil {
		r.BuyerEmail = c.Buyer.Email
	}
	if c.Fulfillment != nil {
		r.Methods = methodsToProto(c.Fulfillment.Methods)
	}
	if c.Discounts != nil {
		r.DiscountCodes = c.Discounts.Codes
	}
	if prev != nil && prev.Fulfillment != nil {
		r.PreviousMethods = methodsToProto(prev.Fulfillment.Methods)
	}
	return r
}

// QuoteInput is the checkout and previous state pricing's engine reads,
// rebuilt from a QuoteRequest (prev nil when there is none).
func QuoteInput(r *pricingv1.QuoteRequest) (c, prev *bcp.Checkout) {
	c = &bcp.Checkout{ID: r.GetCheckoutId(), Currency: r.GetCurrency(), LineItems: make([]bcp.LineItem, len(r.GetLines()))}
	for i, l := range r.GetLines() {
		c.LineItems[i] = bcp.LineItem{ID: l.GetId(), Item: bcp.Item{ID: l.GetVariantId(), Price: l.GetUnitPrice()}, Quantity: l.GetQuantity()}
	}
	if e := r.GetBuyerEmail(); e != "" {
		c.Buyer = &bcp.Buyer{Email: e}
	}
	if ms := r.GetMethods(); len(ms) > 0 {
		c.Fulfillment = &bcp.Fulfillment{Methods: methodsFromProto(ms)}
	}
	if codes := r.GetDiscountCodes(); len(codes) > 0 {
		c.Discounts = &bcp.Discounts{Codes: codes}
	}
	if ms := r.GetPreviousMethods(); len(ms) > 0 {
		prev = &bcp.Checkout{Fulfillment: &bcp.Fulfillment{Methods: methodsFromProto(ms)}}
	}
	return c, prev
}

// QuoteResponse is priced, the engine's output for in, as pricing answers
// it: line and checkout totals, fulfillment, discounts and the messages
// pricing added after in's.
func QuoteResponse(in, priced *bcp.Checkout, automatic []string) *pricingv1.QuoteResponse {
	r := &pricingv1.QuoteResponse{AutomaticDiscountIds: automatic, Totals: totalsToProto(priced.Totals),
		LineTotals: make([]*pricingv1.LineTotals, len(priced.LineItems))}
	lines := make([]pricingv1.LineTotals, len(priced.LineItems)) // one allocation for the messages
	for i, l := range priced.LineItems {
		lines[i].Totals = totalsToProto(l.Totals)
		r.LineTotals[i] = &lines[i]
	}
	if f := priced.Fulfillment; f != nil {
		r.Fulfillment = &pricingv1.Fulfillment{Methods: methodsToProto(f.Methods)}
		if len(f.AvailableMethods) > 0 {
			r.Fulfillment.AvailableMethods = make([]*pricingv1.AvailableMethod, 0, len(f.AvailableMethods))
		}
		for _, a := range f.AvailableMethods {
			r.Fulfillment.AvailableMethods = append(r.Fulfillment.AvailableMethods, &pricingv1.AvailableMethod{
				Type: a.Type, LineItemIds: a.LineItemIDs, FulfillableOn: a.FulfillableOn, Description: a.Description})
		}
	}
	if d := priced.Discounts; d != nil {
		r.Discounts = &pricingv1.Discounts{Codes: d.Codes}
		if len(d.Applied) > 0 {
			r.Discounts.Applied = make([]*pricingv1.AppliedDiscount, 0, len(d.Applied))
		}
		for _, a := range d.Applied {
			p := &pricingv1.AppliedDiscount{Code: a.Code, Title: a.Title, Amount: a.Amount, Automatic: a.Automatic, Method: a.Method,
				Priority: int32(a.Priority), Provisional: a.Provisional, Eligibility: a.Eligibility}
			if len(a.Allocations) > 0 {
				p.Allocations = make([]*pricingv1.Allocation, 0, len(a.Allocations))
			}
			for _, al := range a.Allocations {
				p.Allocations = append(p.Allocations, &pricingv1.Allocation{Path: al.Path, Amount: al.Amount})
			}
			r.Discounts.Applied = append(r.Discounts.Applied, p)
		}
	}
	if added := priced.Messages[min(len(in.Messages), len(priced.Messages)):]; len(added) > 0 {
		r.Messages = make([]*pricingv1.Message, 0, len(added))
	}
	for _, m := range priced.Messages[min(len(in.Messages), len(priced.Messages)):] {
		r.Messages = append(r.Messages, &pricingv1.Message{Type: m.Type, Code: m.Code, Path: m.Path, ContentType: m.ContentType,
			Content: m.Content, Severity: m.Severity, Presentation: m.Presentation})
	}
	return r
}

// ApplyQuote writes a quote onto the checkout it prices: line totals (c's
// lines are the request's, in order), totals, fulfillment and discounts
// (pricing's, replacing what was submitted) and pricing's messages after
// c's.
func ApplyQuote(c *bcp.Checkout, r *pricingv1.QuoteResponse) {
	for i, lt := range r.GetLineTotals() {
		if i < len(c.LineItems) {
			c.LineItems[i].Totals = totalsFromProto(lt.GetTotals())
		}
	}
	c.Totals = totalsFromProto(r.GetTotals())
	c.Fulfillment = nil
	if f := r.GetFulfillment(); f != nil {
		c.Fulfillment = &bcp.Fulfillment{Methods: methodsFromProto(f.GetMethods())}
		if len(f.GetAvailableMethods()) > 0 {
			c.Fulfillment.AvailableMethods = make([]bcp.AvailableMethod, 0, len(f.GetAvailableMethods()))
		}
		for _, a := range f.GetAvailableMethods() {
			c.Fulfillment.AvailableMethods = append(c.Fulfillment.AvailableMethods, bcp.AvailableMethod{
				Type: a.GetType(), LineItemIDs: a.GetLineItemIds(), FulfillableOn: a.GetFulfillableOn(), Description: a.GetDescription()})
		}
	}
	c.Discounts = nil
	if d := r.GetDiscounts(); d != nil {
		c.Discounts = &bcp.Discounts{Codes: d.GetCodes()}
		if len(d.GetApplied()) > 0 {
			c.Discounts.Applied = make([]bcp.AppliedDiscount, 0, len(d.GetApplied()))
		}
		for _, a := range d.GetApplied() {
			out := bcp.AppliedDiscount{Code: a.GetCode(), Title: a.GetTitle(), Amount: a.GetAmount(), Automatic: a.GetAutomatic(),
				Method: a.GetMethod(), Priority: int(a.GetPriority()), Provisional: a.GetProvisional(), Eligibility: a.GetEligibility()}
			if len(a.GetAllocations()) > 0 {
				out.Allocations = make([]bcp.Allocation, 0, len(a.GetAllocations()))
			}
			for _, al := range a.GetAllocations() {
				out.Allocations = append(out.Allocations, bcp.Allocation{Path: al.GetPath(), Amount: al.GetAmount()})
			}
			c.Discounts.Applied = append(c.Discounts.Applied, out)
		}
	}
	c.Messages = slices.Grow(c.Messages, len(r.GetMessages()))
	for _, m := range r.GetMessages() {
		c.Messages = append(c.Messages, bcp.Message{Type: m.GetType(), Code: m.GetCode(), Path: m.GetPath(), ContentType: m.GetContentType(),
			Content: m.GetContent(), Severity: m.GetSeverity(), Presentation: m.GetPresentation()})
	}
}

func totalsToProto(ts []bcp.Total) []*pricingv1.Total {
	if ts == nil {
		return nil
	}
	out := make([]*pricingv1.Total, len(ts))
	back := make([]pricingv1.Total, len(ts)) // one allocation for the messages
	for i, t := range ts {
		p := &back[i]
		p.Type, p.DisplayText, p.Amount = t.Type, t.DisplayText, t.Amount
		out[i] = p
	}
	return out
}

func totalsFromProto(ts []*pricingv1.Total) []bcp.Total {
	if len(ts) == 0 {
		return nil
	}
	out := make([]bcp.Total, len(ts))
	for i, t := range ts {
		out[i] = bcp.Total{Type: t.GetType(), DisplayText: t.GetDisplayText(), Amount: t.GetAmount()}
	}
	return out
}

func addressToProto(a bcp.PostalAddress) *pricingv1.PostalAddress {
	if a == (bcp.PostalAddress{}) {
		return nil
	}
	return &pricingv1.PostalAddress{ExtendedAddress: a.ExtendedAddress, StreetAddress: a.StreetAddress, AddressLocality: a.AddressLocality,
		AddressRegion: a.AddressRegion, AddressCountry: a.AddressCountry, PostalCode: a.PostalCode, FirstName: a.FirstName,
		LastName: a.LastName, PhoneNumber: a.PhoneNumber}
}

func addressFromProto(a *pricingv1.PostalAddress) bcp.PostalAddress {
	return bcp.PostalAddress{ExtendedAddress: a.GetExtendedAddress(), StreetAddress: a.GetStreetAddress(), AddressLocality: a.GetAddressLocality(),
		AddressRegion: a.GetAddressRegion(), AddressCountry: a.GetAddressCountry(), PostalCode: a.GetPostalCode(), FirstName: a.GetFirstName(),
		LastName: a.GetLastName(), PhoneNumber: a.GetPhoneNumber()}
}

func methodsToProto(ms []bcp.FulfillmentMethod) []*pricingv1.FulfillmentMethod {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*pricingv1.FulfillmentMethod, len(ms))
	for i, m := range ms {
		p := &pricingv1.FulfillmentMethod{Id: m.ID, Type: m.Type, LineItemIds: m.LineItemIDs, SelectedDestinationId: m.SelectedDestinationID}
		if len(m.Destinations) > 0 {
			p.Destinations = make([]*pricingv1.Destination, 0, len(m.Destinations))
		}
		if len(m.Groups) > 0 {
			p.Groups = make([]*pricingv1.FulfillmentGroup, 0, len(m.Groups))
		}
		for _, d := range m.Destinations {
			pd := &pricingv1.Destination{Id: d.ID, PostalAddress: addressToProto(d.PostalAddress), Name: d.Name}
			if d.Address != nil {
				pd.Address = addressToProto(*d.Address)
				if pd.Address == nil {
					pd.Address = &pricingv1.PostalAddress{}
				}
			}
			p.Destinations = append(p.Destinations, pd)
		}
		for _, g := range m.Groups {
			pg := &pricingv1.FulfillmentGroup{Id: g.ID, LineItemIds: g.LineItemIDs, SelectedOptionId: g.SelectedOptionID}
			if len(g.Options) > 0 {
				pg.Options = make([]*pricingv1.FulfillmentOption, len(g.Options))
				back := make([]pricingv1.FulfillmentOption, len(g.Options)) // one allocation for the messages
				for i, o := range g.Options {
					po := &back[i]
					po.Id, po.Title, po.Description, po.Carrier = o.ID, o.Title, o.Description, o.Carrier
					po.EarliestFulfillmentTime, po.LatestFulfillmentTime, po.Totals = o.EarliestFulfillmentTime, o.LatestFulfillmentTime, totalsToProto(o.Totals)
					pg.Options[i] = po
				}
			}
			p.Groups = append(p.Groups, pg)
		}
		out[i] = p
	}
	return out
}

func methodsFromProto(ms []*pricingv1.FulfillmentMethod) []bcp.FulfillmentMethod {
	if len(ms) == 0 {
		return nil
	}
	out := make([]bcp.FulfillmentMethod, len(ms))
	for i, p := range ms {
		m := bcp.FulfillmentMethod{ID: p.GetId(), Type: p.GetType(), LineItemIDs: p.GetLineItemIds(), SelectedDestinationID: p.SelectedDestinationId}
		if len(p.GetDestinations()) > 0 {
			m.Destinations = make([]bcp.Destination, len(p.GetDestinations()))
		}
		for j, pd := range p.GetDestinations() {
			d := bcp.Destination{ID: pd.GetId(), PostalAddress: addressFromProto(pd.GetPostalAddress()), Name: pd.GetName()}
			if pd.Address != nil {
				a := addressFromProto(pd.GetAddress())
				d.Address = &a
			}
			m.Destinations[j] = d
		}
		if len(p.GetGroups()) > 0 {
			m.Groups = make([]bcp.FulfillmentGroup, 0, len(p.GetGroups()))
		}
		for _, pg := range p.GetGroups() {
			g := bcp.FulfillmentGroup{ID: pg.GetId(), LineItemIDs: pg.GetLineItemIds(), SelectedOptionID: pg.SelectedOptionId}
			if len(pg.GetOptions()) > 0 {
				g.Options = make([]bcp.FulfillmentOption, 0, len(pg.GetOptions()))
			}
			for _, o := range pg.GetOptions() {
				g.Options = append(g.Options, bcp.FulfillmentOption{ID: o.GetId(), Title: o.GetTitle(), Description: o.GetDescription(),
					Carrier: o.GetCarrier(), EarliestFulfillmentTime: o.GetEarliestFulfillmentTime(), LatestFulfillmentTime: o.GetLatestFulfillmentTime(),
					Totals: totalsFromProto(o.GetTotals())})
			}
			m.Groups = append(m.Groups, g)
		}
		out[i] = m
	}
	return out
}
