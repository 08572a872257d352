package catalog_test

import (
	"strconv"
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

// Concurrent reservations of two variants listed in either order never
// deadlock and never oversell; concurrent reservations for one checkout
// (a retried completion racing its original) take its stock once.
func TestConcurrentReservations(t *testing.T) {
	e := start(t)
	ctx := tenant()
	p := e.create(ctx, &catalogv1.Product{Title: "Kit", Active: true, Variants: []*catalogv1.Variant{variant("AAA", 1000, 5), variant("BBB", 2000, 5)}})
	a, b := bySKU(p)["AAA"].GetId(), bySKU(p)["BBB"].GetId()
	stock := func() (int64, int64) {
		v := bySKU(e.get(ctx, p.GetId()))
		return v["AAA"].GetStock(), v["BBB"].GetStock()
	}
	reserve := func(checkout string, lines ...*catalogv1.StockLine) (bool, error) {
		r, err := e.client.ReserveStock(ctx, connect.NewRequest(&catalogv1.ReserveStockRequest{CheckoutId: checkout, Lines: lines}))
		if err != nil {
			return false, err
		}
		return r.Msg.GetReserved(), nil
	}
	var wg sync.WaitGroup
	wins := make(chan bool, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines := []*catalogv1.StockLine{{VariantId: a, Quantity: 1}, {VariantId: b, Quantity: 1}}
			if i%2 == 1 {
				lines[0], lines[1] = lines[1], lines[0]
			}
			ok, err := reserve("kit_"+strconv.Itoa(i), lines...)
			if err != nil && connect.CodeOf(err) != connect.CodeFailedPrecondition {
				t.Errorf("reservation %d: %v", i, err)
			}
			wins <- ok
		}()
	}
	wg.Wait()
	close(wins)
	won := 0
	for ok := range wins {
		if ok {
			won++
		}
	}
	if sa, sb := stock(); won != 5 || sa != 0 || sb != 0 {
		t.Fatalf("12 kits for 5 in stock: %d reserved, stock left %d and %d", won, sa, sb)
	}

	// One checkout, eight concurrent calls: one reservation, one unit taken.
	p2 := e.create(ctx, &catalogv1.Product{Title: "Copo", Active: true, Variants: []*catalogv1.Variant{variant("COP", 900, 5)}})
	cop := bySKU(p2)["COP"].GetId()
	won = 0
	results := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := reserve("chk_same", &catalogv1.StockLine{VariantId: cop, Quantity: 1})
			if err != nil {
				t.Errorf("same-checkout reservation: %v", err)
			}
			results <- ok
		}()
	}
	wg.Wait()
	close(results)
	for ok := range results {
		if ok {
			won++
		}
	}
	if left := bySKU(e.get(ctx, p2.GetId()))["COP"].GetStock(); won != 1 || left != 4 {
		t.Fatalf("eight calls for one checkout: %d reported reserved, stock 5 → %d (want 1 and 4)", won, left)
	}
	rel, err := e.client.ReleaseStock(ctx, connect.NewRequest(&catalogv1.ReleaseStockRequest{CheckoutId: "chk_same"}))
	if err != nil || rel.Msg.GetReleasedLines() != 1 {
		t.Fatalf("release: %v %v", rel, err)
	}
	if left := bySKU(e.get(ctx, p2.GetId()))["COP"].GetStock(); left != 5 {
		t.Fatalf("after release, stock %d, want 5", left)
	}
}

