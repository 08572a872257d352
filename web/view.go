package web

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bcpdev/bcp/protocol/bcp"
)

func buildView(c *bcp.Checkout, p *pixInfo, state string, now time.Time) *checkoutView {
	v := &checkoutView{State: state, Status: c.Status}
	switch state {
	case statePaid, stateCanceled:
	default:
		v.Poll = true
	}
	for _, li := range c.LineItems {
		it := itemView{Title: li.Item.Title, Quantity: li.Quantity, UnitPrice: li.Item.Price}
		if it.Title == "" {
			it.Title = li.Item.ID
		}
		it.LineTotal, _ = mulCents(li.Item.Price, li.Quantity)
		for _, t := range li.Totals {
			if t.Type == bcp.TotalSubtotal {
				it.LineTotal = t.Amount
			}
		}
		v.Items = append(v.Items, it)
	}
	for _, t := range c.Totals {
		v.Totals = append(v.Totals, totalView{Label: totalLabel(t), Amount: t.Amount, IsTotal: t.Type == bcp.TotalTotal})
	}
	v.Delivery = deliveries(c.Fulfillment)
	if state == stateAction {
		// continue_url normally is this page; when it is another (the
		// bank's challenge), that is where the buyer has to go.
		if u := safeLink(c.ContinueURL); u != "" && !strings.HasSuffix(string(u), "/checkout/"+c.ID) {
			v.ContinueURL = u
		}
	}
	for _, m := range c.Messages {
		switch {
		case m.Code == bcp.CodePaymentFailed:
			// Written for the agent ("conclua novamente..."): the page
			// says it in the buyer's terms instead.
		case m.Code == "expired" && state == stateCanceled:
			v.Expired = true
		case state == stateAction && m.Type == bcp.MessageError:
			v.Alerts = append(v.Alerts, m)
		case m.Type == bcp.MessageInfo && (state == statePixPending || state == statePaid):
			// The Pix panel and the thank-you state already say it.
		default:
			v.Notes = append(v.Notes, m)
		}
	}
	if c.Order != nil {
		v.Order = &orderRef{ID: c.Order.ID, Label: c.Order.Label, Permalink: safeLink(c.Order.PermalinkURL)}
	}
	for _, l := range c.Links {
		if u := safeLink(l.URL); u != "" {
			v.Links = append(v.Links, linkView{Label: linkLabel(l), URL: string(u)})
		}
	}
	if c.ExpiresAt != nil && v.Poll {
		v.ExpiresLocal = localTime(*c.ExpiresAt)
	}
	if p != nil && state == statePixPending {
		pv := &pixView{CopiaECola: p.data.CopiaECola, TxID: p.data.TxID, AttemptID: p.data.AttemptID}
		pv.Amount, pv.HasAmount = parsePixAmount(p.data.Amount)
		if !pv.HasAmount {
			pv.Amount, pv.HasAmount = grandTotal(c)
		}
		if !p.expiresAt.IsZero() {
			pv.ExpiresISO = p.expiresAt.UTC().Format(time.RFC3339)
			pv.ExpiresLocal = localTime(p.expiresAt)
			pv.RemainingSeconds = max(0, int64(p.expiresAt.Sub(now)/time.Second))
			pv.Remaining = clock(pv.RemainingSeconds)
		}
		v.Pix = pv
	}
	return v
}

func grandTotal(c *bcp.Checkout) (int64, bool) {
	for _, t := range c.Totals {
		if t.Type == bcp.TotalTotal {
			return t.Amount, true
		}
	}
	return 0, false
}

// totalLabel names a total in Portuguese by its type; the merchant's own
// display text is the fallback for types we do not know.
func totalLabel(t bcp.Total) string {
	switch t.Type {
	case bcp.TotalSubtotal:
		return "Subtotal"
	case bcp.TotalItemsDiscount, bcp.TotalDiscount:
		return "Descontos"
	case bcp.TotalFulfillment:
		return "Frete"
	case bcp.TotalTax:
		return "Impostos"
	case bcp.TotalFee:
		return "Taxas"
	case bcp.TotalTotal:
		return "Total"
	}
	if t.DisplayText != "" {
		return t.DisplayText
	}
	return t.Type
}

