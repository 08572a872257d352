package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// refundIDRE is what the payments service accepts as a refund id, which
// the refund id also is.
var refundIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// RefundOrder refunds part or all of what the order's payment took. The
// refund id is minted (or taken from the caller) and recorded as a pending
// adjustment, reserving its amount, before the payments service is asked:
// a crash or a lost answer leaves a pending refund that the refund job
// settles by asking again with the same id, never a second refund. At no
// point can completed plus pending refunds exceed the order total.
func (s *Service) RefundOrder(ctx context.Context, r *connect.Request[ordersv1.RefundOrderRequest]) (*connect.Response[ordersv1.RefundOrderResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	m := r.Msg
	refundID := m.GetRefundId()
	if refundID == "" {
		refundID = ids.New("rfd")
	} else if !refundIDRE.MatchString(refundID) {
		return nil, apperr.Invalid("refund_id", "invalid_refund_id", "refund_id must be 1-64 letters, digits, '_' or '-'")
	}
	if m.GetAmount() < 0 {
		return nil, apperr.Invalid("amount", "invalid_amount", "amount must be positive (or 0 for everything not yet refunded)")
	}
	if len(m.GetReason()) > 500 {
		return nil, apperr.Invalid("reason", "too_long", "reason is longer than 500 bytes")
	}
	at := s.now().UTC().Truncate(time.Millisecond)
	var adj ordersdb.OrdersAdjustment
	var attemptID string
	o, err := s.mutate(ctx, m.GetOrderId(), func(tx pgx.Tx, q *ordersdb.Queries, row *ordersdb.OrdersOrder, o *bcp.Order) error {
		attemptID = row.PaymentAttemptID
		prev, err := q.GetAdjustment(ctx, ordersdb.GetAdjustmentParams{TenantID: tid, ID: refundID})
		switch {
		case err == nil:
			if prev.OrderID != row.ID || (m.GetAmount() != 0 && m.GetAmount() != prev.Amount) {
				return apperr.New(apperr.KindAlreadyExists, "refund_id_conflict", "refund %q already exists for another order or amount", refundID)
			}
			adj = prev
			return errNoChange // a retry: report (and maybe push on) the refund it made
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if row.PaymentAttemptID == "" {
			return apperr.New(apperr.KindFailedPrecondition, "no_payment", "the order has no payment to refund")
		}
		refs, err := refundLines(o, m.GetLineItems())
		if err != nil {
			return err
		}
		reserved, err := q.ReservedRefunds(ctx, ordersdb.ReservedRefundsParams{TenantID: tid, OrderID: row.ID})
		if err != nil {
			return err
		}
		left := row.Total - reserved
		amount := m.GetAmount()
		if amount == 0 {
			amount = left
		}
		if left <= 0 {
			return apperr.New(apperr.KindFailedPrecondition, "nothing_to_refund", "the order is already refunded in full (or being refunded)")
		}
		if amount > left {
			return apperr.Invalid("amount", "refund_exceeds_remaining", "at most %d can still be refunded", left)
		}
		lines, err := json.Marshal(refs)
		if err != nil {
			return err
		}
		adj = ordersdb.OrdersAdjustment{
			TenantID: tid, ID: refundID, OrderID: row.ID, Type: bcp.AdjustmentRefund, Status: bcp.AdjustmentPending,
			Amount: amount, Reason: m.GetReason(), LineItems: lines, OccurredAt: at,
		}
		if err := q.InsertAdjustment(ctx, ordersdb.InsertAdjustmentParams{
			TenantID: tid, ID: adj.ID, OrderID: adj.OrderID, Type: adj.Type, Status: adj.Status, Amount: amount,
			Reason: adj.Reason, LineItems: lines, OccurredAt: at,
		}); err != nil {
			return err
		}
		o.Adjustments = append(o.Adjustments, bcp.Adjustment{
			ID: refundID, Type: bcp.AdjustmentRefund, OccurredAt: at, Status: bcp.AdjustmentPending, LineItems: refs,
			Totals: []bcp.Total{{Type: bcp.TotalTotal, DisplayText: "Reembolso", Amount: -amount}}, Description: m.GetReason(),
		})
		if s.jobs == nil {
			return apperr.New(apperr.KindInternal, "internal", "orders: no job client to settle refunds")
		}
		_, err = jobs.InsertTx(ctx, s.jobs, tx, RefundArgs{TenantID: tid, OrderID: row.ID, RefundID: refundID},
			&river.InsertOpts{ScheduledAt: at.Add(s.cfg.RefundRecheck), MaxAttempts: 20})
		return err
	})
	if err != nil {
		return nil, err
	}
	if adj.Status == bcp.AdjustmentPending {
		// New, or a retry of one whose outcome is still unknown: ask.
		if o, adj, err = s.settleRefund(ctx, adj, attemptID); err != nil {
			return nil, err
		}
	}
	b, err := render(o)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ordersv1.RefundOrderResponse{
		OrderJson: b, RefundId: adj.ID, Status: adj.Status, Amount: adj.Amount, FailureMessage: adj.FailureMessage,
	}), nil
}

// refundLines checks the units a refund names; on the adjustment they are
// negative (units taken back).
func refundLines(o *bcp.Order, req []*ordersv1.LineQuantity) ([]bcp.LineItemRef, error) {
	var refs []bcp.LineItemRef
	seen := map[string]bool{}
	for i, lq := range req {
		path := fmt.Sprintf("line_items[%d]", i)
		var line *bcp.OrderLineItem
		for j := range o.LineItems {
			if o.LineItems[j].ID == lq.GetId() {
				line = &o.LineItems[j]
			}
		}
		if line == nil {
			return nil, apperr.Invalid(path+".id", "unknown_line_item", "the order has no line %q", lq.GetId())
		}
		if seen[lq.GetId()] {
			return nil, apperr.Invalid(path+".id", "duplicate_line_item", "line %q is named twice", lq.GetId())
		}
		seen[lq.GetId()] = true
		most := line.Quantity.Total
		if line.Quantity.Original != nil {
			most = *line.Quantity.Original
		}
		if lq.GetQuantity() < 1 || lq.GetQuantity() > most {
			return nil, apperr.Invalid(path+".quantity", "invalid_quantity", "quantity must be between 1 and %d", most)
		}
		refs = append(refs, bcp.LineItemRef{ID: lq.GetId(), Quantity: -lq.GetQuantity()})
	}
	return refs, nil
}

// settleRefund asks the payments service for the refund (idempotent by
// refund id) and records the outcome when there is one. It returns the
// order and the adjustment as they stand afterwards.
func (s *Service) settleRefund(ctx context.Context, adj ordersdb.OrdersAdjustment, attemptID string) (*bcp.Order, ordersdb.OrdersAdjustment, error) {
	status, msg := s.askRefund(ctx, adj, attemptID)
	if status == bcp.AdjustmentPending {
		s.metrics.refunds.WithLabelValues(status).Inc()
		row, err := s.load(ctx, adj.OrderID)
		if err != nil {
			return nil, adj, err
		}
		o, err := decodeOrder(row.Snapshot)
		return o, adj, err
	}
	o, err := s.mutate(ctx, adj.OrderID, func(tx pgx.Tx, q *ordersdb.Queries, row *ordersdb.OrdersOrder, o *bcp.Order) error {
		n, err := q.SettleAdjustment(ctx, ordersdb.SettleAdjustmentParams{TenantID: adj.TenantID, ID: adj.ID, Status: status, FailureMessage: msg})
		if err != nil {
			return err
		}
		if n == 0 {
			// Settled meanwhile (the job or a concurrent retry): report that.
			cur, err := q.GetAdjustment(ctx, ordersdb.GetAdjustmentParams{TenantID: adj.TenantID, ID: adj.ID})
			if err != nil {
				return err
			}
			adj = cur
			return errNoChange
		}
		adj.Status, adj.FailureMessage = status, msg
		if status == bcp.AdjustmentCompleted {
			row.Refunded += adj.Amount
		}
		for i := range o.Adjustments {
			if o.Adjustments[i].ID == adj.ID {
				o.Adjustments[i].Status = status
			}
		}
		return nil
	})
	if err != nil {
		return nil, adj, err
	}
	s.metrics.refunds.WithLabelValues(adj.Status).Inc()
	s.log.InfoContext(ctx, "refund settled", "tenant_id", adj.TenantID, "order_id", adj.OrderID, "refund_id", adj.ID, "status", adj.Status)
	return o, adj, nil
}

// askRefund calls RefundPayment and classifies the answer: completed,
// failed (with the reason), or pending when the outcome is not known —
// the payments service is still working on it, or the call failed in a
// way that says nothing about whether the money moved. Only a refusal
// (the request itself was wrong for the payment) counts as failed.
func (s *Service) askRefund(ctx context.Context, adj ordersdb.OrdersAdjustment, attemptID string) (status, msg string) {
	if s.cfg.Payments == nil {
		return bcp.AdjustmentPending, ""
	}
	resp, err := s.cfg.Payments.RefundPayment(ctx, connect.NewRequest(&paymentsv1.RefundPaymentRequest{
		AttemptId: attemptID, RefundId: adj.ID, Amount: adj.Amount, Reason: adj.Reason,
	}))
	if err != nil {
		e := apperr.As(err)
		switch e.Kind {
		case apperr.KindInvalidArgument, apperr.KindFailedPrecondition, apperr.KindNotFound, apperr.KindPermissionDenied:
			return bcp.AdjustmentFailed, e.Message
		}
		s.log.WarnContext(ctx, "refund outcome unknown; the refund job will ask again", "tenant_id", adj.TenantID, "refund_id", adj.ID, "err", err)
		return bcp.AdjustmentPending, ""
	}
	switch rf := resp.Msg.GetRefund(); rf.GetStatus() {
	case "succeeded":
		return bcp.AdjustmentCompleted, ""
	case "failed":
		msg := rf.GetFailureMessage()
		if msg == "" {
			msg = "refund failed"
		}
		return bcp.AdjustmentFailed, msg
	default:
		return bcp.AdjustmentPending, ""
	}
}

// RefundArgs is the durable job that settles a pending refund: inserted
// with the adjustment, it asks the payments service again (same refund
// id) until the refund completes or fails.
type RefundArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	OrderID  string    `json:"order_id"`
	RefundID string    `json:"refund_id"`
}

