package checkout

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/growstack"
	"github.com/bcpdev/bcp/internal/payattempt"
	"github.com/bcpdev/bcp/internal/wire"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// settleHint is what a completion already knows when it settles: the
// session as it wrote it and, when StartPayment answered, the attempt. It
// replaces the first try's two reads (a session and a payments call).
type settleHint struct {
	sess     session
	checkout *bcp.Checkout // sess's checkout, decoded (sess.State is its encoding)
	attempt  *paymentsv1.Attempt
	key      *opKey // the completion's idempotency key: answered by the settle's write
}

// settle brings a completing session in line with its attempt (outcomes,
// machine.go): await, pay (the order first, exactly once), escalate or
// reopen. giveUpUnknown says the attempt may never have reached the
// payments service (StartPayment failed, or its process died): an attempt
// the payments service does not know is then stopped for good (stop) and
// the session reopens, instead of waiting for a StartPayment that may
// still come. Settling an attempt that is no longer the session's is
// stale: see stale.
func (s *Service) settle(ctx context.Context, id, attemptID string, giveUpUnknown bool, hint *settleHint) (*checkoutv1.CheckoutResult, error) {
	for try := 0; try < 5; try++ {
		var sess session
		var c *bcp.Checkout
		var err error
		if try == 0 && hint != nil {
			sess, c = hint.sess, hint.checkout
			if c == nil {
				c, err = decodeState(sess)
			}
		} else {
			sess, c, err = s.store.getState(ctx, id)
		}
		if err != nil {
			return nil, err
		}
		if sess.PaymentAttemptID == nil || *sess.PaymentAttemptID != attemptID || bcp.Terminal(sess.Status) {
			return s.stale(ctx, sess, c, attemptID)
		}
		var a *paymentsv1.Attempt
		if try == 0 && hint != nil && hint.attempt != nil {
			a = hint.attempt
		} else if a, err = s.attempt(ctx, sess, c, attemptID, giveUpUnknown); err != nil {
			return nil, err
		}
		if a == nil {
			return result(c) // unknown and not given up: the sweep decides later
		}
		// The completion's key: the request's own, or as the session keeps
		// it (its request is gone: the outcome answers it here).
		k := hint.opKey()
		if k == nil {
			k = storedKey(sess.CompleteKey)
		}
		res, ok, err := s.apply(ctx, sess, c, a, k)
		if err != nil || ok {
			return res, err
		}
		// Raced with another settle or a cancel: read again.
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// opKey is the completion's key (nil without a hint).
func (h *settleHint) opKey() *opKey {
	if h == nil {
		return nil
	}
	return h.key
}

// attempt reads the session's attempt from the payments service; one it
// does not know is stopped when giveUp (and nil otherwise).
func (s *Service) attempt(ctx context.Context, sess session, c *bcp.Checkout, attemptID string, giveUp bool) (*paymentsv1.Attempt, error) {
	pr, err := s.payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: attemptID}))
	switch {
	case err == nil:
		return pr.Msg.GetAttempt(), nil
	case !apperr.IsKind(err, apperr.KindNotFound):
		return nil, err
	case !giveUp:
		return nil, nil
	}
	return s.stop(ctx, sess, c)
}

// stop asks the payments service to stop the session's attempt for good
// (CancelPayment): the answer is final without money, or says the money
// moved.
func (s *Service) stop(ctx context.Context, sess session, c *bcp.Checkout) (*paymentsv1.Attempt, error) {
	handler := ""
	if c.Payment != nil && len(c.Payment.Instruments) == 1 {
		handler = c.Payment.Instruments[0].HandlerID
	}
	cr, err := s.payments.CancelPayment(ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{
		AttemptId: *sess.PaymentAttemptID, CheckoutId: sess.ID, Amount: sess.Total, Currency: sess.Currency, HandlerId: handler,
	}))
	if err != nil {
		return nil, err
	}
	return cr.Msg.GetAttempt(), nil
}

