// Package bcpnames holds the BCP protocol's fixed names: the protocol
// version, the service and capability names and where their specs and
// schemas live (architecture §2: UCP 2026-04-08 shapes, renamed).
package bcpnames

// Version is the only protocol version the platform speaks.
const Version = "2026-07-28"

// Service is the shopping service name.
const Service = "br.dev.bcp.shopping"

// Capability names.
const (
	Checkout     = "br.dev.bcp.shopping.checkout"
	Fulfillment  = "br.dev.bcp.shopping.fulfillment"
	Discount     = "br.dev.bcp.shopping.discount"
	BuyerConsent = "br.dev.bcp.shopping.buyer_consent"
	AP2Mandate   = "br.dev.bcp.shopping.ap2_mandate"
	Order        = "br.dev.bcp.shopping.order"
	// Catalog search (search_catalog) and lookup (lookup_catalog,
	// get_product): roots of their own, UCP 2026-04-08 shapes.
	CatalogSearch = "br.dev.bcp.shopping.catalog.search"
	CatalogLookup = "br.dev.bcp.shopping.catalog.lookup"
	// Cart (create_cart, get_cart, update_cart, cancel_cart): a root of
	// its own; create_checkout converts one through cart_id.
	Cart = "br.dev.bcp.shopping.cart"
)

// PixHandler is the built-in Pix payment handler name.
const PixHandler = "br.dev.bcp.pix"

const (
	specBase   = "https://bcp.dev.br/draft/specification/"
	schemaBase = "https://bcp.dev.br/draft/schemas/shopping/"
)

// CapabilityInfo describes a capability as the profile advertises it.
type CapabilityInfo struct {
	Name   string
	Spec   string
	Schema string
	// Extends are the parent capabilities of an extension (nil for roots).
	// Profiles write one parent as a string and several as an array (UCP
	// 2026-04-08 multi-parent extensions); an extension stays negotiated
	// while at least one parent does.
	Extends []string
}

// ExtendsCapability reports whether the capability extends parent.
func (c CapabilityInfo) ExtendsCapability(parent string) bool {
	for _, p := range c.Extends {
		if p == parent {
			return true
		}
	}
	return false
}

// Capabilities lists every capability the platform implements, roots
// first, in the order profiles list them.
var Capabilities = []CapabilityInfo{
	{Name: Checkout, Spec: specBase + "checkout", Schema: schemaBase + "checkout.json"},
	{Name: Order, Spec: specBase + "order", Schema: schemaBase + "order.json"},
	{Name: CatalogSearch, Spec: specBase + "catalog/search", Schema: schemaBase + "catalog_search.json"},
	{Name: CatalogLookup, Spec: specBase + "catalog/lookup", Schema: schemaBase + "catalog_lookup.json"},
	{Name: Cart, Spec: specBase + "cart", Schema: schemaBase + "cart.json"},
	{Name: Fulfillment, Spec: specBase + "fulfillment", Schema: schemaBase + "fulfillment.json", Extends: []string{Checkout}},
	// Discount codes work on carts too (discount.json defines both
	// compositions), and a cart's codes carry over to its checkout.
	{Name: Discount, Spec: specBase + "discount", Schema: schemaBase + "discount.json", Extends: []string{Checkout, Cart}},
	{Name: BuyerConsent, Spec: specBase + "buyer-consent", Schema: schemaBase + "buyer_consent.json", Extends: []string{Checkout}},
	{Name: AP2Mandate, Spec: specBase + "ap2-mandates", Schema: schemaBase + "ap2_mandate.json", Extends: []string{Checkout}},
}

// DefaultCapabilities are enabled for a new merchant. AP2 mandates need
// merchant set-up, so they are opt-in.
var DefaultCapabilities = []string{Checkout, Order, Fulfillment, Discount, BuyerConsent, CatalogSearch, CatalogLookup, Cart}

// LookupCapability returns the info for name.
func LookupCapability(name string) (CapabilityInfo, bool) {
	for _, c := range Capabilities {
		if c.Name == name {
			return c, true
		}
	}
	return CapabilityInfo{}, false
}

// ServiceSpec and MCPSchema are the shopping service's spec and MCP
// OpenRPC document.
const (
	ServiceSpec = specBase + "overview"
	MCPSchema   = "https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"
	PixSpec     = specBase + "pix"
	PixSchema   = "https://bcp.dev.br/draft/schemas/handlers/pix.json"
)
