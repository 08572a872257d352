package checkout

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/wire"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Currency is the only currency merchants sell in.
const Currency = "BRL"

// maxQuantity keeps quantities inside the schema's safe-integer range and
// far from int64 overflow when multiplied by a price.
const maxQuantity = 1_000_000

// built is the outcome of pricing a request: the checkout to return and
// whether any line survived (a create with none is an error_response).
type built struct {
	checkout  *bcp.Checkout
	settings  *tenantsv1.Settings // the merchant settings it was built with
	request   *bcp.Checkout       // normalised writable request, stored for the next update
	noItems   bool
	noItemsBy string // the code explaining why: out_of_stock or item_unavailable
	// automaticDiscounts are the ids of the automatic discounts pricing
	// applied (the checkout shows them without a code or id).
	automaticDiscounts []string
}

// build turns a create/update request into a priced checkout. prev is the
// previous state on update (nil on create). It calls the catalog, pricing
// and the tenant settings; it writes nothing.
// With asShown, items are priced as prev shows them instead of as the
// catalog has them now (complete_checkout's re-check: the stock
// reservation verifies those prices on the locked rows).
func (s *Service) build(ctx context.Context, agent agentInfo, id string, req *bcp.Checkout, prev *bcp.Checkout, tenantID string, asShown bool) (*built, error) {
	out := &bcp.Checkout{ID: id, Currency: Currency, Links: []bcp.Link{}}
	var msgs []bcp.Message

	// Lines: ids are ours; keep the ones the agent echoes on update.
	lines, idMsgs := assignLineIDs(req.LineItems, prev)
	msgs = append(msgs, idMsgs...)

	// Resolve items in the catalog.
	itemIDs := make([]string, 0, len(lines))
	for _, l := range lines {
		itemIDs = append(itemIDs, l.Item.ID)
	}
	var variants map[string]*catalogv1.VariantInfo
	if asShown {
		variants = shownVariants(prev)
	} else if len(itemIDs) > 0 {
		variants = make(map[string]*catalogv1.VariantInfo, len(itemIDs))
		resp, err := s.catalog.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: itemIDs}))
		if err != nil {
			return nil, err
		}
		for _, v := range resp.Msg.GetVariants() {
			variants[v.GetVariant().GetId()] = v
		}
	}
	unavailable, outOfStock := 0, 0
	for _, l := range lines {
		v := variants[l.Item.ID]
		switch {
		case v == nil || !v.GetVariant().GetActive() || !v.GetProductActive():
			unavailable++
			msgs = append(msgs, bcp.Error(bcp.CodeItemUnavailable, bcp.SeverityRecoverable, "$.line_items",
				fmt.Sprintf("O item %q não está disponível para compra e foi removido do carrinho.", l.Item.ID)))
			continue
		case v.GetVariant().GetStock() <= 0:
			outOfStock++
			msgs = append(msgs, bcp.Error(bcp.CodeOutOfStock, bcp.SeverityRecoverable, "$.line_items",
				fmt.Sprintf("%s está esgotado e foi removido do carrinho.", v.GetVariant().GetTitle())))
			continue
		}
		qty := l.Quantity
		if qty > v.GetVariant().GetStock() {
			qty = v.GetVariant().GetStock()
			// The path names the line's index in the response.
			msgs = append(msgs, bcp.Warning(bcp.CodeQuantityAdjusted, "$.line_items["+strconv.Itoa(len(out.LineItems))+"].quantity",
				fmt.Sprintf("Quantidade ajustada: foram pedidas %d unidades de %s, mas só há %d em estoque.", l.Quantity, v.GetVariant().GetTitle(), qty)))
		}
		out.LineItems = append(out.LineItems, bcp.LineItem{
			ID: l.ID, Quantity: qty, ParentID: l.ParentID,
			Item: bcp.Item{ID: l.Item.ID, Title: v.GetVariant().GetTitle(), Price: v.GetVariant().GetPrice(), ImageURL: firstNonEmpty(v.GetVariant().GetImageUrl())},
		})
	}
	if len(out.LineItems) == 0 && len(lines) > 0 {
		code := bcp.CodeItemUnavailable
		if outOfStock > 0 && unavailable == 0 {
			code = bcp.CodeOutOfStock
		}
		if prev == nil {
			return &built{noItems: true, noItemsBy: code}, nil
		}
	}
	if out.LineItems == nil {
		out.LineItems = []bcp.LineItem{}
	}

	// Buyer, consent, context, signals, attribution are the agent's (normalised).
	settings, err := s.settings(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out.Buyer = normaliseBuyer(req.Buyer)
	if agent.has(bcpnames.BuyerConsent) && len(settings.GetConsentPurposes()) > 0 {
		out.Buyer, msgs = applyConsent(out.Buyer, prev, settings.GetConsentPurposes(), msgs)
	}
	out.Context = req.Context
	out.Signals = req.Signals
	out.Attribution = req.Attribution
	if agent.has(bcpnames.Fulfillment) {
		out.Fulfillment = req.Fulfillment
	}
	if agent.has(bcpnames.Discount) && req.Discounts != nil {
		out.Discounts = &bcp.Discounts{Codes: req.Discounts.Codes}
	}
	out.Messages = msgs

	// Price: totals, fulfillment options, discounts. Pricing owns those
	// (replacing what was submitted) and adds its messages; identity and
	// the rest stay ours.
	q, err := s.pricing.Quote(ctx, connect.NewRequest(wire.QuoteRequest(out, prev, agent.capabilities, timestamppb.New(s.now()))))
	if err != nil {
		return nil, err
	}
	wire.ApplyQuote(out, q.Msg)

	out.Messages = append(out.Messages, missingInfo(out, agent)...)
	for _, l := range settings.GetLinks() {
		out.Links = append(out.Links, bcp.Link{Type: l.GetType(), URL: l.GetUrl(), Title: l.GetTitle()})
	}
	sortMessages(out.Messages)
	return &built{checkout: out, request: normalisedRequest(req, out), settings: settings, automaticDiscounts: q.Msg.GetAutomaticDiscountIds()}, nil
}