// apply writes the transition attempt a's status causes (outcomes); ok is
// false when the session changed since it was read. k is the completion's
// key, answered by the write; one read back from the session (its request
// is gone) is answered only with what the request would have answered:
// an outcome, or the Pix to pay, never a card still being confirmed.
func (s *Service) apply(ctx context.Context, sess session, c *bcp.Checkout, a *paymentsv1.Attempt, k *opKey) (*checkoutv1.CheckoutResult, bool, error) {
	transition := outcomes[a.GetStatus()]
	if k != nil && k.raw != nil && transition == "await" && (a.GetExpiresAt() == nil || a.GetDisplayJson() == "") {
		k = nil
	}
	next, orderID, keep := c, (*string)(nil), sess.PaymentAttemptID
	switch transition {
	case "await":
		if a.GetExpiresAt() == nil {
			// A card charge the processor has not confirmed (the call
			// timed out): the resolve sweep settles it. Not a Pix to pay.
			if sess.Status == bcp.StatusCompleteInProgress && len(c.Messages) > 0 {
				res, err := result(c)
				return res, true, err
			}
			next.Messages = []bcp.Message{bcp.Info("payment_processing", "$.payment.instruments[0]",
				"O pagamento com cartão está sendo confirmado com o processador; consulte o resultado com get_checkout.")}
			break
		}
		if sess.Status == bcp.StatusCompleteInProgress && hasDisplay(c) {
			res, err := result(c)
			return res, true, err
		}
		next = withDisplay(c, a)
		next.Messages = []bcp.Message{bcp.Info("pix_awaiting_payment", "$.payment.instruments[0]",
			pixMessage(a.GetAmount(), a.GetExpiresAt().AsTime()))}
	case "pay":
		next = withDisplay(c, a)
		next.Status, next.Messages, next.ContinueURL = bcp.StatusCompleted, nil, ""
		o, err := s.order(ctx, sess, next, a)
		if err != nil {
			return nil, false, err // the settle sweep retries
		}
		next.Order = o
		orderID = &o.ID
		if err := s.at(ctx, StepOrdered, sess.ID); err != nil {
			return nil, false, err
		}
	case "escalate":
		next = withDisplay(c, a)
		next.Status = bcp.StatusRequiresEscalation
		if a.GetActionUrl() != "" {
			next.ContinueURL = a.GetActionUrl()
		}
		next.Messages = []bcp.Message{bcp.Error("requires_3ds", bcp.SeverityRequiresBuyerInput, "$.payment.instruments[0]",
			"O banco pediu uma confirmação do comprador; envie-o para continue_url.")}
	case "reopen":
		// No money moved and none can: the stock goes back (idempotent).
		if err := s.releaseStock(ctx, sess.ID, false); err != nil {
			return nil, false, err
		}
		next.Status, next.Payment, keep = bcp.StatusReadyForComplete, nil, nil
		next.Messages = []bcp.Message{bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments[0]", failureMessage(a))}
	default:
		return nil, false, apperr.New(apperr.KindInternal, "internal", "payment attempt %s has status %s", a.GetId(), a.GetStatus())
	}
	if transition == "await" {
		next.Status = bcp.StatusCompleteInProgress // a card being confirmed or a Pix to pay
	}
	if err := move(transition, sess.Status, next.Status); err != nil {
		return nil, false, err
	}
	state, err := bcp.EncodeCheckout(next)
	if err != nil {
		return nil, false, err
	}
	ok, err := s.store.finish(ctx, sess, next.Status, keep, orderID, state, k)
	if err != nil || !ok {
		return nil, false, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: next.Status}, true, nil
}

// order creates the one order of a paid checkout (idempotent per
// checkout). The money moved, so the discounts are used whatever happens
// to the order: their redemption (bookkeeping, idempotent per checkout)
// runs beside it.
func (s *Service) order(ctx context.Context, sess session, next *bcp.Checkout, a *paymentsv1.Attempt) (*bcp.OrderRef, error) {
	redeemed := make(chan struct{})
	go func() {
		growstack.Grow()
		defer close(redeemed)
		s.redeemDiscounts(ctx, sess, next)
	}()
	o, err := s.orders.CreateOrder(ctx, connect.NewRequest(&ordersv1.CreateOrderRequest{
		CheckoutId: sess.ID, Checkout: wire.PaidCheckout(next), PaymentAttemptId: a.GetId(), AgentProfileUrl: sess.AgentProfileUrl,
		WebhookUrl: sess.OrderWebhookUrl, BaseUrl: sess.BaseUrl, Ap2MandateJson: sess.Ap2Mandate, Payment: orderPayment(a),
	}))
	<-redeemed
	if err != nil {
		return nil, err
	}
	return &bcp.OrderRef{ID: o.Msg.GetOrderId(), Label: o.Msg.GetLabel(), PermalinkURL: o.Msg.GetPermalinkUrl()}, nil
}

// orderPayment is how the attempt paid, for the merchant's order: the
// instrument type and handler, the Pix endToEndId and txid, or the card's
// brand and last digits (from the attempt's display).
func orderPayment(a *paymentsv1.Attempt) *ordersv1.OrderPayment {
	p := &ordersv1.OrderPayment{Method: a.GetInstrumentType(), HandlerId: a.GetHandlerId(), EndToEndId: a.GetEndToEndId()}
	wire.PaymentDisplay(p, []byte(a.GetDisplayJson()))
	return p
}

// stale handles news of an attempt that is no longer the session's (the
// session reopened, moved to another attempt or ended). Usually there is
// nothing to do. But money must never stay with a checkout that did not
// keep its attempt: if this attempt took money anyway, it goes back, in
// full and automatically (the fence makes this unreachable by design;
// this is the belt to its braces, and it is counted and reported).
func (s *Service) stale(ctx context.Context, sess session, c *bcp.Checkout, attemptID string) (*checkoutv1.CheckoutResult, error) {
	if sess.Status == bcp.StatusCompleted && sess.PaymentAttemptID != nil && *sess.PaymentAttemptID == attemptID {
		return result(c) // settled before
	}
	pr, err := s.payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: attemptID}))
	if apperr.IsKind(err, apperr.KindNotFound) {
		return result(c)
	}
	if err != nil {
		return nil, err
	}
	a := pr.Msg.GetAttempt()
	if !payattempt.MovedMoneyProto(a.GetStatus()) || a.GetRefundedAmount() >= a.GetAmount() {
		return result(c)
	}
	slog.ErrorContext(ctx, "checkout: a payment took money for a checkout that did not keep it; refunding it automatically",
		"checkout_id", sess.ID, "status", sess.Status, "attempt_id", attemptID, "amount", a.GetAmount())
	if _, err := s.payments.RefundPayment(ctx, connect.NewRequest(&paymentsv1.RefundPaymentRequest{
		AttemptId: attemptID, RefundId: "auto_closed_" + attemptID, Amount: a.GetAmount() - a.GetRefundedAmount(),
		Reason: "Checkout " + sess.ID + " " + sess.Status + " sem este pagamento", AutomaticReason: "checkout_closed",
	})); err != nil {
		return nil, err
	}
	return result(c)
}

