package payments

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// GetPaymentStats counts the tenant's attempts created in the window: Pix
// by outcome and São Paulo day, cards by outcome, in one query. Any
// handler other than the built-in Pix one is a card handler.
func (s *Service) GetPaymentStats(ctx context.Context, r *connect.Request[paymentsv1.GetPaymentStatsRequest]) (*connect.Response[paymentsv1.GetPaymentStatsResponse], error) {
	since, until, err := statsWindow(r.Msg.GetSinceUnix(), r.Msg.GetUntilUnix())
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
