package agentprofile_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Discount extends checkout and cart (UCP 2026-04-08 discount.json composes
// both): the profile says so with an array, a merchant without carts says
// checkout alone, and a cart answer lists the discount it applied.
func TestDiscountExtendsCheckoutAndCart(t *testing.T) {
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	profile := func(caps []string) (json.RawMessage, map[string]json.RawMessage) {
		t.Helper()
		body, err := json.Marshal(edge.BuildProfile(&tenantsv1.GetDiscoveryResponse{Tenant: &tenantsv1.Tenant{Capabilities: caps}}, "https://loja.example.com.br"))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.ValidateBusinessProfile(body); err != nil {
			t.Fatalf("profile fails the business profile schema: %v\n%s", err, body)
		}
		var p struct {
			UCP struct {
				Capabilities map[string][]struct {
					Extends json.RawMessage `json:"extends"`
				} `json:"capabilities"`
			} `json:"ucp"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		ext := map[string]json.RawMessage{}
		for name, e := range p.UCP.Capabilities {
			ext[name] = e[0].Extends
		}
		return body, ext
	}
	body, ext := profile(bcpnames.DefaultCapabilities)
	want := map[string]string{
		bcpnames.Discount:     `["br.dev.bcp.shopping.checkout","br.dev.bcp.shopping.cart"]`,
		bcpnames.Fulfillment:  `"br.dev.bcp.shopping.checkout"`,
		bcpnames.BuyerConsent: `"br.dev.bcp.shopping.checkout"`,
		bcpnames.Cart:         ``,
		bcpnames.Checkout:     ``,
	}
	for name, w := range want {
		if string(ext[name]) != w {
			t.Errorf("%s extends %s, want %s", name, ext[name], w)
		}
	}
	withoutCart := slices.DeleteFunc(slices.Clone(bcpnames.DefaultCapabilities), func(c string) bool { return c == bcpnames.Cart })
	if _, e := profile(withoutCart); string(e[bcpnames.Discount]) != `"br.dev.bcp.shopping.checkout"` {
		t.Errorf("without carts discount extends %s", e[bcpnames.Discount])
	}

	// Negotiated with an agent that speaks carts and discounts: the
	// discount is relevant to cart answers and checkout answers.
	offer, err := agentprofile.OfferFromProfileJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := agentprofile.Parse("https://agente.example.com.br/p.json", []byte(`{"ucp":{"version":"2026-07-28",
		"services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
		"capabilities":{
		 "br.dev.bcp.shopping.checkout":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/checkout","schema":"https://bcp.dev.br/draft/schemas/shopping/checkout.json"}],
		 "br.dev.bcp.shopping.cart":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/cart","schema":"https://bcp.dev.br/draft/schemas/shopping/cart.json"}],
		 "br.dev.bcp.shopping.discount":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/discount","schema":"https://bcp.dev.br/draft/schemas/shopping/discount.json","extends":["br.dev.bcp.shopping.checkout","br.dev.bcp.shopping.cart"]}]},
		"payment_handlers":{}}}`), v, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentprofile.Negotiate(offer, agent)
	if err != nil {
		t.Fatal(err)
	}
	for root, want := range map[string][]string{
		bcpnames.Cart:     {bcpnames.Cart, bcpnames.Discount},
		bcpnames.Checkout: {bcpnames.Checkout, bcpnames.Discount},
	} {
		if got := slices.Sorted(maps.Keys(r.ResponseCapabilities(root))); !slices.Equal(got, want) {
			t.Errorf("%s answers list %q, want %q", root, got, want)
		}
	}
}
