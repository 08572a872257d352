package agentprofile

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/bcpnames"
)

const (
	v0123 = "2026-01-23"
	v0408 = "2026-04-08"
	v0728 = "2026-07-28"
	v0901 = "2026-09-01"
)

// Vendor extensions used to exercise chains and multi-parent rules.
const (
	cart     = "br.dev.bcp.shopping.cart"
	loyalty  = "com.example.loyalty"         // extends checkout
	tiers    = "com.example.loyalty.tiers"   // extends loyalty
	badges   = "com.example.loyalty.badges"  // extends tiers
	giftWrap = "com.example.gift_wrap"       // extends checkout and cart
	cartOnly = "com.example.cart_suggestion" // extends cart only
)

// agentProfile builds an agent profile in BCP shape (every entry with
// spec and schema, as the platform schema requires), runs it through the
// validator and parses it: negotiation sees exactly what Get would return.
func agentProfile(t *testing.T, version string, caps map[string][]string, handlers ...string) *Profile {
	t.Helper()
	entries := map[string][]map[string]any{}
	for name, versions := range caps {
		for _, v := range versions {
			entries[name] = append(entries[name], map[string]any{
				"version": v,
				"spec":    "https://agente.example.com/specs/" + name,
				"schema":  "https://agente.example.com/schemas/" + name + ".json",
			})
		}
	}
	hs := map[string][]map[string]any{}
	for _, h := range handlers {
		hs[h] = []map[string]any{{
			"id": "agent_" + h, "version": v0728,
			"spec": "https://agente.example.com/specs/" + h, "schema": "https://agente.example.com/schemas/" + h + ".json",
		}}
	}
	doc, err := json.Marshal(map[string]any{
		"ucp": map[string]any{
			"version": version,
			"services": map[string]any{bcpnames.Service: []map[string]any{{
				"version": version, "transport": "mcp", "spec": bcpnames.ServiceSpec, "schema": bcpnames.MCPSchema,
			}}},
			"capabilities":     entries,
			"payment_handlers": hs,
		},
		"signing_keys": []map[string]any{{"kid": "k1", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("https://agente.example.com/p.json", doc, testValidator(t), time.Now())
	if err != nil {
		t.Fatalf("agent profile: %v\n%s", err, doc)
	}
	return p
}

type offerCap struct {
	versions []string
	extends  Extends
}

func offer(caps map[string]offerCap, handlers ...string) BusinessOffer {
	o := BusinessOffer{Version: v0728, Capabilities: map[string][]CapabilityEntry{}, PaymentHandlers: map[string][]HandlerEntry{}}
	for name, c := range caps {
		for _, v := range c.versions {
			o.Capabilities[name] = append(o.Capabilities[name], CapabilityEntry{Version: v, Schema: "https://bcp.dev.br/x.json", Extends: c.extends})
		}
	}
	for _, h := range handlers {
		o.PaymentHandlers[h] = []HandlerEntry{{ID: "biz_" + h, Version: v0728, Config: json.RawMessage(`{}`)}}
	}
	return o
}

// ourOffer is what a default tenant advertises.
var ourOffer = map[string]offerCap{
	bcpnames.Checkout:     {versions: []string{v0728}},
	bcpnames.Order:        {versions: []string{v0728}},
	bcpnames.Fulfillment:  {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
	bcpnames.Discount:     {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
	bcpnames.BuyerConsent: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
}

func with(base map[string]offerCap, extra map[string]offerCap) map[string]offerCap {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

func TestNegotiate(t *testing.T) {
	cases := []struct {
		name         string
		business     map[string]offerCap
		agent        map[string][]string
		want         map[string]string
		incompatible bool
	}{
		{
			name:     "exact version match",
			business: ourOffer,
			agent:    map[string][]string{bcpnames.Checkout: {v0728}, bcpnames.Fulfillment: {v0728}, bcpnames.Order: {v0728}},
			want:     map[string]string{bcpnames.Checkout: v0728, bcpnames.Fulfillment: v0728, bcpnames.Order: v0728},
		},
		{
			name:     "highest common version wins",
			business: with(ourOffer, map[string]offerCap{loyalty: {versions: []string{v0123, v0408, v0901}, extends: Extends{bcpnames.Checkout}}}),
			agent:    map[string][]string{bcpnames.Checkout: {v0728}, loyalty: {v0728, v0408, v0123}},
			want:     map[string]string{bcpnames.Checkout: v0728, loyalty: v0408},
		},
		{
			name:     "no shared version drops the capability",
			business: ourOffer,
			agent:    map[string][]string{bcpnames.Checkout: {v0728}, bcpnames.Discount: {v0408}, bcpnames.Order: {v0901}},
			want:     map[string]string{bcpnames.Checkout: v0728},
		},
		{
			name:     "capability unknown to the business is ignored",
			business: ourOffer,
			agent:    map[string][]string{bcpnames.Checkout: {v0728}, "com.other.thing": {v0728}},
			want:     map[string]string{bcpnames.Checkout: v0728},
		},
		{
			name:         "orphan extension is pruned",
			business:     ourOffer,
			agent:        map[string][]string{bcpnames.Fulfillment: {v0728}, bcpnames.Discount: {v0728}, bcpnames.Order: {v0728}},
			want:         map[string]string{bcpnames.Order: v0728},
			incompatible: true,
		},
		{
			name:         "extension whose parent version did not match is pruned",
			business:     ourOffer,
			agent:        map[string][]string{bcpnames.Checkout: {v0408}, bcpnames.Fulfillment: {v0728}, bcpnames.Order: {v0728}},
			want:         map[string]string{bcpnames.Order: v0728},
			incompatible: true,
		},
		{
			name: "transitive chain pruned to a fixpoint",
			business: with(ourOffer, map[string]offerCap{
				loyalty: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
				tiers:   {versions: []string{v0728}, extends: Extends{loyalty}},
				badges:  {versions: []string{v0728}, extends: Extends{tiers}},
			}),
			// loyalty is missing, so tiers goes, then badges.
			agent: map[string][]string{bcpnames.Checkout: {v0728}, tiers: {v0728}, badges: {v0728}},
			want:  map[string]string{bcpnames.Checkout: v0728},
		},
		{
			name: "complete chain is kept",
			business: with(ourOffer, map[string]offerCap{
				loyalty: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
				tiers:   {versions: []string{v0728}, extends: Extends{loyalty}},
				badges:  {versions: []string{v0728}, extends: Extends{tiers}},
			}),
			agent: map[string][]string{bcpnames.Checkout: {v0728}, loyalty: {v0728}, tiers: {v0728}, badges: {v0728}},
			want:  map[string]string{bcpnames.Checkout: v0728, loyalty: v0728, tiers: v0728, badges: v0728},
		},
		{
			name:     "multi-parent extension kept with one parent",
			business: with(ourOffer, map[string]offerCap{giftWrap: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout, cart}}}),
			agent:    map[string][]string{bcpnames.Checkout: {v0728}, giftWrap: {v0728}, cart: {v0728}},
			want:     map[string]string{bcpnames.Checkout: v0728, giftWrap: v0728},
		},
		{
			name: "multi-parent extension pruned with no parent",
			business: with(ourOffer, map[string]offerCap{
				cart:     {versions: []string{v0728}},
				giftWrap: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout, cart}},
			}),
			agent:        map[string][]string{giftWrap: {v0728}, bcpnames.Order: {v0728}},
			want:         map[string]string{bcpnames.Order: v0728},
			incompatible: true,
		},
		{
			name:         "checkout missing is incompatible",
			business:     ourOffer,
			agent:        map[string][]string{bcpnames.Order: {v0728}},
			want:         map[string]string{bcpnames.Order: v0728},
			incompatible: true,
		},
		{
			name:         "empty agent registry",
			business:     ourOffer,
			agent:        map[string][]string{},
			want:         map[string]string{},
			incompatible: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Negotiate(offer(c.business), agentProfile(t, v0728, c.agent))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Capabilities, c.want) {
				t.Errorf("capabilities %v, want %v", r.Capabilities, c.want)
			}
			if r.Incompatible != c.incompatible {
				t.Errorf("incompatible %v, want %v", r.Incompatible, c.incompatible)
			}
			if r.Version != v0728 {
				t.Errorf("version %q", r.Version)
			}
			if !slices.Equal(r.Names(), slices.Sorted(maps.Keys(c.want))) {
				t.Errorf("names %q", r.Names())
			}
			for name := range c.want {
				if !r.Has(name) {
					t.Errorf("Has(%s) false", name)
				}
			}
		})
	}
}

func TestNegotiateVersionUnsupported(t *testing.T) {
	for _, v := range []string{v0408, v0901} {
		_, err := Negotiate(offer(ourOffer), agentProfile(t, v, map[string][]string{bcpnames.Checkout: {v0728}}))
		pe := wantCode(t, err, CodeVersionUnsupported)
		if pe.HTTPStatus() != 422 || !strings.Contains(pe.Message, v) || !strings.Contains(pe.Message, v0728) {
			t.Errorf("%v", pe)
		}
	}
	// An empty business version means ours.
	o := offer(ourOffer)
	o.Version = ""
	if r, err := Negotiate(o, agentProfile(t, bcpnames.Version, map[string][]string{bcpnames.Checkout: {v0728}})); err != nil || r.Version != bcpnames.Version {
		t.Fatal(err)
	}
	if _, err := Negotiate(o, nil); err == nil {
		t.Fatal("nil agent accepted")
	}
}

func TestResponseCapabilities(t *testing.T) {
	business := with(ourOffer, map[string]offerCap{
		loyalty:  {versions: []string{v0728}, extends: Extends{bcpnames.Checkout}},
		tiers:    {versions: []string{v0728}, extends: Extends{loyalty}},
		giftWrap: {versions: []string{v0728}, extends: Extends{bcpnames.Checkout, cart}},
		cart:     {versions: []string{v0728}},
		cartOnly: {versions: []string{v0728}, extends: Extends{cart}},
	})
	all := map[string][]string{}
	for name := range business {
		all[name] = []string{v0728}
	}
	r, err := Negotiate(offer(business), agentProfile(t, v0728, all))
	if err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string][]ResponseCapability) []string { return slices.Sorted(maps.Keys(m)) }

	checkout := r.ResponseCapabilities(bcpnames.Checkout)
	wantCheckout := []string{bcpnames.BuyerConsent, bcpnames.Checkout, bcpnames.Discount, bcpnames.Fulfillment, giftWrap, loyalty, tiers}
	slices.Sort(wantCheckout)
	if !slices.Equal(keys(checkout), wantCheckout) {
		t.Errorf("checkout response: %q, want %q", keys(checkout), wantCheckout)
	}
	if got := checkout[bcpnames.Checkout]; len(got) != 1 || got[0].Version != v0728 {
		t.Errorf("checkout entry %+v", got)
	}
	if got := keys(r.ResponseCapabilities(bcpnames.Order)); !slices.Equal(got, []string{bcpnames.Order}) {
		t.Errorf("order response: %q", got)
	}
	wantCart := []string{cart, cartOnly, giftWrap}
	if got := keys(r.ResponseCapabilities(cart)); !slices.Equal(got, wantCart) {
		t.Errorf("cart response: %q, want %q", got, wantCart)
	}
	// A root outside the intersection selects nothing.
	r2, err := Negotiate(offer(ourOffer), agentProfile(t, v0728, map[string][]string{bcpnames.Checkout: {v0728}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.ResponseCapabilities(bcpnames.Order); len(got) != 0 || got == nil {
		t.Errorf("order not negotiated: %v", got)
	}
	// Wire shape of ucp.capabilities in a response.
	b, _ := json.Marshal(r2.ResponseCapabilities(bcpnames.Checkout))
	if string(b) != `{"br.dev.bcp.shopping.checkout":[{"version":"2026-07-28"}]}` {
		t.Errorf("json %s", b)
	}
}

func TestNegotiatePaymentHandlers(t *testing.T) {
	const vendor = "com.example.vendor.delegate_payment"
	o := offer(ourOffer, bcpnames.PixHandler, vendor)
	caps := map[string][]string{bcpnames.Checkout: {v0728}}
	cases := []struct {
		agent []string
		want  []string
	}{
		{[]string{bcpnames.PixHandler}, []string{bcpnames.PixHandler}},
		{[]string{bcpnames.PixHandler, vendor, "com.google.pay"}, []string{bcpnames.PixHandler, vendor}},
		{[]string{"com.google.pay"}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		r, err := Negotiate(o, agentProfile(t, v0728, caps, c.agent...))
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(r.PaymentHandlers)); !slices.Equal(got, c.want) {
			t.Errorf("agent %q: handlers %q, want %q", c.agent, got, c.want)
		}
		if h := r.PaymentHandlers[bcpnames.PixHandler]; len(h) == 1 && h[0].ID != "biz_"+bcpnames.PixHandler {
			t.Errorf("the business entry must be returned, got %+v", h[0])
		}
	}
}

func TestOfferFromProfileJSON(t *testing.T) {
	o, err := OfferFromProfileJSON(fixture(t, "business_profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != v0728 || len(o.Capabilities) != 5 || len(o.PaymentHandlers) != 2 {
		t.Fatalf("%+v", o)
	}
	if ext := o.Capabilities[bcpnames.Fulfillment][0].Extends; !slices.Equal(ext, Extends{bcpnames.Checkout}) {
		t.Errorf("extends %q", ext)
	}
	agent, err := Parse("https://agente.example.com/p.json", fixture(t, "agent_profile.json"), testValidator(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Negotiate(o, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{bcpnames.Checkout: v0728, bcpnames.Fulfillment: v0728, bcpnames.Discount: v0728, bcpnames.Order: v0728}
	if !reflect.DeepEqual(r.Capabilities, want) || r.Incompatible {
		t.Errorf("%+v", r)
	}
	if got := slices.Sorted(maps.Keys(r.PaymentHandlers)); !slices.Equal(got, []string{bcpnames.PixHandler}) {
		t.Errorf("handlers %q", got)
	}
	for _, bad := range []string{`{`, `{"ucp":{}}`} {
		if _, err := OfferFromProfileJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
