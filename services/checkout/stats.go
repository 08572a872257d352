package checkout

import (
	"context"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/statswindow"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// GetCheckoutStats counts the tenant's sessions created in the window, by
// current status and by São Paulo day, in one query.
func (s *Service) GetCheckoutStats(ctx context.Context, r *connect.Request[checkoutv1.GetCheckoutStatsRequest]) (*connect.Response[checkoutv1.GetCheckoutStatsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	since, until, err := statswindow.Parse(r.Msg.GetSinceUnix(), r.Msg.GetUntilUnix())
	if err != nil {
		return nil, err
	}
	var rows []checkoutdb.CheckoutStatsRow
	err = pgstore.InTenant(ctx, s.store.pool, func(tx pgx.Tx) error {
		rows, err = checkoutdb.New(tx).CheckoutStats(ctx, checkoutdb.CheckoutStatsParams{TenantID: tid, Since: since, Until: until})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &checkoutv1.GetCheckoutStatsResponse{}
	for _, row := range rows {
		if row.ByDay {
			out.CreatedPerDay = append(out.CreatedPerDay, &checkoutv1.DayCount{Day: row.Day, Count: row.N})
			continue
		}
		out.ByStatus = append(out.ByStatus, &checkoutv1.StatusCount{Status: row.Status, Count: row.N})
		out.Total += row.N
	}
	return connect.NewResponse(out), nil
}
