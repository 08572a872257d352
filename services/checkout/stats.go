package checkout

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
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
	since, until, err := statsWindow(r.Msg.GetSinceUnix(), r.Msg.GetUntilUnix())
	if err != nil {
		return nil, err
	}
	var rows []checkoutdb.CheckoutStatsRow
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
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

// statsWindow turns [since, until) in Unix seconds into query bounds; 0 is
// an open end.
func statsWindow(since, until int64) (*time.Time, *time.Time, error) {
	if since < 0 || until < 0 {
		return nil, nil, apperr.Invalid("since_unix", "invalid_window", "since_unix and until_unix must not be negative")
	}
	if since != 0 && until != 0 && until <= since {
		return nil, nil, apperr.Invalid("until_unix", "invalid_window", "until_unix must be after since_unix")
	}
	var a, b *time.Time
	if since != 0 {
		t := time.Unix(since, 0)
		a = &t
	}
	if until != 0 {
		t := time.Unix(until, 0)
		b = &t
	}
	return a, b, nil
}
