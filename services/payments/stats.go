package payments

import (
	"context"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/statswindow"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// GetPaymentStats counts the tenant's attempts created in the window: Pix
// by outcome and São Paulo day, cards by outcome, in one query. Any
// handler other than the built-in Pix one is a card handler.
func (s *Service) GetPaymentStats(ctx context.Context, r *connect.Request[paymentsv1.GetPaymentStatsRequest]) (*connect.Response[paymentsv1.GetPaymentStatsResponse], error) {
	since, until, err := statswindow.Parse(r.Msg.GetSinceUnix(), r.Msg.GetUntilUnix())
	if err != nil {
		return nil, err
	}
	var rows []paymentsdb.PaymentStatsRow
	err = s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		rows, err = q.PaymentStats(ctx, paymentsdb.PaymentStatsParams{PixHandler: bcpnames.PixHandler, TenantID: tid, Since: since, Until: until})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &paymentsv1.GetPaymentStatsResponse{}
	var day *paymentsv1.PixDay
	for _, row := range rows {
		if !row.Pix {
			switch row.Outcome {
			case "paid":
				out.CardApproved += row.N
			case stFailed:
				out.CardDeclined += row.N
			}
			continue
		}
		switch row.Outcome {
		case "paid":
			out.PixPaid += row.N
		case stExpired:
			out.PixExpired += row.N
		case "pending":
			out.PixPending += row.N
		default:
			continue
		}
		if row.Outcome == "pending" {
			continue
		}
		// Rows come ordered by day: a new day starts a new entry.
		if day == nil || day.Day != row.Day {
			day = &paymentsv1.PixDay{Day: row.Day}
			out.PixPerDay = append(out.PixPerDay, day)
		}
		if row.Outcome == "paid" {
			day.Paid += row.N
		} else {
			day.Expired += row.N
		}
	}
	return connect.NewResponse(out), nil
}