// shownVariants describes the items of c as c shows them: active, at the
// shown price, with the largest shown quantity in stock (a stored request's
// quantities are the shown ones, so none is adjusted again).
func shownVariants(c *bcp.Checkout) map[string]*catalogv1.VariantInfo {
	out := make(map[string]*catalogv1.VariantInfo, len(c.LineItems))
	for _, l := range c.LineItems {
		if v := out[l.Item.ID]; v != nil {
			v.Variant.Stock = max(v.Variant.Stock, l.Quantity)
			continue
		}
		out[l.Item.ID] = &catalogv1.VariantInfo{ProductActive: true, Variant: &catalogv1.Variant{
			Id: l.Item.ID, Title: l.Item.Title, Price: l.Item.Price, ImageUrl: l.Item.ImageURL, Stock: l.Quantity, Active: true,
		}}
	}
	return out
}

// assignLineIDs gives every line its id: on update an echoed id that
// belonged to the previous state is kept; everything else gets the next
// free "li_N".
func assignLineIDs(in []bcp.LineItem, prev *bcp.Checkout) ([]bcp.LineItem, []bcp.Message) {
	known := map[string]bool{}
	next := 1
	if prev != nil {
		for _, l := range prev.LineItems {
			known[l.ID] = true
			if n, ok := strings.CutPrefix(l.ID, "li_"); ok {
				if v, err := strconv.Atoi(n); err == nil && v >= next {
					next = v + 1
				}
			}
		}
	}
	used := map[string]bool{}
	out := make([]bcp.LineItem, 0, len(in))
	var msgs []bcp.Message
	for _, l := range in {
		if l.Quantity > maxQuantity {
			msgs = append(msgs, bcp.Warning(bcp.CodeQuantityAdjusted, "$.line_items["+strconv.Itoa(len(out))+"].quantity",
				fmt.Sprintf("Quantidade máxima por item é %d.", maxQuantity)))
			l.Quantity = maxQuantity
		}
		if l.ID == "" || !known[l.ID] || used[l.ID] {
			for known["li_"+strconv.Itoa(next)] || used["li_"+strconv.Itoa(next)] {
				next++
			}
			l.ID = "li_" + strconv.Itoa(next)
			next++
		}
		used[l.ID] = true
		l.Totals = nil
		l.Item = bcp.Item{ID: l.Item.ID}
		out = append(out, l)
	}
	return out, msgs
}

