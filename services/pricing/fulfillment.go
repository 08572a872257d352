package pricing

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Buyer-facing texts of fulfillment.
const (
	pickupOptionID    = "pickup"
	pickupOptionTitle = "Retirada na loja"
)

// fulfillmentPlan prices the fulfillment extension in two phases: plan
// (ids, line assignment, destinations, which options are offered and which
// one is selected — none of it depends on discounts) and price (option
// amounts, which depend on the merchandise amount after item discounts
// through free_above).
type fulfillmentPlan struct {
	q         *quote
	methods   []*methodPlan
	available []bcp.AvailableMethod

	reserved     map[string]bool              // ids generated ids must avoid
	prevDests    map[string]bcp.PostalAddress // previous destinations by id
	prevDestKeys map[string][]string          // previous destination ids by address content
	usedDests    map[string]bool
}

type methodPlan struct {
	index int
	path  string
	out   bcp.FulfillmentMethod
	msgs  []bcp.Message

	priced    bool // its line assignment is valid, so it has a group
	groupID   string
	prevGroup *bcp.FulfillmentGroup
	rates     []*ShippingRate // offered rates (shipping)
	pickup    *PickupLocation // selected location (pickup)
	selected  string          // accepted option id, "" for none

	selAmount    int64 // price of the selected option
	shippingLeft int64 // part of selAmount a free shipping discount may still take
}

func (m *methodPlan) errorf(code, path, format string, args ...any) {
	m.msgs = append(m.msgs, bcp.Error(code, bcp.SeverityRecoverable, path, fmt.Sprintf(format, args...)))
}

func (m *methodPlan) warnf(code, path, format string, args ...any) {
	m.msgs = append(m.msgs, bcp.Warning(code, path, fmt.Sprintf(format, args...)))
}

