package catalog_test

import (
	"sync"
	"testing"

	"connectrpc.com/connect"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

// Reservations take stock all-or-nothing, are idempotent per checkout,
// give stock back on release, and never oversell the last unit.
func TestReserveAndReleaseStock(t *testing.T) {
	e := start(t)
	ctx := tenant()
	p := e.create(ctx, &catalogv1.Product{Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{variant("CAN", 3990, 3), variant("XIC", 1990, 1)}})
	can, xic := bySKU(p)["CAN"].GetId(), bySKU(p)["XIC"].GetId()
	stock := func(id string) int64 {
		return bySKU(e.get(ctx, p.GetId()))[map[string]string{can: "CAN", xic: "XIC"}[id]].GetStock()
	}
	reserve := func(checkout string, lines ...*catalogv1.StockLine) (*catalogv1.ReserveStockResponse, error) {
		r, err := e.client.ReserveStock(ctx, connect.NewRequest(&catalogv1.ReserveStockRequest{CheckoutId: checkout, Lines: lines}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	if r, err := reserve("chk_a", &catalogv1.StockLine{VariantId: can, Quantity: 2}); err != nil || !r.GetReserved() || stock(can) != 1 {
		t.Fatalf("reserve 2 of 3: %v %v, stock %d", r, err, stock(can))
	}
	if r, err := reserve("chk_a", &catalogv1.StockLine{VariantId: can, Quantity: 2}); err != nil || r.GetReserved() || stock(can) != 1 {
		t.Fatalf("second reserve for the same checkout must change nothing: %v %v, stock %d", r, err, stock(can))
	}
	// All or nothing: the XIC line fits, the CAN line does not.
	_, err := reserve("chk_b", &catalogv1.StockLine{VariantId: xic, Quantity: 1}, &catalogv1.StockLine{VariantId: can, Quantity: 2})
	wantErr(t, err, connect.CodeFailedPrecondition, "out_of_stock", "")
	if stock(xic) != 1 || stock(can) != 1 {
		t.Fatalf("a failed reservation took stock: xic %d can %d", stock(xic), stock(can))
	}
	rel, err := e.client.ReleaseStock(ctx, connect.NewRequest(&catalogv1.ReleaseStockRequest{CheckoutId: "chk_a"}))
	if err != nil || rel.Msg.GetReleasedLines() != 1 || stock(can) != 3 {
		t.Fatalf("release: %v %v, stock %d", rel, err, stock(can))
	}
	if rel, _ := e.client.ReleaseStock(ctx, connect.NewRequest(&catalogv1.ReleaseStockRequest{CheckoutId: "chk_a"})); rel.Msg.GetReleasedLines() != 0 || stock(can) != 3 {
		t.Fatal("a second release gave stock back twice")
	}
	// A new attempt on the same checkout reserves again.
	if r, err := reserve("chk_a", &catalogv1.StockLine{VariantId: can, Quantity: 1}); err != nil || !r.GetReserved() || stock(can) != 2 {
		t.Fatalf("re-reserve after release: %v %v, stock %d", r, err, stock(can))
	}
	// Eight checkouts race for the last XIC: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if r, err := reserve("race_"+string(rune('a'+i)), &catalogv1.StockLine{VariantId: xic, Quantity: 1}); err == nil && r.GetReserved() {
				wins <- "won"
			}
		}(i)
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 || stock(xic) != 0 {
		t.Fatalf("%d winners for the last unit, stock %d", len(wins), stock(xic))
	}
	// Another tenant's reservation call cannot touch this tenant's stock.
	other := tenant()
	r, err := e.client.ReserveStock(other, connect.NewRequest(&catalogv1.ReserveStockRequest{CheckoutId: "chk_x", Lines: []*catalogv1.StockLine{{VariantId: can, Quantity: 1}}}))
	wantErr(t, err, connect.CodeFailedPrecondition, "out_of_stock", "")
	if r != nil || stock(can) != 2 {
		t.Fatalf("cross-tenant reservation: stock %d", stock(can))
	}
}