func linkLabel(l bcp.Link) string {
	switch l.Type {
	case "privacy_policy":
		return "Política de privacidade"
	case "terms_of_service":
		return "Termos de uso"
	case "refund_policy":
		return "Política de reembolso"
	case "shipping_policy":
		return "Política de entrega"
	case "faq":
		return "Dúvidas frequentes"
	}
	if l.Title != "" {
		return l.Title
	}
	return l.Type
}

// deliveries lists each fulfillment method's selected destination and
// option; nothing is shown for what is not selected yet.
func deliveries(f *bcp.Fulfillment) []deliveryView {
	if f == nil {
		return nil
	}
	var out []deliveryView
	for _, m := range f.Methods {
		d := deliveryView{Pickup: m.Type == bcp.MethodPickup}
		shown := false
		if m.SelectedDestinationID != nil {
			for _, dest := range m.Destinations {
				if dest.ID != *m.SelectedDestinationID {
					continue
				}
				shown = true
				if d.Pickup {
					d.Name = dest.Name
					if dest.Address != nil {
						d.Lines = addressLines(*dest.Address)
					}
				} else {
					d.Name = strings.TrimSpace(dest.FirstName + " " + dest.LastName)
					d.Lines = addressLines(dest.PostalAddress)
				}
			}
		}
		for _, g := range m.Groups {
			if g.SelectedOptionID == nil {
				continue
			}
			for _, o := range g.Options {
				if o.ID != *g.SelectedOptionID {
					continue
				}
				shown = true
				d.Option, d.Carrier, d.Description = o.Title, o.Carrier, o.Description
				for _, t := range o.Totals {
					if t.Type == bcp.TotalTotal || !d.HasAmount {
						d.Amount, d.HasAmount = t.Amount, true
					}
				}
			}
		}
		if shown {
			out = append(out, d)
		}
	}
	return out
}

func addressLines(a bcp.PostalAddress) []string {
	var lines []string
	street := a.StreetAddress
	if a.ExtendedAddress != "" {
		street = strings.TrimPrefix(street+", "+a.ExtendedAddress, ", ")
	}
	if street != "" {
		lines = append(lines, street)
	}
	city := a.AddressLocality
	if a.AddressRegion != "" {
		city = strings.TrimPrefix(city+" – "+a.AddressRegion, " – ")
	}
	if city != "" {
		lines = append(lines, city)
	}
	if a.PostalCode != "" {
		lines = append(lines, "CEP "+a.PostalCode)
	}
	return lines
}

// safeLink keeps only absolute http(s) URLs and same-origin paths; the
// result is still escaped by html/template, this only decides whether to
// show a link at all.
func safeLink(s string) template.URL {
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.Contains(s, `\`) {
		return template.URL(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return template.URL(u.String())
}

// qrURL picks the QR image the CSP lets the page show: a same-origin URL
// (made relative, so a TLS-terminating proxy does not matter) or a
// base64 PNG/SVG data URL. SVG first: it stays sharp at any size. Hosts
// compare without their ports: the agent may have reached the merchant on
// another port (or none) than the buyer's browser, and the path is served
// by this same platform for the same merchant either way.
func qrURL(host string, d pixDisplay) template.URL {
	for _, s := range []string{d.QRSVGURL, d.QRPNGURL} {
		switch {
		case s == "":
		case strings.HasPrefix(s, "data:image/png;base64,"), strings.HasPrefix(s, "data:image/svg+xml;base64,"):
			return template.URL(s)
		case strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.Contains(s, `\`):
			return template.URL(s)
		default:
			u, err := url.Parse(s)
			if err == nil && (u.Scheme == "https" || u.Scheme == "http") && strings.EqualFold(u.Hostname(), hostOnly(host)) {
				return template.URL(u.RequestURI())
			}
		}
	}
	return ""
}

// hostOnly drops a port from a Host header value ("loja.localhost:8080").
func hostOnly(h string) string {
	if u, err := url.Parse("//" + h); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return h
}

func localTime(t time.Time) string {
	return t.In(brasilia).Format("02/01/2006 às 15:04")
}

// clock renders seconds as "29:41" or "1:02:03".
func clock(s int64) string {
	h, m, sec := s/3600, s/60%60, s%60
	two := func(n int64) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }
	if h > 0 {
		return strconv.FormatInt(h, 10) + ":" + two(m) + ":" + two(sec)
	}
	return strconv.FormatInt(m, 10) + ":" + two(sec)
}