// planFulfillment runs the first phase over the request's methods.
func (q *quote) planFulfillment() (*fulfillmentPlan, error) {
	p := &fulfillmentPlan{
		q: q, reserved: map[string]bool{}, prevDests: map[string]bcp.PostalAddress{},
		prevDestKeys: map[string][]string{}, usedDests: map[string]bool{},
	}
	var reqMethods, prevMethods []bcp.FulfillmentMethod
	if q.in.Fulfillment != nil {
		reqMethods = q.in.Fulfillment.Methods
	}
	if q.req.Previous != nil && q.req.Previous.Fulfillment != nil {
		prevMethods = q.req.Previous.Fulfillment.Methods
	}
	// Generated ids never reuse an id that meant something before or that
	// the request names, so a stale selection cannot point at new content.
	named := map[string]bool{}
	for _, m := range reqMethods {
		p.reserve(m.ID)
		named[m.ID] = m.ID != ""
		for _, d := range m.Destinations {
			p.reserve(d.ID)
		}
		for _, g := range m.Groups {
			p.reserve(g.ID)
		}
	}
	prevByID := map[string]int{}
	for i, m := range prevMethods {
		p.reserve(m.ID)
		prevByID[m.ID] = i
		for _, g := range m.Groups {
			p.reserve(g.ID)
		}
		if m.Type != bcp.MethodShipping {
			continue
		}
		for _, d := range m.Destinations {
			p.reserve(d.ID)
			if _, ok := p.prevDests[d.ID]; !ok {
				p.prevDests[d.ID] = d.PostalAddress
				k := addressKey(d.PostalAddress)
				p.prevDestKeys[k] = append(p.prevDestKeys[k], d.ID)
			}
		}
	}

	// Lines named explicitly by some method are not given to methods that
	// default to "all lines".
	explicit := map[string]bool{}
	for _, m := range reqMethods {
		for _, id := range m.LineItemIDs {
			explicit[id] = true
		}
	}
	assigned := map[string]int{}
	usedPrev := map[int]bool{}
	methodIDs := map[string]bool{}
	groupIDs := map[string]bool{}
	for i := range reqMethods {
		rm := &reqMethods[i]
		mp := &methodPlan{index: i, path: "$.fulfillment.methods[" + strconv.Itoa(i) + "]"}
		field := "checkout_json.fulfillment.methods[" + strconv.Itoa(i) + "]"

		// The previous method this one continues: same id, or else the
		// first unclaimed previous method of the same type.
		var pm *bcp.FulfillmentMethod
		if rm.ID != "" {
			if j, ok := prevByID[rm.ID]; ok && !usedPrev[j] {
				pm, usedPrev[j] = &prevMethods[j], true
			}
		} else if rm.Type != "" {
			for j := range prevMethods {
				if !usedPrev[j] && !named[prevMethods[j].ID] && prevMethods[j].Type == rm.Type {
					pm, usedPrev[j] = &prevMethods[j], true
					break
				}
			}
		}
		typ := rm.Type
		if typ == "" && pm != nil {
			typ = pm.Type
		}
		switch typ {
		case bcp.MethodShipping, bcp.MethodPickup:
		case "":
			return nil, apperr.Invalid(field+".type", "method_type_required", "type is required for a new fulfillment method")
		default:
			return nil, apperr.Invalid(field+".type", "unsupported_method_type", "type must be shipping or pickup")
		}
		id := rm.ID
		switch {
		case id != "":
		case pm != nil:
			id = pm.ID
		case typ == bcp.MethodShipping:
			id = p.generate("ship")
		default:
			id = p.generate("pickup")
		}
		if methodIDs[id] {
			return nil, apperr.Invalid(field+".id", "duplicate_method_id", "fulfillment method id %q appears twice", id)
		}
		methodIDs[id] = true
		mp.out = bcp.FulfillmentMethod{ID: id, Type: typ}

		p.assignLines(mp, rm, explicit, assigned)

		if mp.priced {
			if len(rm.Groups) > 0 {
				mp.groupID = rm.Groups[0].ID
			}
			if pm != nil && len(pm.Groups) > 0 {
				mp.prevGroup = &pm.Groups[0]
				if mp.groupID == "" {
					mp.groupID = pm.Groups[0].ID
				}
			}
			if mp.groupID == "" {
				mp.groupID = p.generate("grp")
			}
			if groupIDs[mp.groupID] {
				return nil, apperr.Invalid(field+".groups[0].id", "duplicate_group_id", "fulfillment group id %q appears twice", mp.groupID)
			}
			groupIDs[mp.groupID] = true
		}

		var offered []string
		var err error
		if typ == bcp.MethodShipping {
			offered, err = p.shipping(mp, rm, pm, field)
		} else {
			offered = p.pickupMethod(mp, rm, pm)
		}
		if err != nil {
			return nil, err
		}
		if mp.priced {
			// The agent's choice, or the previous one when the request
			// does not mention groups (an update that changes something
			// else keeps the shipping choice).
			var want *string
			if len(rm.Groups) > 0 {
				want = rm.Groups[0].SelectedOptionID
			} else if mp.prevGroup != nil {
				want = mp.prevGroup.SelectedOptionID
			}
			mp.choose(want, offered)
		}
		p.methods = append(p.methods, mp)
	}
	p.availableMethods()
	return p, nil
}

func (p *fulfillmentPlan) reserve(id string) {
	if id != "" {
		p.reserved[id] = true
	}
}

// generate returns prefix_N for the smallest N not reserved.
func (p *fulfillmentPlan) generate(prefix string) string {
	for n := 1; ; n++ {
		id := prefix + "_" + strconv.Itoa(n)
		if !p.reserved[id] {
			p.reserved[id] = true
			return id
		}
	}
}

