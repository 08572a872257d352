package catalog

import (
	"context"
	"sort"
	"strconv"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// ReserveStock takes a checkout's stock in one transaction: every line or
// none. It does not take the catalog write lock: stock updates are single
// conditional UPDATEs, safe against concurrent reservations and edits.
func (s *Service) ReserveStock(ctx context.Context, r *connect.Request[catalogv1.ReserveStockRequest]) (*connect.Response[catalogv1.ReserveStockResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	id := r.Msg.GetCheckoutId()
	if id == "" {
		return nil, apperr.Invalid("checkout_id", "checkout_id_required", "checkout_id is required")
	}
	// One row per variant; lines for the same variant add up. Sorted, so
	// concurrent reservations lock variants in the same order.
	want := map[string]int64{}
	for i, l := range r.Msg.GetLines() {
		if l.GetVariantId() == "" || l.GetQuantity() <= 0 {
			return nil, apperr.Invalid("lines["+strconv.Itoa(i)+"]", "invalid_line", "each line needs a variant and a positive quantity")
		}
		want[l.GetVariantId()] += l.GetQuantity()
	}
	variants := make([]string, 0, len(want))
	for v := range want {
		variants = append(variants, v)
	}
	sort.Strings(variants)
	reserved := false
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		n, err := q.CountReservations(ctx, catalogdb.CountReservationsParams{TenantID: tid, CheckoutID: id})
		if err != nil || n > 0 {
			return err // already reserved: nothing to do
		}
		for _, v := range variants {
			took, err := q.TakeStock(ctx, catalogdb.TakeStockParams{TenantID: tid, ID: v, Quantity: want[v]})
			if err != nil {
				return err
			}
			if took == 0 {
				return apperr.New(apperr.KindFailedPrecondition, "out_of_stock", "not enough stock of %s", v)
			}
			if err := q.InsertReservation(ctx, catalogdb.InsertReservationParams{TenantID: tid, CheckoutID: id, VariantID: v, Quantity: want[v]}); err != nil {
				return err
			}
		}
		reserved = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&catalogv1.ReserveStockResponse{Reserved: reserved}), nil
}

// ReleaseStock returns a checkout's reserved stock.
func (s *Service) ReleaseStock(ctx context.Context, r *connect.Request[catalogv1.ReleaseStockRequest]) (*connect.Response[catalogv1.ReleaseStockResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var released int32
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
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