func normaliseBuyer(b *bcp.Buyer) *bcp.Buyer {
	if b == nil {
		return nil
	}
	out := *b
	out.Email = strings.TrimSpace(out.Email)
	out.FirstName = strings.TrimSpace(out.FirstName)
	out.LastName = strings.TrimSpace(out.LastName)
	out.PhoneNumber = strings.TrimSpace(out.PhoneNumber)
	if out == (bcp.Buyer{}) {
		return nil
	}
	return &out
}

// applyConsent advertises the merchant's complete set of consent purposes:
// stated values are kept, unstated ones default to not granted (or to the
// previous value), purposes the merchant does not ask about are dropped.
func applyConsent(b *bcp.Buyer, prev *bcp.Checkout, purposes []string, msgs []bcp.Message) (*bcp.Buyer, []bcp.Message) {
	if b == nil {
		b = &bcp.Buyer{}
	}
	var stated, before bcp.Consent
	if b.Consent != nil {
		stated = *b.Consent
	}
	if prev != nil && prev.Buyer != nil && prev.Buyer.Consent != nil {
		before = *prev.Buyer.Consent
	}
	pick := func(s, p *bool) *bool {
		v := false
		switch {
		case s != nil:
			v = *s
		case p != nil:
			v = *p
		}
		return &v
	}
	out := &bcp.Consent{}
	for _, p := range purposes {
		switch p {
		case "analytics":
			out.Analytics = pick(stated.Analytics, before.Analytics)
		case "preferences":
			out.Preferences = pick(stated.Preferences, before.Preferences)
		case "marketing":
			out.Marketing = pick(stated.Marketing, before.Marketing)
		case "sale_of_data":
			out.SaleOfData = pick(stated.SaleOfData, before.SaleOfData)
		}
	}
	b.Consent = out
	if out.Marketing != nil && *out.Marketing && b.Email == "" && b.PhoneNumber == "" {
		msgs = append(msgs, bcp.Warning(bcp.CodeMissingConsentData, "$.buyer.consent.marketing",
			"O consentimento de marketing precisa de um e-mail ou telefone do comprador."))
	}
	return b, msgs
}

