package orders

import (
	"context"
	"sort"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/statswindow"
	"github.com/bcpdev/bcp/internal/tenancy"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// GetOrderStats sums the tenant's orders created in the window: totals,
// per São Paulo day and per agent, in one query.
func (s *Service) GetOrderStats(ctx context.Context, r *connect.Request[ordersv1.GetOrderStatsRequest]) (*connect.Response[ordersv1.GetOrderStatsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	since, until, err := statswindow.Parse(r.Msg.GetSinceUnix(), r.Msg.GetUntilUnix())
	if err != nil {
		return nil, err
	}
	var rows []ordersdb.OrderStatsRow
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err = ordersdb.New(tx).OrderStats(ctx, ordersdb.OrderStatsParams{TenantID: tid, Since: since, Until: until})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &ordersv1.GetOrderStatsResponse{}
	for _, row := range rows {
		switch row.Kind {
		case "total":
			out.Orders, out.GmvMinor, out.RefundedMinor = row.Orders, row.Gmv, row.Refunded
		case "day":
			out.PerDay = append(out.PerDay, &ordersv1.OrderDay{Day: row.Key, Orders: row.Orders, GmvMinor: row.Gmv})
		case "agent":
			out.ByAgent = append(out.ByAgent, &ordersv1.AgentOrders{Agent: row.Key, Orders: row.Orders, GmvMinor: row.Gmv})
		}
	}
	// Days come ascending from the query; agents by GMV, then name, so
	// the order is stable.
	sort.SliceStable(out.ByAgent, func(i, j int) bool {
		a, b := out.ByAgent[i], out.ByAgent[j]
		if a.GmvMinor != b.GmvMinor {
			return a.GmvMinor > b.GmvMinor
		}
		return a.Agent < b.Agent
	})
	return connect.NewResponse(out), nil
}