// With check_prices a reservation takes stock only at the prices the buyer
// saw and only for items still for sale, and says which rule refused it.
func TestReserveStockAtShownPrices(t *testing.T) {
	e := start(t)
	ctx := tenant()
	p := e.create(ctx, &catalogv1.Product{Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{variant("CAN", 3990, 3), variant("XIC", 1990, 5)}})
	can, xic := bySKU(p)["CAN"].GetId(), bySKU(p)["XIC"].GetId()
	stocks := func() [2]int64 {
		v := bySKU(e.get(ctx, p.GetId()))
		return [2]int64{v["CAN"].GetStock(), v["XIC"].GetStock()}
	}
	reserve := func(checkout string, lines ...*catalogv1.StockLine) (*catalogv1.ReserveStockResponse, error) {
		r, err := e.client.ReserveStock(ctx, connect.NewRequest(&catalogv1.ReserveStockRequest{CheckoutId: checkout, Lines: lines, CheckPrices: true}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	line := func(id string, qty, price int64) *catalogv1.StockLine {
		return &catalogv1.StockLine{VariantId: id, Quantity: qty, UnitPrice: price}
	}
	refused := func(what string, err error, code connect.Code, appCode, field string) {
		t.Helper()
		wantErr(t, err, code, appCode, field)
		if got := stocks(); got != [2]int64{3, 5} {
			t.Fatalf("%s took stock: %v", what, got)
		}
	}

	_, err := reserve("chk_a", line(xic, 1, 1990), line(can, 1, 3890))
	refused("a changed price", err, connect.CodeFailedPrecondition, "price_changed", "")
	_, err = reserve("chk_a", line(can, 4, 3990))
	refused("too little stock", err, connect.CodeFailedPrecondition, "out_of_stock", "")
	_, err = reserve("chk_a", line(can, 4, 3890))
	refused("a changed price and too little stock", err, connect.CodeFailedPrecondition, "price_changed", "")
	_, err = reserve("chk_a", line("var_nope", 1, 100))
	refused("an unknown variant", err, connect.CodeFailedPrecondition, "item_unavailable", "")
	_, err = reserve("chk_a", line(can, 1, 3990), line(can, 1, 3890))
	refused("one variant at two prices", err, connect.CodeInvalidArgument, "invalid_line", "lines[1].unit_price")
	_, err = reserve("chk_a", line(can, 1, -1))
	refused("a negative price", err, connect.CodeInvalidArgument, "invalid_line", "lines[0].unit_price")

	// The shown prices: two lines of CAN add up.
	if r, err := reserve("chk_a", line(can, 1, 3990), line(xic, 2, 1990), line(can, 1, 3990)); err != nil || !r.GetReserved() || stocks() != [2]int64{1, 3} {
		t.Fatalf("at the shown prices: %v %v, stock %v", r, err, stocks())
	}

	// Held already: nothing more is taken, but the prices are still checked
	// (a reservation left by an earlier attempt must not let a changed price
	// through).
	if r, err := reserve("chk_a", line(can, 2, 3990), line(xic, 2, 1990)); err != nil || r.GetReserved() || stocks() != [2]int64{1, 3} {
		t.Fatalf("again at the shown prices: %v %v, stock %v", r, err, stocks())
	}
	_, err = reserve("chk_a", line(can, 2, 3890), line(xic, 2, 1990))
	wantErr(t, err, connect.CodeFailedPrecondition, "price_changed", "")

	// A withdrawn variant, then a withdrawn product (edited as read now:
	// an update writes the stock it is given).
	p = e.get(ctx, p.GetId())
	bySKU(p)["XIC"].Active = false
	if p, err = e.update(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err = reserve("chk_b", line(can, 1, 3990), line(xic, 1, 1990))
	wantErr(t, err, connect.CodeFailedPrecondition, "item_unavailable", "")
	bySKU(p)["XIC"].Active, p.Active = true, false
	if _, err = e.update(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err = reserve("chk_b", line(can, 1, 3990))
	wantErr(t, err, connect.CodeFailedPrecondition, "item_unavailable", "")
	// Without check_prices (the old contract) an inactive item is still
	// reserved: prices and activity were checked by the caller.
	r, err := e.client.ReserveStock(ctx, connect.NewRequest(&catalogv1.ReserveStockRequest{CheckoutId: "chk_b", Lines: []*catalogv1.StockLine{{VariantId: can, Quantity: 1}}}))
	if err != nil || !r.Msg.GetReserved() || stocks() != [2]int64{0, 3} {
		t.Fatalf("without check_prices: %v %v, stock %v", r, err, stocks())
	}
}
