package payments

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/payattempt"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
)

var refundIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

type refundRow = paymentsdb.PaymentsRefund

func refundToProto(r refundRow) *paymentsv1.Refund {
	out := &paymentsv1.Refund{Id: r.ID, Amount: r.Amount, Status: r.Status, FailureMessage: r.FailureMessage}
	if r.AttemptID != nil {
		out.AttemptId = *r.AttemptID
	}
	return out
}

// refund requests a merchant refund: idempotent by refund id; the sum of
// an attempt's refunds never exceeds its amount (checked under the
// attempt's row lock). The refund id at the PSP is minted and stored
// before the call; the call is made at once and, if it cannot finish, by
// the refund's job.
func (s *Service) refund(ctx context.Context, m *paymentsv1.RefundPaymentRequest) (refundRow, error) {
	if !refundIDPattern.MatchString(m.GetRefundId()) {
		return refundRow{}, apperr.Invalid("refund_id", "invalid_refund_id", "refund_id must be 1-64 letters, digits, '_' or '-'")
	}
	if m.GetAmount() <= 0 || m.GetAmount() > maxAmount {
		return refundRow{}, apperr.Invalid("amount", "invalid_amount", "amount must be a positive number of minor units")
	}
	reason := m.GetReason()
	if r := []rune(reason); len(r) > 140 {
		reason = string(r[:140]) // the API Pix descricao limit
	}
	kind := "requested"
	if m.GetAutomaticReason() != "" {
		kind = "automatic"
	}
	var row refundRow
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		a, err := q.LockAttempt(ctx, paymentsdb.LockAttemptParams{TenantID: tid, ID: m.GetAttemptId()})
		if errors.Is(err, pgx.ErrNoRows) {
			return errAttemptNotFound(m.GetAttemptId())
		}
		if err != nil {
			return err
		}
		if existing, err := q.GetRefund(ctx, paymentsdb.GetRefundParams{TenantID: tid, ID: m.GetRefundId()}); err == nil {
			if existing.AttemptID == nil || *existing.AttemptID != a.ID || existing.Amount != m.GetAmount() || existing.Kind != kind {
				return apperr.New(apperr.KindFailedPrecondition, "refund_conflict", "refund %s exists with a different request", m.GetRefundId())
			}
			row = existing
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if a.Status != stSucceeded && a.Status != stPartRefunded && a.Status != stRefunded {
			return apperr.New(apperr.KindFailedPrecondition, "not_refundable", "payment attempt %s is %s; only paid attempts can be refunded", a.ID, a.Status)
		}
		promised, err := q.SumRequestedRefunds(ctx, paymentsdb.SumRequestedRefundsParams{TenantID: tid, AttemptID: &a.ID, OwnE2eID: a.E2eID, OwnChargeID: a.ChargeID})
		if err != nil {
			return err
		}
		if promised+m.GetAmount() > a.Amount {
			return apperr.New(apperr.KindFailedPrecondition, "refund_exceeds_payment",
				"refunds would total %d of a %d payment (%d already refunded or in progress)", promised+m.GetAmount(), a.Amount, promised)
		}
		p := paymentsdb.InsertRefundParams{TenantID: tid, ID: m.GetRefundId(), AttemptID: &a.ID, Kind: kind, HandlerID: a.HandlerID,
			Amount: m.GetAmount(), Reason: reason}
		switch {
		case a.Txid != nil && a.E2eID != nil:
			p.E2eID, p.PspRefundID = a.E2eID, newDevolucaoID()
		case a.ChargeID != nil:
			p.ChargeID, p.PspRefundID = a.ChargeID, "card_"+m.GetRefundId()
		default:
			return apperr.New(apperr.KindInternal, "internal", "paid attempt %s has no PSP reference", a.ID)
		}
		if row, err = q.InsertRefund(ctx, p); err != nil {
			return err
		}
		if kind == "automatic" {
			why := m.GetAutomaticReason()
			if err := q.InsertAlert(ctx, paymentsdb.InsertAlertParams{TenantID: tid, ID: ids.New("alr"), Kind: why, AttemptID: a.ID,
				Message: fmt.Sprintf("Pagamento %s de %s devolvido automaticamente (%s): %s", a.ID, money.FormatBRL(m.GetAmount()), why, reason)}); err != nil {
				return err
			}
			s.metrics.alerts.WithLabelValues(why).Inc()
			s.metrics.autoRefunds.WithLabelValues(why).Inc()
		}
		return s.insertJob(ctx, tx, refundArgs{TenantID: tid, RefundID: row.ID}, &river.InsertOpts{ScheduledAt: s.now().Add(refundBackstop)})
	})
	if constraintOf(err) == "refunds_pkey" {
		return s.refund(ctx, m) // a concurrent identical request inserted it first
	}
	if err != nil {
		return refundRow{}, err
	}
	if row.Status != "pending" {
		return row, nil
	}
	done, err := s.executeRefund(ctx, row.ID)
	if err != nil {
		// Its job finishes it; the caller sees it pending.
		s.log.WarnContext(ctx, "payments: refund not finished now; its job will retry", "refund_id", row.ID, "err", err.Error())
		return row, nil
	}
	return done, nil
}

