package payments

import (
	"context"
	"errors"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// codeCanceledBeforeStart marks the attempt a CancelPayment recorded
// before its StartPayment arrived: the fence that makes that StartPayment
// charge nothing.
const codeCanceledBeforeStart = "canceled_before_start"

// stop is the one way an attempt is given up: it returns the attempt
// either final without money (canceled, failed, expired) — and then no
// money can move for it any more — or with its money moved (succeeded,
// refunded), when the processor or PSP had already taken it. Whoever
// gives up on a payment (cancel, expiry, a completion that lost its
// answer) calls this first and acts on the answer, never on a guess.
//
//   - unknown to this service: recorded canceled (canceledBeforeStart) when
//     the request says what it was claimed for (else NotFound); a
//     StartPayment with this id arriving later finds it and charges
//     nothing. The insert and StartPayment's insert race on the primary
//     key: one of them wins, and the loser acts on the winner's row.
//   - pending Pix: the charge is removed at the PSP; a PSP that reports it
//     paid wins (the Pix is applied: succeeded). A PSP that does not know
//     the charge while its creation is not recorded and its creator may
//     still be putting it there (pixCreateWindow after the insert) is
//     not "never created": Unavailable, to retry, never canceled with a
//     charge that may still appear payable.
//   - pending card or waiting for 3-D Secure: the sale is canceled at the
//     processor by its idempotency key (card.Processor.Cancel), so a charge
//     call still in flight with that key charges nothing; an approved
//     answer is applied (succeeded), a declined one fails the attempt.
//   - anything else is already final or paid: returned as it is.
//
// A processor or PSP that cannot be reached is an error (Unavailable): the
// attempt stays as it was and the caller tries again later.
func (s *Service) stop(ctx context.Context, m *paymentsv1.CancelPaymentRequest) (attempt, error) {
	a, err := s.getAttempt(ctx, m.GetAttemptId())
	if isNotFound(err) && m.GetCheckoutId() == "" {
		return a, err // nothing to fence it with: not found
	}
	if isNotFound(err) {
		var existed bool
		if a, existed, err = s.insertCanceledBeforeStart(ctx, m); err != nil || !existed {
			return a, err
		}
		// StartPayment stored it first: stop that one.
	} else if err != nil {
		return a, err
	}
	switch {
	case a.Status == stPending && a.Txid != nil:
		if err := s.removeChargeOf(ctx, a, stCanceled, false, true); errors.Is(err, errMayBeUnderway) {
			// The PSP does not know the charge, but its creator may still
			// be putting it there: canceled now, it could appear payable
			// after this answer. Not stopped; the caller tries again.
			return a, apperr.New(apperr.KindUnavailable, "psp_unavailable", "the Pix charge is still being created; the payment was not stopped")
		} else if err != nil {
			if apperr.As(err).Kind == apperr.KindInternal {
				// The PSP did not answer (or failed): the charge may still
				// be payable, so nothing is stopped; say so, to retry.
				s.log.WarnContext(ctx, "payments: Pix charge not removed", "attempt_id", a.ID, "err", err.Error())
				return a, apperr.New(apperr.KindUnavailable, "psp_unavailable", "the PSP did not answer; the payment was not stopped")
			}
			return a, err
		}
	case a.Status == stPending || a.Status == stRequiresAction:
		if err := s.cancelCard(ctx, a); err != nil {
			return a, err
		}
	default:
		return a, nil
	}
	return s.getAttempt(ctx, a.ID)
}

// insertCanceledBeforeStart records an attempt nobody started as
// canceled; existed says StartPayment had stored it first.
func (s *Service) insertCanceledBeforeStart(ctx context.Context, m *paymentsv1.CancelPaymentRequest) (attempt, bool, error) {
	if !attemptIDPattern.MatchString(m.GetAttemptId()) {
		return attempt{}, false, apperr.Invalid("attempt_id", "invalid_attempt_id", "attempt_id must look like pay_<letters and digits>")
	}
	if n := len(m.GetCheckoutId()); n == 0 || n > 100 {
		return attempt{}, false, apperr.Invalid("checkout_id", "invalid_checkout_id", "checkout_id is required to stop an attempt this service has not seen")
	}
	if m.GetAmount() <= 0 || m.GetAmount() > maxAmount || !currencyPattern.MatchString(m.GetCurrency()) {
		return attempt{}, false, apperr.Invalid("amount", "invalid_amount", "amount and currency are required to stop an attempt this service has not seen")
	}
	tid, err := tenancy.From(ctx)
	if err != nil {
		return attempt{}, false, err
	}
	p := paymentsdb.InsertAttemptParams{
		TenantID: tid, ID: m.GetAttemptId(), CheckoutID: m.GetCheckoutId(), HandlerID: m.GetHandlerId(), Environment: "sandbox",
		Amount: m.GetAmount(), Currency: m.GetCurrency(), Status: stCanceled, FailureCode: codeCanceledBeforeStart,
		FailureMessage: "O pagamento foi cancelado antes de começar; nada foi cobrado.", Display: []byte("{}"),
		RequestHash: make([]byte, 32),
	}
	if handlers, _, err := s.loadHandlers(ctx, tid.String()); err == nil {
		for _, h := range handlers {
			if h.ID == p.HandlerID {
				p.HandlerName = h.Name
				if h.Environment != "" {
					p.Environment = h.Environment
				}
			}
		}
	}
	return s.insertAttempt(ctx, p, nil, nil)
}

// cancelCard cancels a card attempt's sale at the processor by its
// idempotency key and records what the processor says: approved is the
// money moving (succeeded), declined a failure, anything else (voided:
// never charged, or a 3-D Secure challenge abandoned) canceled.
func (s *Service) cancelCard(ctx context.Context, a attempt) error {
	proc, err := s.processor(ctx, a.HandlerID, a.Environment)
	if err != nil {
		return apperr.New(apperr.KindUnavailable, "processor_unavailable", "no card processor for handler %s", a.HandlerID)
	}
	ch, err := proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: a.ID, Amount: a.Amount, Currency: a.Currency})
	if err != nil {
		s.log.WarnContext(ctx, "payments: card cancel failed", "attempt_id", a.ID, "err", err.Error())
		return apperr.New(apperr.KindUnavailable, "processor_unavailable", "the card processor did not answer; the payment was not stopped")
	}
	if ch.Status == card.StatusApproved || ch.Status == card.StatusDeclined {
		_, err := s.applyCardCharge(ctx, proc, nil, a.ID, ch, nil, false)
		return err
	}
	_, err = s.transition(ctx, a.ID, false, func(x *attempt) bool {
		if x.Status != stPending && x.Status != stRequiresAction {
			return false
		}
		x.Status = stCanceled
		if ch.ID != "" && x.ChargeID == nil {
			x.ChargeID = &ch.ID
		}
		return true
	})
	return err
}
