package bcpschema

import "testing"

// bindingTools are the BCP binding's tools as the edge's operation table
// declares them (services/edge/operations.go, whose tests check the tools
// the edge serves against these schemas); this package's tests need tools
// to build schemas from.
var bindingTools = []Tool{
	{Name: "create_checkout", Root: RootCheckout, Op: OpCreate},
	{Name: "get_checkout", Root: RootCheckout, Op: OpRead},
	{Name: "update_checkout", Root: RootCheckout, Op: OpUpdate},
	{Name: "complete_checkout", Root: RootCheckout, Op: OpComplete, IdempotencyKey: true},
	{Name: "cancel_checkout", Root: RootCheckout, Op: OpCancel, IdempotencyKey: true},
	{Name: "get_order", Root: RootOrder, Op: OpRead},
	{Name: "create_cart", Root: RootCart, Op: OpCreate},
	{Name: "get_cart", Root: RootCart, Op: OpRead},
	{Name: "update_cart", Root: RootCart, Op: OpUpdate},
	{Name: "cancel_cart", Root: RootCart, Op: OpCancel, IdempotencyKey: true},
	{Name: "search_catalog", Root: RootCatalogSearch, Op: OpRead},
	{Name: "lookup_catalog", Root: RootCatalogLookup, Op: OpRead},
	{Name: "get_product", Root: RootCatalogProduct, Op: OpRead},
}

// toolsOf lists the binding's tools on roots.
func toolsOf(roots ...Root) []Tool {
	var out []Tool
	for _, t := range bindingTools {
		for _, r := range roots {
			if t.Root == r {
				out = append(out, t)
			}
		}
	}
	return out
}

// checkoutTools are the tools whose arguments hold checkout data (NULs
// are checked there).
var checkoutTools = toolsOf(RootCheckout, RootOrder)

func bindingTool(t testing.TB, name string) Tool {
	t.Helper()
	for _, b := range bindingTools {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no binding tool %s", name)
	return Tool{}
}

// newBindingValidator compiles every binding tool for caps.
func newBindingValidator(caps ...string) (*ToolValidator, error) {
	return NewToolValidator(bindingTools, caps...)
}