// assignLines sets the method's line_item_ids. A method that names an
// unknown line, or a line another method already has, is echoed as sent
// with a recoverable error and left unpriced, so nothing is charged twice.
func (p *fulfillmentPlan) assignLines(mp *methodPlan, rm *bcp.FulfillmentMethod, explicit map[string]bool, assigned map[string]int) {
	lines := p.q.in.LineItems
	if len(rm.LineItemIDs) > 0 {
		ok := true
		here := map[string]bool{}
		for k, id := range rm.LineItemIDs {
			lp := mp.path + ".line_item_ids[" + strconv.Itoa(k) + "]"
			if _, known := p.q.lineIndex[id]; !known {
				mp.errorf(bcp.CodeNotFound, lp, "O item %q não está no carrinho.", id)
				ok = false
				continue
			}
			if j, taken := assigned[id]; taken {
				mp.errorf(bcp.CodeInvalidSelection, lp, "O item %q já está na forma de entrega %d; cada item pode estar em uma só.", id, j)
				ok = false
				continue
			}
			if here[id] {
				mp.errorf(bcp.CodeInvalidSelection, lp, "O item %q aparece duas vezes nesta forma de entrega.", id)
				ok = false
				continue
			}
			here[id] = true
		}
		mp.out.LineItemIDs = slices.Clone(rm.LineItemIDs)
		if ok {
			for _, id := range rm.LineItemIDs {
				assigned[id] = mp.index
			}
		}
		mp.priced = ok
		return
	}
	var ids []string
	for _, l := range lines {
		if _, taken := assigned[l.ID]; !taken && !explicit[l.ID] {
			ids = append(ids, l.ID)
		}
	}
	if len(ids) == 0 {
		if len(lines) == 0 {
			return // nothing to fulfil (every line was removed)
		}
		for _, l := range lines {
			ids = append(ids, l.ID)
		}
		mp.out.LineItemIDs = ids
		mp.errorf(bcp.CodeInvalidSelection, mp.path+".line_item_ids", "Todos os itens já estão em outra forma de entrega; informe line_item_ids.")
		return
	}
	for _, id := range ids {
		assigned[id] = mp.index
	}
	mp.out.LineItemIDs = ids
	mp.priced = true
}

// addressKey identifies a destination by its address content, so an
// address sent again without its id keeps the id it had.
func addressKey(a bcp.PostalAddress) string {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	cep, ok := normalizeCEP(a.PostalCode)
	if !ok {
		cep = norm(a.PostalCode)
	}
	country := strings.ToUpper(strings.TrimSpace(a.AddressCountry))
	if isBrazil(country) {
		country = "BR"
	}
	return strings.Join([]string{cep, norm(a.StreetAddress), norm(a.ExtendedAddress), norm(a.AddressLocality),
		strings.ToUpper(strings.TrimSpace(a.AddressRegion)), country}, "\x00")
}

func isBrazil(country string) bool {
	switch strings.ToUpper(strings.TrimSpace(country)) {
	case "", "BR", "BRA", "BRASIL", "BRAZIL":
		return true
	}
	return false
}

// shippingDest is a destination as rates see it.
type shippingDest struct {
	cep, uf string
	ok      bool // the address can be matched against rates
}