// Kind names the job.
func (RefundArgs) Kind() string { return "order_refund_settle" }

// InsertOpts routes it to the orders queue.
func (RefundArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueueOrders) }

// RefundWorker works RefundArgs jobs.
type RefundWorker struct {
	river.WorkerDefaults[RefundArgs]
	Service *Service
}

// Work settles the refund if it is still pending; a still unknown outcome
// is an error, so river asks again later.
func (w *RefundWorker) Work(ctx context.Context, job *river.Job[RefundArgs]) error {
	ctx = tenancy.With(ctx, job.Args.TenantID)
	s := w.Service
	var adj ordersdb.OrdersAdjustment
	var row ordersdb.OrdersOrder
	err := pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := ordersdb.New(tx)
		var err error
		if adj, err = q.GetAdjustment(ctx, ordersdb.GetAdjustmentParams{TenantID: job.Args.TenantID, ID: job.Args.RefundID}); err != nil {
			return err
		}
		row, err = q.GetOrder(ctx, ordersdb.GetOrderParams{TenantID: job.Args.TenantID, ID: adj.OrderID})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return river.JobCancel(err)
	}
	if err != nil || adj.Status != bcp.AdjustmentPending {
		return err
	}
	if _, adj, err = s.settleRefund(ctx, adj, row.PaymentAttemptID); err != nil {
		return err
	}
	if adj.Status == bcp.AdjustmentPending {
		return fmt.Errorf("refund %s still pending", adj.ID)
	}
	return nil
}
