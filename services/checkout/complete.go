package checkout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/growstack"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// settleSafetyNet is when the settle sweep settles a completion if nothing
// else has (a crash between charging and recording).
const settleSafetyNet = time.Minute

// CompleteCheckout places the order of a ready checkout. It never starts a
// second payment: a checkout already paying or paid is returned as it is,
// with a message.
func (s *Service) CompleteCheckout(ctx context.Context, r *connect.Request[checkoutv1.CompleteCheckoutRequest]) (*connect.Response[checkoutv1.CompleteCheckoutResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req := &bcp.Checkout{}
	if len(r.Msg.GetCheckoutJson()) > 0 {
		if err := segjson.Unmarshal(r.Msg.GetCheckoutJson(), req); err != nil {
			return nil, apperr.Invalid("checkout", "invalid_checkout", "checkout is not a valid BCP checkout: %v", err)
		}
	}
	id := r.Msg.GetId()
	respond := func(res *checkoutv1.CheckoutResult, err error) (*connect.Response[checkoutv1.CompleteCheckoutResponse], error) {
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&checkoutv1.CompleteCheckoutResponse{Result: res}), nil
	}
	sess, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if !terminal(sess.Status) && !s.now().Before(sess.ExpiresAt) && sess.Status != bcp.StatusCompleteInProgress {
		return respond(s.expire(ctx, id))
	}
	cur := &bcp.Checkout{}
	if err := segjson.Unmarshal(sess.State, cur); err != nil {
		return nil, err
	}
	switch sess.Status {
	case bcp.StatusCompleted:
		return respond(unchanged(cur, bcp.Info("already_completed", "$.order", "Este checkout já foi concluído; o pedido está em order.")))
	case bcp.StatusCompleteInProgress:
		return respond(unchanged(cur, bcp.Error("payment_in_progress", bcp.SeverityRecoverable, "$.status",
			"Já existe um pagamento em andamento para este checkout; consulte-o com get_checkout.")))
	case bcp.StatusCanceled:
		return respond(unchanged(cur, notModifiable(sess.Status)))
	case bcp.StatusIncomplete, bcp.StatusRequiresEscalation:
		return respond(unchanged(cur, bcp.Error("not_ready", bcp.SeverityRecoverable, "$.status",
			"O checkout ainda não está pronto para ser concluído; resolva as mensagens de erro antes.")))
	}

	// Exactly one instrument (no split payments).
	if req.Payment == nil || len(req.Payment.Instruments) != 1 {
		return respond(unchanged(cur, bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments",
			"Envie exatamente um instrumento de pagamento.")))
	}
	inst := req.Payment.Instruments[0]

	// What the buyer pays must be what is shown. Pricing (shipping rates,
	// discounts, settings) is checked here with the items as shown; the
	// items' prices, availability and stock are checked by the stock
	// reservation below, on the locked rows, in the same statement.
	stored := &bcp.Checkout{}
	if err := segjson.Unmarshal(sess.Request, stored); err != nil {
		return nil, err
	}
	b, err := s.build(ctx, agent, id, stored, cur, sess.State, tid.String(), true)
	if err != nil {
		return nil, err
	}
	if b.checkout.Status = statusFor(b.checkout.Messages); b.checkout.Status != bcp.StatusReadyForComplete || grandTotal(b.checkout) != grandTotal(cur) {
		fresh, req, err := s.rebuilt(ctx, agent, id, sess)
		if err != nil {
			return nil, err
		}
		if err := s.save(ctx, sess, fresh, req); err != nil {
			return nil, err
		}
		return respond(result(fresh))
	}

	// Claim the one payment attempt: the session moves to
	// complete_in_progress with the attempt id (optimistic), with a
	// settle_after from which the settle sweep settles it if this process
	// dies mid-way.
	attemptID := ids.New("pay")
	cur.Status = bcp.StatusCompleteInProgress
	cur.Messages = nil
	cur.Payment = &bcp.Payment{Instruments: []bcp.PaymentInstrument{publicInstrument(inst)}}
	state, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	settleAfter := s.now().Add(settleSafetyNet)
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		n, err := checkoutdb.New(q).SetSessionPayment(ctx, checkoutdb.SetSessionPaymentParams{
			TenantID: tid, ID: id, Version: sess.Version, Status: cur.Status, PaymentAttemptID: &attemptID,
			OrderWebhookUrl: r.Msg.GetOrderWebhookUrl(), BaseUrl: agent.baseURL, State: state, SettleAfter: &settleAfter,
		})
		if err == nil && n == 0 {
			return errRaced
		}
		return err
	})
	if err == errRaced {
		// Someone else completed or changed it first: show what won.
		latest, lerr := s.load(ctx, id)
		if lerr != nil {
			return nil, lerr
		}
		c := &bcp.Checkout{}
		if err := segjson.Unmarshal(latest.State, c); err != nil {
			return nil, err
		}
		return respond(unchanged(c, bcp.Error("payment_in_progress", bcp.SeverityRecoverable, "$.status",
			"Outro pedido de conclusão chegou antes deste; consulte o checkout com get_checkout.")))
	}
	if err != nil {
		return nil, err
	}
	// The stock this order needs is taken now, at the shown prices, before
	// any money moves; it goes back if the payment fails, expires or is
	// canceled. When the catalog changed meanwhile, nothing is taken and
	// the checkout comes back as the catalog has it now.
	if err := s.reserveStock(ctx, id, cur); err != nil {
		switch apperr.As(err).Code {
		case bcp.CodeOutOfStock, bcp.CodeItemUnavailable, codePriceChanged:
			fresh, _, rerr := s.rebuilt(ctx, agent, id, sess)
			if rerr != nil {
				return nil, rerr
			}
			return respond(s.reopenAs(ctx, id, attemptID, func(*bcp.Checkout) *bcp.Checkout { return fresh }))
		}
		return respond(s.reopen(ctx, id, attemptID, bcp.StatusReadyForComplete, bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable,
			"$.payment.instruments[0]", "Não foi possível reservar o estoque agora; tente novamente com uma nova chave de idempotência.")))
	}
	instJSON, err := json.Marshal(inst)
	if err != nil {
		return nil, err
	}
	started, err := s.payments.StartPayment(ctx, connect.NewRequest(&paymentsv1.StartPaymentRequest{
		AttemptId: attemptID, CheckoutId: id, InstrumentJson: string(instJSON), Amount: grandTotal(cur), Currency: cur.Currency,
		BuyerEmail: buyerEmail(cur), BaseUrl: agent.baseURL, AgentProfileUrl: agent.profileURL,
		AgentSigningKeysJson: r.Msg.GetAgentSigningKeysJson(),
	}))
	if err != nil {
		slog.WarnContext(ctx, "checkout: start payment failed; settling from the payments service's view", "checkout_id", id, "attempt_id", attemptID, "err", err)
	}
	// Whatever StartPayment said, act on the payments service's record:
	// the attempt it returned, or a fresh read when it failed. The session
	// is as we just wrote it (version + 1): settle need not read it again
	// (if it changed meanwhile, the versioned write fails and settle
	// re-reads both).
	hint := &settleHint{sess: sess}
	hint.sess.Version++
	hint.sess.Status, hint.sess.PaymentAttemptID, hint.sess.State = cur.Status, &attemptID, state
	hint.sess.OrderWebhookUrl, hint.sess.BaseUrl = r.Msg.GetOrderWebhookUrl(), agent.baseURL
	if err == nil && started.Msg.GetAttempt().GetId() == attemptID {
		hint.attempt = started.Msg.GetAttempt()
	}
	res, serr := s.settleWith(ctx, id, attemptID, err != nil, hint)
	if serr != nil {
		return nil, serr
	}
	return respond(res, nil)
}