// shipping assigns destination ids, resolves the selected destination and
// finds the rates offered there. It returns the offered option ids.
func (p *fulfillmentPlan) shipping(mp *methodPlan, rm, pm *bcp.FulfillmentMethod, field string) ([]string, error) {
	dests, sel := rm.Destinations, rm.SelectedDestinationID
	if dests == nil && pm != nil && pm.Type == bcp.MethodShipping {
		// Destinations are kept across updates that do not resend them
		// (the binding's update example selects an option only).
		dests = pm.Destinations
		if sel == nil {
			sel = pm.SelectedDestinationID
		}
	}
	here := map[string]bool{}
	info := make([]shippingDest, len(dests))
	for j, d := range dests {
		dp := mp.path + ".destinations[" + strconv.Itoa(j) + "]"
		out := bcp.Destination{ID: d.ID, PostalAddress: d.PostalAddress}
		if out.ID != "" {
			if out.PostalAddress == (bcp.PostalAddress{}) {
				// A bare id refers to an address given before.
				saved, ok := p.prevDests[out.ID]
				if !ok {
					mp.errorf(bcp.CodeInvalidAddress, dp, "O endereço %q não é conhecido; envie o endereço completo.", out.ID)
				}
				out.PostalAddress = saved
			}
		} else {
			for _, id := range p.prevDestKeys[addressKey(out.PostalAddress)] {
				if !p.usedDests[id] {
					out.ID = id
					break
				}
			}
			if out.ID == "" {
				out.ID = p.generate("dest")
			}
		}
		if here[out.ID] {
			return nil, apperr.Invalid(fmt.Sprintf("%s.destinations[%d].id", field, j), "duplicate_destination_id", "destination id %q appears twice", out.ID)
		}
		here[out.ID] = true
		p.usedDests[out.ID] = true
		if out.PostalAddress != (bcp.PostalAddress{}) {
			info[j] = mp.checkAddress(out.PostalAddress, dp)
		}
		mp.out.Destinations = append(mp.out.Destinations, out)
	}
	chosen := mp.selectDestination(sel)
	if !mp.priced || chosen < 0 || !info[chosen].ok {
		return nil, nil
	}
	d := info[chosen]
	subtotal := p.q.subtotal
	for i := range p.q.cfg.Rates {
		r := &p.q.cfg.Rates[i]
		if r.Active && r.covers(d.cep, d.uf) && subtotal >= r.MinSubtotal && (r.MaxSubtotal == 0 || subtotal <= r.MaxSubtotal) {
			mp.rates = append(mp.rates, r)
		}
	}
	if len(mp.rates) == 0 {
		mp.errorf(bcp.CodeAddressUndeliverable, mp.path+".selected_destination_id",
			"Não há entrega disponível para o CEP %s; escolha outro endereço ou a retirada.", formatCEP(d.cep))
		return nil, nil
	}
	ids := make([]string, len(mp.rates))
	for i, r := range mp.rates {
		ids[i] = r.ID
	}
	return ids, nil
}

// checkAddress validates a shipping address for rate matching: a CEP is
// required, the UF comes from the CEP (carriers route by it) and a stated
// address_region must agree with it.
func (m *methodPlan) checkAddress(a bcp.PostalAddress, dp string) shippingDest {
	if !isBrazil(a.AddressCountry) {
		m.errorf(bcp.CodeAddressUndeliverable, dp+".address_country", "Entregamos apenas no Brasil.")
		return shippingDest{}
	}
	if strings.TrimSpace(a.PostalCode) == "" {
		m.errorf(bcp.CodeInvalidAddress, dp+".postal_code", "Informe o CEP do endereço de entrega.")
		return shippingDest{}
	}
	cep, ok := normalizeCEP(a.PostalCode)
	if !ok {
		m.errorf(bcp.CodeInvalidAddress, dp+".postal_code", "O CEP %q é inválido: use 8 dígitos, como 01310-100.", a.PostalCode)
		return shippingDest{}
	}
	uf := ufOfCEP(cep)
	if strings.TrimSpace(a.AddressRegion) != "" {
		stated, ok := normalizeUF(a.AddressRegion)
		switch {
		case !ok:
			m.errorf(bcp.CodeInvalidAddress, dp+".address_region", "%q não é uma UF brasileira (use a sigla, como SP).", a.AddressRegion)
			return shippingDest{}
		case uf != "" && stated != uf:
			m.errorf(bcp.CodeInvalidAddress, dp+".address_region", "O CEP %s é de %s, não de %s.", formatCEP(cep), uf, stated)
			return shippingDest{}
		case uf == "":
			uf = stated
		}
	}
	return shippingDest{cep: cep, uf: uf, ok: true}
}