// failureMessage is what the buyer reads when an attempt did not pay.
func failureMessage(a *paymentsv1.Attempt) string {
	switch a.GetStatus() {
	case paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED:
		return "O Pix expirou sem pagamento; conclua novamente para gerar outro (com uma nova chave de idempotência)."
	case paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED:
		return "O pagamento foi cancelado; conclua novamente com uma nova chave de idempotência."
	}
	msg := a.GetFailureMessage()
	if msg == "" {
		msg = "O pagamento foi recusado."
	}
	return msg + " Tente outro meio de pagamento, com uma nova chave de idempotência."
}

// redeemDiscounts records the discounts a paid checkout used: its codes
// and the automatic discounts pricing applied when it was claimed (an
// automatic one shows no code, so the claim kept their ids).
func (s *Service) redeemDiscounts(ctx context.Context, sess session, c *bcp.Checkout) {
	id := sess.ID
	codes := slices.Clone(sess.AutomaticDiscountIds)
	if c.Discounts != nil {
		for _, d := range c.Discounts.Applied {
			if d.Code != "" {
				codes = append(codes, d.Code)
			}
		}
	}
	if len(codes) == 0 {
		return
	}
	// Bookkeeping after the money moved: a failure is logged, not fatal.
	if _, err := s.pricing.RedeemDiscounts(ctx, connect.NewRequest(&pricingv1.RedeemDiscountsRequest{CheckoutId: id, BuyerEmail: buyerEmail(c), DiscountIds: codes})); err != nil {
		slog.WarnContext(ctx, "checkout: redeem discounts", "checkout_id", id, "err", err)
	}
}

// withDisplay puts the attempt's display data on the response instrument.
func withDisplay(c *bcp.Checkout, a *paymentsv1.Attempt) *bcp.Checkout {
	if c.Payment != nil && len(c.Payment.Instruments) == 1 && a.GetDisplayJson() != "" {
		c.Payment.Instruments[0].Display = json.RawMessage(a.GetDisplayJson())
	}
	return c
}

func hasDisplay(c *bcp.Checkout) bool {
	return c.Payment != nil && len(c.Payment.Instruments) == 1 && len(c.Payment.Instruments[0].Display) > 0
}