// errStillProcessing keeps a refund's job retrying until the PSP settles.
var errStillProcessing = errors.New("payments: refund still processing at the PSP")

// executeRefund calls the PSP or processor for a pending refund and
// records the outcome (idempotent: the PSP refund id was minted before).
func (s *Service) executeRefund(ctx context.Context, id string) (refundRow, error) {
	var r refundRow
	var a *attempt
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		var err error
		if r, err = q.GetRefund(ctx, paymentsdb.GetRefundParams{TenantID: tid, ID: id}); err != nil {
			return err
		}
		if r.AttemptID != nil {
			x, err := q.GetAttempt(ctx, paymentsdb.GetAttemptParams{TenantID: tid, ID: *r.AttemptID})
			if err != nil {
				return err
			}
			a = &x
		}
		return nil
	})
	if isNotFound(err) {
		return r, nil
	}
	if err != nil || r.Status != "pending" {
		return r, err
	}
	var status, failure string
	switch {
	case r.E2eID != nil:
		env := ""
		if a != nil {
			env = a.Environment
		}
		psp, _, err := s.pspForHandler(ctx, r.HandlerID, env)
		if err != nil {
			return r, err
		}
		d, err := psp.GetRefund(ctx, *r.E2eID, r.PspRefundID)
		if errors.Is(err, pix.ErrDevolucaoNaoEncontrada) {
			valor, _ := pix.FormatValor(r.Amount)
			d, err = psp.Refund(ctx, *r.E2eID, r.PspRefundID, pix.DevolucaoSolicitada{Valor: valor, Natureza: pix.NaturezaOriginal, Descricao: r.Reason})
		}
		var prob *pix.Problem
		switch {
		case errors.As(err, &prob) && prob.Status == 400:
			status, failure = "failed", "O PSP recusou a devolução: "+prob.Detail
		case err != nil:
			return r, err
		case d.Status == pix.DevolucaoDevolvido:
			status = "succeeded"
		case d.Status == pix.DevolucaoNaoRealizado:
			status, failure = "failed", "Devolução não realizada: "+d.Motivo
		default:
			return r, errStillProcessing
		}
	case r.ChargeID != nil:
		env := "sandbox"
		if a != nil {
			env = a.Environment
		}
		proc, err := s.processor(ctx, r.HandlerID, env)
		if err != nil {
			return r, err
		}
		_, err = proc.Refund(ctx, *r.ChargeID, r.PspRefundID, r.Amount)
		switch {
		case errors.Is(err, card.ErrRefundExceeds), errors.Is(err, card.ErrConflict):
			status, failure = "failed", "O processador recusou o estorno."
		case err != nil:
			return r, err
		default:
			status = "succeeded"
		}
	}
	return s.finishRefund(ctx, r.ID, status, failure)
}

// finishRefund records a final refund status and, for merchant refunds,
// the attempt's refunded amount and status.
func (s *Service) finishRefund(ctx context.Context, id, status, failure string) (refundRow, error) {
	var out refundRow
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		r, err := q.GetRefund(ctx, paymentsdb.GetRefundParams{TenantID: tid, ID: id})
		if err != nil {
			return err
		}
		var a attempt
		if r.AttemptID != nil {
			// Lock order: attempt, then refund.
			if a, err = q.LockAttempt(ctx, paymentsdb.LockAttemptParams{TenantID: tid, ID: *r.AttemptID}); err != nil {
				return err
			}
		}
		if r, err = q.LockRefund(ctx, paymentsdb.LockRefundParams{TenantID: tid, ID: id}); err != nil {
			return err
		}
		out = r
		if r.Status != "pending" {
			return nil
		}
		if _, err := q.FinishRefund(ctx, paymentsdb.FinishRefundParams{TenantID: tid, ID: id, Status: status, FailureMessage: failure}); err != nil {
			return err
		}
		out.Status, out.FailureMessage = status, failure
		s.metrics.refunds.WithLabelValues(r.Kind, status).Inc()
		// Only a refund of the attempt's own money changes the attempt.
		own := r.Kind == "requested" || (r.E2eID != nil && a.E2eID != nil && *r.E2eID == *a.E2eID) ||
			(r.ChargeID != nil && a.ChargeID != nil && *r.ChargeID == *a.ChargeID)
		if !own || r.AttemptID == nil || status != "succeeded" || !payattempt.MovedMoney(a.Status) {
			return nil
		}
		sum, err := q.SumSucceededRefunds(ctx, paymentsdb.SumSucceededRefundsParams{TenantID: tid, AttemptID: r.AttemptID, OwnE2eID: a.E2eID, OwnChargeID: a.ChargeID})
		if err != nil {
			return err
		}
		if sum > a.Amount {
			return fmt.Errorf("payments: refunds of %s exceed its amount", a.ID)
		}
		from := a.Status
		a.RefundedAmount = sum
		a.Status = stPartRefunded
		if sum == a.Amount {
			a.Status = stRefunded
		}
		_, err = s.update(ctx, q, from, a)
		return err
	})
	return out, err
}