// selectDestination resolves selected_destination_id: an accepted id is
// echoed, an unknown one is an error and leaves the selection unset, and a
// single destination is selected when none is.
func (m *methodPlan) selectDestination(sel *string) int {
	if sel != nil {
		for i, d := range m.out.Destinations {
			if d.ID == *sel {
				m.out.SelectedDestinationID = &d.ID
				return i
			}
		}
		m.errorf(bcp.CodeInvalidSelection, m.path+".selected_destination_id", "O destino %q não existe nesta forma de entrega.", *sel)
		return -1
	}
	if len(m.out.Destinations) == 1 {
		m.out.SelectedDestinationID = &m.out.Destinations[0].ID
		return 0
	}
	return -1
}

// covers reports whether the rate ships to the CEP/UF.
func (r *ShippingRate) covers(cep, uf string) bool {
	if len(r.Regions) == 0 && len(r.CEPRanges) == 0 {
		return true
	}
	if uf != "" && slices.Contains(r.Regions, uf) {
		return true
	}
	for _, cr := range r.CEPRanges {
		if cep >= cr.From && cep <= cr.To {
			return true
		}
	}
	return false
}

// pickupMethod lists the merchant's active pickup locations as the
// method's destinations (response-only for pickup) and resolves the
// selected one. It returns the offered option ids.
func (p *fulfillmentPlan) pickupMethod(mp *methodPlan, rm, pm *bcp.FulfillmentMethod) []string {
	var locs []*PickupLocation
	for i := range p.q.cfg.Pickups {
		if l := &p.q.cfg.Pickups[i]; l.Active {
			locs = append(locs, l)
		}
	}
	if len(locs) == 0 {
		mp.errorf(bcp.CodeAddressUndeliverable, mp.path, "A loja não oferece retirada no momento; escolha a entrega.")
		return nil
	}
	for _, l := range locs {
		mp.out.Destinations = append(mp.out.Destinations, bcp.Destination{ID: l.ID, Name: l.Name, Address: &bcp.PostalAddress{
			StreetAddress: l.StreetAddress, ExtendedAddress: l.ExtendedAddress, AddressLocality: l.AddressLocality,
			AddressRegion: l.AddressRegion, PostalCode: formatCEP(l.PostalCode), AddressCountry: l.AddressCountry,
		}})
	}
	sel := rm.SelectedDestinationID
	if sel == nil && pm != nil && pm.Type == bcp.MethodPickup {
		sel = pm.SelectedDestinationID
	}
	chosen := mp.selectDestination(sel)
	if !mp.priced || chosen < 0 {
		return nil
	}
	mp.pickup = locs[chosen]
	return []string{pickupOptionID}
}

// choose resolves the group's selected_option_id against the offered
// options. An offered id is accepted; one that was offered before but no
// longer is gets fulfillment_changed; anything else is invalid_selection.
// Rejected choices leave the selection unset — another option is never
// substituted. With no choice, a single option is preselected.
func (m *methodPlan) choose(want *string, offered []string) {
	path := m.path + ".groups[0].selected_option_id"
	if want != nil {
		if slices.Contains(offered, *want) {
			m.selected = *want
			return
		}
		if m.prevGroup != nil && slices.ContainsFunc(m.prevGroup.Options, func(o bcp.FulfillmentOption) bool { return o.ID == *want }) {
			m.warnf(bcp.CodeFulfillmentChanged, path, "A opção de entrega %q não está mais disponível; escolha uma das opções atuais.", *want)
			return
		}
		m.errorf(bcp.CodeInvalidSelection, path, "A opção de entrega %q não existe; escolha uma das opções oferecidas.", *want)
		return
	}
	if len(offered) == 1 {
		m.selected = offered[0]
	}
}