// missingInfo lists what still blocks completion and is not already
// reported by the catalog or pricing at the same path.
func missingInfo(c *bcp.Checkout, agent agentInfo) []bcp.Message {
	reported := map[string]bool{}
	for _, m := range c.Messages {
		if m.Type == bcp.MessageError {
			reported[m.Path] = true
		}
	}
	var out []bcp.Message
	add := func(path, content string) {
		if !reported[path] {
			out = append(out, bcp.Error(bcp.CodeMissing, bcp.SeverityRecoverable, path, content))
		}
	}
	if len(c.LineItems) == 0 {
		add("$.line_items", "Adicione ao menos um item disponível ao carrinho.")
	}
	switch {
	case c.Buyer == nil || c.Buyer.Email == "":
		add("$.buyer.email", "Informe o e-mail do comprador.")
	default:
		if _, err := mail.ParseAddress(c.Buyer.Email); err != nil || !strings.Contains(c.Buyer.Email, "@") {
			out = append(out, bcp.Error("invalid_email", bcp.SeverityRecoverable, "$.buyer.email", "O e-mail do comprador é inválido."))
		}
	}
	if len(c.LineItems) == 0 {
		return out
	}
	if !agent.has(bcpnames.Fulfillment) {
		// Without the fulfillment extension the agent cannot give an
		// address: the buyer finishes on the hosted page.
		return append(out, bcp.Error(bcp.CodeMissing, bcp.SeverityRequiresBuyerInput, "$",
			"A forma de entrega precisa ser escolhida pelo comprador na página de checkout."))
	}
	if c.Fulfillment == nil || len(c.Fulfillment.Methods) == 0 {
		add("$.fulfillment.methods", "Escolha como receber o pedido: entrega (shipping) com endereço ou retirada (pickup).")
		return out
	}
	covered := map[string]bool{}
	for i, m := range c.Fulfillment.Methods {
		mp := "$.fulfillment.methods[" + strconv.Itoa(i) + "]"
		for _, id := range m.LineItemIDs {
			covered[id] = true
		}
		if m.Type == bcp.MethodShipping && len(m.Destinations) == 0 {
			add(mp+".destinations", "Informe o endereço de entrega.")
			continue
		}
		if m.SelectedDestinationID == nil {
			add(mp+".selected_destination_id", "Escolha o destino.")
			continue
		}
		for j, g := range m.Groups {
			if g.SelectedOptionID == nil && len(g.Options) > 0 {
				add(mp+".groups["+strconv.Itoa(j)+"].selected_option_id", "Escolha uma opção de entrega.")
			}
		}
	}
	for i, l := range c.LineItems {
		if !covered[l.ID] {
			add("$.line_items["+strconv.Itoa(i)+"]", "Este item não está em nenhuma forma de entrega.")
		}
	}
	return out
}

// normalisedRequest is what we keep of the request for the next update:
// the writable members as the agent sent them, with our line ids.
func normalisedRequest(req, out *bcp.Checkout) *bcp.Checkout {
	r := &bcp.Checkout{
		LineItems: make([]bcp.LineItem, 0, len(out.LineItems)), Buyer: req.Buyer, Context: req.Context,
		Fulfillment: req.Fulfillment, Discounts: req.Discounts,
	}
	for _, l := range out.LineItems {
		r.LineItems = append(r.LineItems, bcp.LineItem{ID: l.ID, Item: bcp.Item{ID: l.Item.ID}, Quantity: l.Quantity})
	}
	return r
}

// sortMessages orders errors, then warnings, then info, keeping the order
// within each kind (stable), so responses are deterministic.
func sortMessages(msgs []bcp.Message) {
	slices.SortStableFunc(msgs, func(a, b bcp.Message) int { return messageRank(a.Type) - messageRank(b.Type) })
}

// messageRank is sortMessages' order of a message type (any other type
// with the errors, as a map's zero value had it).
func messageRank(typ string) int {
	switch typ {
	case bcp.MessageWarning:
		return 1
	case bcp.MessageInfo:
		return 2
	}
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// settings returns the merchant's checkout settings (links, consent
// purposes, lifetime), cached per tenant: a change reaches new checkouts
// once the registry's change notification arrives (milliseconds), or
// within 2 s without the feed. Callers must not modify the result.
func (s *Service) settings(ctx context.Context, tenantID string) (*tenantsv1.Settings, error) {
	return s.settingsCache.Get(ctx, tenantID, func(ctx context.Context) (*tenantsv1.Settings, error) {
		resp, err := s.tenants.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tenantID}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.GetSettings(), nil
	})
}

// agentInfo is the caller and what was negotiated with it.
type agentInfo struct {
	profileURL   string
	capabilities []string
	baseURL      string
}

func (a agentInfo) has(capability string) bool { return slices.Contains(a.capabilities, capability) }