var errRaced = apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed meanwhile")

// SettlePayment brings a checkout in line with its payment attempt.
func (s *Service) SettlePayment(ctx context.Context, r *connect.Request[checkoutv1.SettlePaymentRequest]) (*connect.Response[checkoutv1.SettlePaymentResponse], error) {
	res, err := s.settle(ctx, r.Msg.GetCheckoutId(), r.Msg.GetAttemptId(), false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.SettlePaymentResponse{Status: res.GetStatus()}), nil
}

// settle reads the attempt from the payments service and moves the
// session: succeeded → order (exactly once) and completed; pending →
// unchanged; failed, expired or canceled → back to ready_for_complete with
// payment_failed. startFailed says the attempt may never have reached the
// payments service, so "not found" means it was not started.
func (s *Service) settle(ctx context.Context, id, attemptID string, startFailed bool) (*checkoutv1.CheckoutResult, error) {
	return s.settleWith(ctx, id, attemptID, startFailed, nil)
}

// settleHint is what a completion already knows when it settles: the
// session as it wrote it and, when StartPayment answered, the attempt. It
// replaces the first try's two reads (a session and a payments call).
type settleHint struct {
	sess    checkoutdb.CheckoutSession
	attempt *paymentsv1.Attempt
}

func (s *Service) settleWith(ctx context.Context, id, attemptID string, startFailed bool, hint *settleHint) (*checkoutv1.CheckoutResult, error) {
	for try := 0; try < 5; try++ {
		var sess checkoutdb.CheckoutSession
		c := &bcp.Checkout{}
		var err error
		if try == 0 && hint != nil {
			sess = hint.sess
			err = segjson.Unmarshal(sess.State, c)
		} else {
			sess, c, err = s.loadState(ctx, id)
		}
		if err != nil {
			return nil, err
		}
		if sess.PaymentAttemptID == nil || *sess.PaymentAttemptID != attemptID || terminal(sess.Status) {
			return result(c) // a stale notification: nothing to do
		}
		var a *paymentsv1.Attempt
		if try == 0 && hint != nil && hint.attempt != nil {
			a = hint.attempt
		} else {
			pr, err := s.payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: attemptID}))
			switch {
			case err == nil:
				a = pr.Msg.GetAttempt()
			case startFailed && apperr.IsKind(err, apperr.KindNotFound):
				a = &paymentsv1.Attempt{Id: attemptID, Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED,
					FailureMessage: "O pagamento não pôde ser iniciado; tente novamente."}
			default:
				return nil, err
			}
		}
		var next *bcp.Checkout
		var orderID *string
		keepAttempt := &attemptID
		switch a.GetStatus() {
		case paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING:
			if a.GetExpiresAt() == nil {
				// A card charge the processor has not confirmed (the call
				// timed out): its resolve job settles it. Not a Pix to pay —
				// this used to say "Pague via Pix até 31/12 21:00" (found
				// with cmd/bcpchaos' PSP timeouts).
				if sess.Status == bcp.StatusCompleteInProgress && len(c.Messages) > 0 {
					return result(c)
				}
				next = c
				next.Status = bcp.StatusCompleteInProgress
				next.Messages = []bcp.Message{bcp.Info("payment_processing", "$.payment.instruments[0]",
					"O pagamento com cartão está sendo confirmado com o processador; consulte o resultado com get_checkout.")}
				break
			}
			if sess.Status == bcp.StatusCompleteInProgress && hasDisplay(c) {
				return result(c)
			}
			next = withDisplay(c, a)
			next.Status = bcp.StatusCompleteInProgress
			next.Messages = []bcp.Message{bcp.Info("pix_awaiting_payment", "$.payment.instruments[0]",
				fmt.Sprintf("Pague %s via Pix até %s; acompanhe com get_checkout.", brl(a.GetAmount()), a.GetExpiresAt().AsTime().In(brt).Format("02/01 15:04")))}
		case paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED, paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED, paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED:
			next = withDisplay(c, a)
			next.Status = bcp.StatusCompleted
			next.Messages = nil
			next.ContinueURL = ""
			snapshot, _ := json.Marshal(next)
			// The money moved: the discounts are used whatever happens to
			// the order, so their redemption (bookkeeping, idempotent per
			// checkout) runs beside the order's creation instead of after.
			redeemed := make(chan struct{})
			go func() {
				growstack.Grow()
				defer close(redeemed)
				s.redeemDiscounts(ctx, id, next)
			}()
			o, err := s.orders.CreateOrder(ctx, connect.NewRequest(&ordersv1.CreateOrderRequest{
				CheckoutId: id, CheckoutJson: snapshot, PaymentAttemptId: attemptID, AgentProfileUrl: sess.AgentProfileUrl,
				WebhookUrl: sess.OrderWebhookUrl, BaseUrl: sess.BaseUrl,
			}))
			<-redeemed // before next changes below
			if err != nil {
				return nil, err // the settle sweep retries
			}
			next.Order = &bcp.OrderRef{ID: o.Msg.GetOrderId(), PermalinkURL: o.Msg.GetPermalinkUrl()}
			orderID = &next.Order.ID
		case paymentsv1.AttemptStatus_ATTEMPT_STATUS_REQUIRES_ACTION:
			next = withDisplay(c, a)
			next.Status = bcp.StatusRequiresEscalation
			if a.GetActionUrl() != "" {
				next.ContinueURL = a.GetActionUrl()
			}
			next.Messages = []bcp.Message{bcp.Error("requires_3ds", bcp.SeverityRequiresBuyerInput, "$.payment.instruments[0]",
				"O banco pediu uma confirmação do comprador; envie-o para continue_url.")}
		default: // failed, expired, canceled
			if err := s.releaseStock(ctx, id); err != nil {
				return nil, err
			}
			next = c
			next.Status = bcp.StatusReadyForComplete
			next.Payment = nil
			keepAttempt = nil
			msg := a.GetFailureMessage()
			switch a.GetStatus() {
			case paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED:
				msg = "O Pix expirou sem pagamento; conclua novamente para gerar outro (com uma nova chave de idempotência)."
			case paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED:
				msg = "O pagamento foi cancelado; conclua novamente com uma nova chave de idempotência."
			case paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED:
				if msg == "" {
					msg = "O pagamento foi recusado."
				}
				msg += " Tente outro meio de pagamento, com uma nova chave de idempotência."
			}
			next.Messages = []bcp.Message{bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments[0]", msg)}
		}
		if !canTransition(sess.Status, next.Status) && sess.Status != next.Status {
			return nil, apperr.New(apperr.KindInternal, "internal", "illegal status transition %s → %s", sess.Status, next.Status)
		}
		state, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		var n int64
		err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
			n, err = checkoutdb.New(q).FinishSession(ctx, checkoutdb.FinishSessionParams{
				TenantID: sess.TenantID, ID: id, Version: sess.Version, Status: next.Status, PaymentAttemptID: keepAttempt,
				OrderID: orderID, State: state,
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 1 {
			return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: next.Status}, nil
		}
		// Raced with another settle or a cancel: read again.
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// codePriceChanged is the catalog's refusal to reserve at a price it no
// longer has (never shown to agents: the checkout comes back updated).
const codePriceChanged = "price_changed"

// rebuilt is sess's checkout priced as the catalog and pricing have it now,
// for a complete_checkout that found it out of date: it says so, and a
// checkout that would still be ready waits for the agent to confirm the
// new total with an update.
func (s *Service) rebuilt(ctx context.Context, agent agentInfo, id string, sess checkoutdb.CheckoutSession) (*bcp.Checkout, *bcp.Checkout, error) {
	stored, shown := &bcp.Checkout{}, &bcp.Checkout{}
	if err := segjson.Unmarshal(sess.Request, stored); err != nil {
		return nil, nil, err
	}
	if err := segjson.Unmarshal(sess.State, shown); err != nil {
		return nil, nil, err
	}
	b, err := s.build(ctx, agent, id, stored, shown, sess.State, sess.TenantID.String(), false)
	if err != nil {
		return nil, nil, err
	}
	fresh := b.checkout
	fresh.Status, fresh.ExpiresAt, fresh.ContinueURL = statusFor(fresh.Messages), shown.ExpiresAt, shown.ContinueURL
	fresh.Messages = append([]bcp.Message{bcp.Warning("checkout_changed", "$.totals",
		"O checkout mudou (estoque ou preços) e foi atualizado; revise antes de concluir.")}, fresh.Messages...)
	if fresh.Status == bcp.StatusReadyForComplete {
		fresh.Status = bcp.StatusIncomplete // the agent must look again
		fresh.Messages = append(fresh.Messages, bcp.Error("checkout_changed", bcp.SeverityRecoverable, "$.totals", "Confirme o novo total antes de concluir."))
	}
	return fresh, b.request, nil
}

func (s *Service) reserveStock(ctx context.Context, id string, c *bcp.Checkout) error {
	req := &catalogv1.ReserveStockRequest{CheckoutId: id, CheckPrices: true}
	for _, l := range c.LineItems {
		req.Lines = append(req.Lines, &catalogv1.StockLine{VariantId: l.Item.ID, Quantity: l.Quantity, UnitPrice: l.Item.Price})
	}
	_, err := s.catalog.ReserveStock(ctx, connect.NewRequest(req))
	return err
}

func (s *Service) releaseStock(ctx context.Context, id string) error {
	_, err := s.catalog.ReleaseStock(ctx, connect.NewRequest(&catalogv1.ReleaseStockRequest{CheckoutId: id}))
	return err
}

// reopen gives up an attempt that never reached the payments service: the
// session goes back to status with msg.
func (s *Service) reopen(ctx context.Context, id, attemptID, status string, msg bcp.Message) (*checkoutv1.CheckoutResult, error) {
	return s.reopenAs(ctx, id, attemptID, func(c *bcp.Checkout) *bcp.Checkout {
		c.Status, c.Payment, c.Messages = status, nil, []bcp.Message{msg}
		return c
	})
}

// reopenAs gives up an attempt that never reached the payments service:
// the session becomes next(its checkout), which has no payment.
func (s *Service) reopenAs(ctx context.Context, id, attemptID string, next func(*bcp.Checkout) *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	for try := 0; try < 5; try++ {
		sess, c, err := s.loadState(ctx, id)
		if err != nil {
			return nil, err
		}
		if sess.PaymentAttemptID == nil || *sess.PaymentAttemptID != attemptID {
			return result(c)
		}
		c = next(c)
		status := c.Status
		state, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		var n int64
		err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
			n, err = checkoutdb.New(q).FinishSession(ctx, checkoutdb.FinishSessionParams{
				TenantID: sess.TenantID, ID: id, Version: sess.Version, Status: status, State: state,
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 1 {
			return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: status}, nil
		}
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// cancelWithPayment cancels a session whose payment is in flight: the
// payment is stopped first, and if the money already arrived, completion
// wins.
func (s *Service) cancelWithPayment(ctx context.Context, sess checkoutdb.CheckoutSession) (*checkoutv1.CheckoutResult, bool, error) {
	if sess.PaymentAttemptID == nil {
		return nil, false, nil
	}
	cr, err := s.payments.CancelPayment(ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: *sess.PaymentAttemptID}))
	if err != nil && !apperr.IsKind(err, apperr.KindNotFound) {
		return nil, false, err
	}
	if err == nil {
		switch cr.Msg.GetAttempt().GetStatus() {
		case paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED, paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED, paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED:
			res, err := s.settle(ctx, sess.ID, *sess.PaymentAttemptID, false)
			return res, true, err
		}
	}
	return nil, false, nil
}

func (s *Service) redeemDiscounts(ctx context.Context, id string, c *bcp.Checkout) {
	if c.Discounts == nil || len(c.Discounts.Applied) == 0 {
		return
	}
	var codes []string
	for _, d := range c.Discounts.Applied {
		if d.Code != "" {
			codes = append(codes, d.Code)
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

// save stores a rebuilt open session (optimistic).
func (s *Service) save(ctx context.Context, sess checkoutdb.CheckoutSession, c, req *bcp.Checkout) error {
	state, reqJSON, err := encodeBoth(c, req)
	if err != nil {
		return err
	}
	return pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		n, err := checkoutdb.New(q).UpdateSession(ctx, checkoutdb.UpdateSessionParams{
			TenantID: sess.TenantID, ID: sess.ID, Version: sess.Version, Status: c.Status, Total: grandTotal(c), BuyerEmail: buyerEmail(c),
			Capabilities: sess.Capabilities, Request: reqJSON, State: state,
		})
		if err == nil && n == 0 {
			return apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed while this request was being processed; retry")
		}
		return err
	})
}

// publicInstrument is the instrument as it may be echoed: never the
// credential.
func publicInstrument(in bcp.PaymentInstrument) bcp.PaymentInstrument {
	yes := true
	return bcp.PaymentInstrument{ID: in.ID, HandlerID: in.HandlerID, Type: in.Type, BillingAddress: in.BillingAddress, Display: in.Display, Selected: &yes}
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

func result(c *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: b, Status: c.Status}, nil
}

// brt is the time zone shown to Brazilian buyers.
var brt = time.FixedZone("BRT", -3*60*60)

// brl formats centavos as "R$ 1.234,56" with integer arithmetic.
func brl(c int64) string {
	neg := c < 0
	if neg {
		c = -c
	}
	reais, cents := c/100, c%100
	s := fmt.Sprintf("%d", reais)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "." + s[i:]
	}
	out := fmt.Sprintf("R$ %s,%02d", s, cents)
	if neg {
		out = "-" + out
	}
	return out
}

// SettleArgs is the safety-net job that settled a completion if nothing
// else did, inserted with every claim before the settle sweep existed.
// New completions no longer get one (settle_after and SweepSettles); the
// worker stays for the jobs already queued.
type SettleArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	CheckoutID string    `json:"checkout_id"`
	AttemptID  string    `json:"attempt_id"`
}

// Kind names the job.
func (SettleArgs) Kind() string { return "checkout_settle" }

// SettleWorker works SettleArgs jobs.
type SettleWorker struct {
	river.WorkerDefaults[SettleArgs]
	Service *Service
}

// Work settles; an error makes river retry with backoff.
func (w *SettleWorker) Work(ctx context.Context, job *river.Job[SettleArgs]) error {
	_, err := w.Service.settle(tenancy.With(ctx, job.Args.TenantID), job.Args.CheckoutID, job.Args.AttemptID, true)
	return err
}