// price runs the second phase for a merchandise amount (after item
// discounts): option amounts and order, the selections' amounts and
// free_shipping infos. It returns the sum of the selected options and
// whether any option is selected.
func (p *fulfillmentPlan) price(merch int64) (int64, bool, error) {
	var total int64
	var anySelected bool
	for _, mp := range p.methods {
		if !mp.priced {
			continue
		}
		g := bcp.FulfillmentGroup{ID: mp.groupID, LineItemIDs: slices.Clone(mp.out.LineItemIDs)}
		gpath := mp.path + ".groups[0]"
		switch {
		case mp.out.Type == bcp.MethodShipping && len(mp.rates) > 0:
			type priced struct {
				r      *ShippingRate
				amount int64
			}
			ps := make([]priced, len(mp.rates))
			for i, r := range mp.rates {
				ps[i] = priced{r, r.amountFor(merch)}
			}
			// Cheapest first; the merchant's position, then the id, break ties.
			slices.SortStableFunc(ps, func(a, b priced) int {
				return cmp.Or(cmp.Compare(a.amount, b.amount), cmp.Compare(a.r.Position, b.r.Position), strings.Compare(a.r.ID, b.r.ID))
			})
			g.Options = make([]bcp.FulfillmentOption, len(ps))
			for k, x := range ps {
				g.Options[k] = bcp.FulfillmentOption{
					ID: x.r.ID, Title: x.r.Title, Description: x.r.describe(), Carrier: x.r.Carrier,
					Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: x.amount}},
				}
				if x.amount == 0 && x.r.Price > 0 {
					mp.msgs = append(mp.msgs, bcp.Info(bcp.CodeFreeShipping, fmt.Sprintf("%s.options[%d]", gpath, k),
						fmt.Sprintf("Frete grátis em %s para compras a partir de %s.", x.r.Title, money.FormatBRL(x.r.FreeAbove))))
				}
			}
		case mp.out.Type == bcp.MethodPickup && mp.pickup != nil:
			g.Options = []bcp.FulfillmentOption{{
				ID: pickupOptionID, Title: pickupOptionTitle, Description: mp.pickup.describe(),
				Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: mp.pickup.Price}},
			}}
		}
		if mp.selected != "" {
			for _, o := range g.Options {
				if o.ID == mp.selected {
					mp.selAmount = o.Totals[0].Amount
				}
			}
			if mp.out.Type == bcp.MethodShipping {
				mp.shippingLeft = mp.selAmount
			}
			sel := mp.selected
			g.SelectedOptionID = &sel
			var ok bool
			if total, ok = addAmounts(total, mp.selAmount); !ok {
				return 0, false, apperr.Invalid("checkout_json.fulfillment", "amount_out_of_range", "fulfillment exceeds %d centavos", MaxAmount)
			}
			anySelected = true
			mp.priceChanged(gpath)
		}
		mp.out.Groups = []bcp.FulfillmentGroup{g}
	}
	return total, anySelected, nil
}

// priceChanged warns when the option selected before is still selected but
// now costs something else (e.g. a removed coupon lost free shipping).
func (m *methodPlan) priceChanged(gpath string) {
	pg := m.prevGroup
	if pg == nil || pg.SelectedOptionID == nil || *pg.SelectedOptionID != m.selected {
		return
	}
	for _, o := range pg.Options {
		if o.ID != m.selected {
			continue
		}
		for _, t := range o.Totals {
			if t.Type == bcp.TotalTotal && t.Amount != m.selAmount {
				m.warnf(bcp.CodeFulfillmentChanged, gpath+".selected_option_id", "O valor de %s mudou de %s para %s.",
					o.Title, money.FormatBRL(t.Amount), money.FormatBRL(m.selAmount))
			}
		}
	}
}

// amountFor is the rate's price for a merchandise amount: free from
// free_above on.
func (r *ShippingRate) amountFor(merch int64) int64 {
	if r.FreeAbove > 0 && merch >= r.FreeAbove {
		return 0
	}
	return r.Price
}

