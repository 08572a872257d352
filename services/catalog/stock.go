package catalog

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// ReserveStock takes a checkout's stock in one statement: every line or
// none, and with check_prices only at the prices the buyer saw. It does
// not take the catalog write lock: the statement locks the variant rows it
// checks and changes, which is safe against concurrent reservations and
// edits.
func (s *Service) ReserveStock(ctx context.Context, r *connect.Request[catalogv1.ReserveStockRequest]) (*connect.Response[catalogv1.ReserveStockResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	id := r.Msg.GetCheckoutId()
	if id == "" {
		return nil, apperr.Invalid("checkout_id", "checkout_id_required", "checkout_id is required")
	}
	// One row per variant; lines for the same variant add up (and, when
	// prices are checked, must expect the same price). Sorted, so
	// concurrent reservations lock variants in the same order.
	check := r.Msg.GetCheckPrices()
	want := map[string]int64{}
	price := map[string]int64{}
	for i, l := range r.Msg.GetLines() {
		if l.GetVariantId() == "" || l.GetQuantity() <= 0 {
			return nil, apperr.Invalid("lines["+strconv.Itoa(i)+"]", "invalid_line", "each line needs a variant and a positive quantity")
		}
		if p, seen := price[l.GetVariantId()]; check && (l.GetUnitPrice() < 0 || seen && p != l.GetUnitPrice()) {
			return nil, apperr.Invalid("lines["+strconv.Itoa(i)+"].unit_price", "invalid_line", "a variant's lines must expect one non-negative price")
		}
		want[l.GetVariantId()] += l.GetQuantity()
		price[l.GetVariantId()] = l.GetUnitPrice()
	}
	variants := make([]string, 0, len(want))
	for v := range want {
		variants = append(variants, v)
	}
	sort.Strings(variants)
	quantities := make([]int64, len(variants))
	prices := make([]int64, len(variants))
	for i, v := range variants {
		quantities[i], prices[i] = want[v], price[v]
	}
	// One statement (ReserveStock in db/queries/catalog/stock.sql): the
	// checks, the stock and the reservations, all or nothing.
	var row catalogdb.ReserveStockRow
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		row, err = catalogdb.New(q).ReserveStock(ctx, catalogdb.ReserveStockParams{TenantID: tid, CheckoutID: id,
			VariantIds: variants, Quantities: quantities, Prices: prices, CheckPrices: check})
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case row.Closed:
		return nil, apperr.New(apperr.KindFailedPrecondition, codeCheckoutClosed, "checkout %s ended without an order; it cannot reserve stock", id)
	case check && !row.Available:
		return nil, apperr.New(apperr.KindFailedPrecondition, "item_unavailable", "an item of %s is not for sale", strings.Join(variants, ", "))
	case check && !row.PricesOk:
		return nil, apperr.New(apperr.KindFailedPrecondition, "price_changed", "a price of %s changed", strings.Join(variants, ", "))
	case row.AlreadyHeld:
		return connect.NewResponse(&catalogv1.ReserveStockResponse{}), nil // already reserved: nothing to do
	case !row.ReservedOk:
		return nil, apperr.New(apperr.KindFailedPrecondition, "out_of_stock", "not enough stock of %s", strings.Join(variants, ", "))
	case row.LinesBooked != int64(len(variants)):
		// A concurrent call for this checkout booked first; what this one
		// booked (nothing, unless the two asked for different lines) took
		// its own stock, so stock and reservations still agree.
		slog.WarnContext(ctx, "catalog: concurrent stock reservations for one checkout", "checkout_id", id, "lines", len(variants), "booked_here", row.LinesBooked)
		return connect.NewResponse(&catalogv1.ReserveStockResponse{}), nil
	}
	return connect.NewResponse(&catalogv1.ReserveStockResponse{Reserved: true}), nil
}

// codeCheckoutClosed refuses a reservation for a checkout that ended
// without an order (ReleaseStock with close).
const codeCheckoutClosed = "checkout_closed"

// ReleaseStock returns a checkout's reserved stock; with close it also
// fences the checkout against any later reservation.
func (s *Service) ReleaseStock(ctx context.Context, r *connect.Request[catalogv1.ReleaseStockRequest]) (*connect.Response[catalogv1.ReleaseStockResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var released int32
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		if r.Msg.GetClose() {
			// Own statement first: it waits for a reservation in flight,
			// and the release below (a new snapshot) sees what it booked.
			if err := q.CloseCheckoutStock(ctx, catalogdb.CloseCheckoutStockParams{TenantID: tid, CheckoutID: r.Msg.GetCheckoutId()}); err != nil {
				return err
			}
		}
		rows, err := q.ReleaseReservations(ctx, catalogdb.ReleaseReservationsParams{TenantID: tid, CheckoutID: r.Msg.GetCheckoutId()})
		if err != nil {
			return err
		}
		for _, row := range rows {
			if err := q.ReturnStock(ctx, catalogdb.ReturnStockParams{TenantID: tid, ID: row.VariantID, Quantity: row.Quantity}); err != nil {
				return err
			}
		}
		released = int32(len(rows))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&catalogv1.ReleaseStockResponse{ReleasedLines: released}), nil
}