// describe is the option description: the merchant's, or the delivery
// window. It never repeats the title or the price (UCP rendering rule).
func (r *ShippingRate) describe() string {
	if r.Description != "" {
		return r.Description
	}
	// Concatenated, not fmt: every quote describes every rate offered.
	day := func(n int32) string {
		if n == 1 {
			return "1 dia útil"
		}
		return strconv.Itoa(int(n)) + " dias úteis"
	}
	switch {
	case r.MaxDays <= 0 && r.MinDays <= 0:
		return ""
	case r.MaxDays <= 0:
		return "Entrega a partir de " + day(r.MinDays)
	case r.MinDays <= 0:
		return "Entrega em até " + day(r.MaxDays)
	case r.MinDays == r.MaxDays:
		return "Entrega em " + day(r.MaxDays)
	default:
		return "Entrega em " + strconv.Itoa(int(r.MinDays)) + " a " + day(r.MaxDays)
	}
}

// describe is the pickup option's description: the merchant's, or where.
func (l *PickupLocation) describe() string {
	if l.Description != "" {
		return l.Description
	}
	s := l.Name + ": " + l.StreetAddress
	if l.ExtendedAddress != "" {
		s += ", " + l.ExtendedAddress
	}
	return s + ", " + l.AddressLocality + "/" + l.AddressRegion
}

// shippingAt is what the selected shipping options would cost for a
// merchandise amount; it ranks free shipping discounts before the item
// discounts are known.
func (p *fulfillmentPlan) shippingAt(merch int64) int64 {
	var sum int64
	for _, mp := range p.methods {
		if !mp.priced || mp.selected == "" || mp.out.Type != bcp.MethodShipping {
			continue
		}
		for _, r := range mp.rates {
			if r.ID == mp.selected {
				sum, _ = addAmounts(sum, r.amountFor(merch))
			}
		}
	}
	return sum
}

// takeShipping gives a free shipping discount what is left of the
// selected shipping options, allocated to their groups.
func (p *fulfillmentPlan) takeShipping() (int64, []bcp.Allocation) {
	var amount int64
	var allocs []bcp.Allocation
	for _, mp := range p.methods {
		if mp.shippingLeft <= 0 {
			continue
		}
		allocs = append(allocs, bcp.Allocation{Path: mp.path + ".groups[0]", Amount: mp.shippingLeft})
		amount += mp.shippingLeft
		mp.shippingLeft = 0
	}
	return amount, allocs
}

// availableMethods hints which method types the merchant offers.
func (p *fulfillmentPlan) availableMethods() {
	lines := p.q.in.LineItems
	if len(lines) == 0 {
		return
	}
	ids := make([]string, len(lines))
	for i, l := range lines {
		ids[i] = l.ID
	}
	if slices.ContainsFunc(p.q.cfg.Rates, func(r ShippingRate) bool { return r.Active }) {
		p.available = append(p.available, bcp.AvailableMethod{Type: bcp.MethodShipping, LineItemIDs: ids,
			Description: "Entrega no endereço do comprador, com frete calculado pelo CEP."})
	}
	var locs []string
	for _, l := range p.q.cfg.Pickups {
		if l.Active {
			locs = append(locs, l.Name)
		}
	}
	switch len(locs) {
	case 0:
	case 1:
		p.available = append(p.available, bcp.AvailableMethod{Type: bcp.MethodPickup, LineItemIDs: slices.Clone(ids),
			Description: "Retirada em " + locs[0] + "."})
	default:
		p.available = append(p.available, bcp.AvailableMethod{Type: bcp.MethodPickup, LineItemIDs: slices.Clone(ids),
			Description: fmt.Sprintf("Retirada em uma das %d lojas.", len(locs))})
	}
}

// result is the priced fulfillment object (nil when there is nothing).
func (p *fulfillmentPlan) result() *bcp.Fulfillment {
	if len(p.methods) == 0 && len(p.available) == 0 {
		return nil
	}
	f := &bcp.Fulfillment{AvailableMethods: p.available}
	for _, mp := range p.methods {
		f.Methods = append(f.Methods, mp.out)
	}
	return f
}
