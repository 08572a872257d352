package checkout

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/wire"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// settleSafetyNet is how long a completion may take before the settle
// sweep settles it as if its process had died (between claiming and
// recording the outcome).
const settleSafetyNet = time.Minute

// completion is one complete_checkout request.
type completion struct {
	agent      agentInfo
	id         string
	req        *bcp.Checkout // the payment the agent sent
	webhookURL string
	agentKeys  []string
	key        *opKey // claimed with the payment, answered with the settle
}

// complete places the order of a ready checkout, in the steps of the
// money path (machine.go): check what is shown, claim, reserve, start the
// payment, settle with its outcome. It never starts a second payment: a
// checkout already paying or paid is returned as it is, with a message.
// Its answer is never ambiguous about a race it lost (issue 32): a
// checkout another request completed is answered completed without an
// error, one a cancel (or the expiry) closed says so (saysCanceled).
func (s *Service) complete(ctx context.Context, r completion) (*checkoutv1.CheckoutResult, error) {
	return saysCanceled(s.completeOnce(ctx, r))
}

// saysCanceled makes a completion answered with a canceled checkout say
// why: whichever step a cancel (or the expiry) won at, the checkout comes
// back as the close left it, without messages, and an agent could take
// "canceled" for its own request's doing or miss it.
func saysCanceled(res *checkoutv1.CheckoutResult, err error) (*checkoutv1.CheckoutResult, error) {
	if err != nil || res.GetErrorResponse() || res.GetStatus() != bcp.StatusCanceled {
		return res, err
	}
	c := &bcp.Checkout{}
	if err := bcp.DecodeCheckout(res.GetCheckoutJson(), c); err != nil {
		return nil, err
	}
	for _, m := range c.Messages {
		if m.Type == bcp.MessageError || m.Code == "expired" {
			return res, nil // it says so already
		}
	}
	return unchanged(c, notModifiable(bcp.StatusCanceled))
}

// alreadyCompleted answers a completion whose checkout is completed: not
// an error, the order is there.
func alreadyCompleted() bcp.Message {
	return bcp.Info("already_completed", "$.order", "Este checkout já foi concluído; o pedido está em order.")
}

// completeOnce is complete before saysCanceled.
func (s *Service) completeOnce(ctx context.Context, r completion) (*checkoutv1.CheckoutResult, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	// The session as this process last wrote it, if this completion would
	// claim it (seen.go); anything else is answered from a fresh read.
	if res, done, err := s.fromSeen(ctx, tid, r.id, func(sess session) bool {
		return sess.AgentProfileUrl == r.agent.profileURL && sess.Status == bcp.StatusReadyForComplete && sess.PaymentAttemptID == nil &&
			!ap2Locked(sess, r.agent) && r.req.Payment != nil && len(r.req.Payment.Instruments) == 1
	}, func(sess session, cur, stored *bcp.Checkout, xmin *int64) (*checkoutv1.CheckoutResult, error) {
		return s.completeFrom(ctx, r, sess, cur, stored, nil, xmin)
	}); done {
		return res, err
	}
	sess, cur, err := s.store.getState(ctx, r.id)
	if err == nil {
		err = owned(sess, r.agent.profileURL)
	}
	if err != nil {
		return nil, err
	}
	if !bcp.Terminal(sess.Status) && sess.Status != bcp.StatusCompleteInProgress && !s.now().Before(sess.ExpiresAt) {
		return s.end(ctx, r.id, endExpire, "", nil)
	}
	switch {
	case sess.Status == bcp.StatusCompleted:
		return unchanged(cur, alreadyCompleted())
	case sess.Status == bcp.StatusCompleteInProgress:
		return unchanged(cur, bcp.Error("payment_in_progress", bcp.SeverityRecoverable, "$.status",
			"Já existe um pagamento em andamento para este checkout; consulte-o com get_checkout."))
	case sess.Status == bcp.StatusCanceled:
		return unchanged(cur, notModifiable(sess.Status))
	case sess.Status != bcp.StatusReadyForComplete:
		return unchanged(cur, bcp.Error("not_ready", bcp.SeverityRecoverable, "$.status",
			"O checkout ainda não está pronto para ser concluído; resolva as mensagens de erro antes."))
	}
	// With AP2 the buyer's mandate comes first: nothing is checked or
	// claimed for a completion the buyer has not authorized (ap2.go).
	var mandate []byte
	if ap2Locked(sess, r.agent) {
		rec, msgs, err := s.verifyMandate(ctx, r, sess, cur)
		if err != nil {
			return nil, err
		}
		if len(msgs) > 0 {
			return unchangedWith(cur, msgs)
		}
		mandate = rec
	}
	return s.completeFrom(ctx, r, sess, cur, nil, mandate, nil)
}

// completeFrom completes the ready session sess (whose checkout is cur,
// and whose stored request is stored when remembered: nil, decoded from
// sess.Request), with the buyer's AP2 mandate if any. seen is sess's xmin
// when sess is remembered rather than read (seen.go): the claim is fenced
// on it, and any outcome but the claim is left to a fresh read
// (errReread).
func (s *Service) completeFrom(ctx context.Context, r completion, sess session, cur, stored *bcp.Checkout, mandate []byte, seen *int64) (*checkoutv1.CheckoutResult, error) {
	// While this request runs, the claim it may write is its own work
	// (recover.go): this process's recovery leaves it alone.
	defer s.working.add(sess.TenantID, r.id)()
	// Exactly one instrument (no split payments).
	if r.req.Payment == nil || len(r.req.Payment.Instruments) != 1 {
		return unchanged(cur, bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments",
			"Envie exatamente um instrumento de pagamento."))
	}
	inst := r.req.Payment.Instruments[0]
	// An AP2 payment mandate is charged only once verifyMandate verified
	// it with the checkout mandate (ap2.go: verifyPaymentMandate).
	if mandate == nil && ap2.LooksLikeMandate(credentialToken(inst)) {
		return unchanged(cur, bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, paymentMandatePath,
			"Mandato de pagamento AP2 recusado: um mandato de pagamento (mandate.payment.1) só é aceito com o mandato de checkout em ap2.checkout_mandate, com a extensão AP2 ativa."))
	}

	// What the buyer pays must be what is shown. Pricing (shipping rates,
	// discounts, settings) is checked here with the items as shown; the
	// items' prices, availability and stock are checked by the stock
	// reservation below, on the locked rows, in the same statement.
	if stored == nil {
		stored = &bcp.Checkout{}
		if err := bcp.DecodeCheckout(sess.Request, stored); err != nil {
			return nil, err
		}
	}
	b, err := s.build(ctx, r.agent, r.id, stored, cur, sess.TenantID.String(), true)
	if err != nil {
		return nil, err
	}
	if b.checkout.Status = statusFor(b.checkout.Messages); b.checkout.Status != bcp.StatusReadyForComplete || grandTotal(b.checkout) != grandTotal(cur) {
		if seen != nil {
			return nil, errReread
		}
		return s.refresh(ctx, r.agent, sess, r.key)
	}

	if err := s.at(ctx, StepReady, r.id); err != nil {
		return nil, err
	}
	attemptID, state, err := s.claim(ctx, r, sess, seen, cur, inst, mandate, b.automaticDiscounts)
	if errors.Is(err, errRaced) && seen != nil {
		return nil, errReread
	}
	if errors.Is(err, errRaced) {
		// Someone else completed, canceled or changed it first: show what
		// won, and say so without contradicting it.
		_, latest, lerr := s.store.getState(ctx, r.id)
		if lerr != nil {
			return nil, lerr
		}
		switch latest.Status {
		case bcp.StatusCompleted:
			return unchanged(latest, alreadyCompleted())
		case bcp.StatusCanceled:
			return saysCanceled(result(latest))
		case bcp.StatusCompleteInProgress:
			return unchanged(latest, bcp.Error("payment_in_progress", bcp.SeverityRecoverable, "$.status",
				"Outro pedido de conclusão chegou antes deste; consulte o checkout com get_checkout."))
		}
		return unchanged(latest, bcp.Error("checkout_changed", bcp.SeverityRecoverable, "$.status",
			"O checkout mudou enquanto este pedido era processado; revise-o e conclua novamente com uma nova chave de idempotência."))
	}
	if err != nil {
		return nil, err
	}
	if err := s.at(ctx, StepClaimed, r.id); err != nil {
		return nil, err
	}
	if res, err := s.reserve(ctx, r, sess, cur, attemptID); res != nil || err != nil {
		return res, err
	}
	if err := s.at(ctx, StepReserved, r.id); err != nil {
		return nil, err
	}
	// The instrument goes typed, its credential exactly as the agent sent
	// it (wire.PaymentInstrument): only the payments service reads it.
	started, err := s.payments.StartPayment(ctx, connect.NewRequest(&paymentsv1.StartPaymentRequest{
		AttemptId: attemptID, CheckoutId: r.id, Instrument: wire.PaymentInstrument(inst), Amount: grandTotal(cur), Currency: cur.Currency,
		BuyerEmail: buyerEmail(cur), BaseUrl: r.agent.baseURL, AgentProfileUrl: r.agent.profileURL, AgentSigningKeysJson: r.agentKeys,
	}))
	if herr := s.at(ctx, StepCharged, r.id); herr != nil {
		return nil, herr
	}
	// Act on the payments service's record: the attempt it returned, or
	// its answer to a fresh question when StartPayment failed (settle then
	// gives up an attempt it never saw, through stop). The session is as
	// claim just wrote it (version + 1), and cur its checkout, so settle
	// need neither read nor decode it again (a versioned write fails if it
	// changed meanwhile, and settle re-reads).
	hint := &settleHint{sess: sess, checkout: cur, key: r.key}
	hint.sess.Version++
	hint.sess.Status, hint.sess.PaymentAttemptID, hint.sess.State = bcp.StatusCompleteInProgress, &attemptID, state
	hint.sess.OrderWebhookUrl, hint.sess.BaseUrl, hint.sess.Ap2Mandate = r.webhookURL, r.agent.baseURL, mandate
	hint.sess.AutomaticDiscountIds = b.automaticDiscounts
	hint.sess.SettleOwner, hint.sess.CompleteKey = ownerArg(s.holder.ID()), r.key.heldArg()
	if err != nil {
		slog.WarnContext(ctx, "checkout: start payment failed; settling from the payments service's record", "checkout_id", r.id, "attempt_id", attemptID, "err", err)
	} else if started.Msg.GetAttempt().GetId() == attemptID {
		hint.attempt = started.Msg.GetAttempt()
	}
	return s.settle(ctx, r.id, attemptID, err != nil, hint)
}

var errRaced = apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed meanwhile")

// claim registers the payment attempt on the session (the fence: no money
// moves for this checkout unless this write won), with this process
// incarnation as its owner, from which any process's recovery finishes it
// as soon as this one is gone (recover.go), and the settle_after from
// which the settle sweep does.
func (s *Service) claim(ctx context.Context, r completion, sess session, seen *int64, cur *bcp.Checkout, inst bcp.PaymentInstrument, mandate []byte, automaticDiscounts []string) (string, []byte, error) {
	if err := move("claim", sess.Status, bcp.StatusCompleteInProgress); err != nil {
		return "", nil, err
	}
	attemptID := ids.New("pay")
	cur.Status = bcp.StatusCompleteInProgress
	cur.Messages = nil
	cur.Payment = &bcp.Payment{Instruments: []bcp.PaymentInstrument{publicInstrument(inst)}}
	state, err := bcp.EncodeCheckout(cur)
	if err != nil {
		return "", nil, err
	}
	ok, err := s.store.claim(ctx, sess, seen, attemptID, r.webhookURL, r.agent.baseURL, state, mandate, s.now().Add(settleSafetyNet), automaticDiscounts,
		s.holder.ID(), r.key.heldArg(), r.key)
	if err == nil && !ok {
		err = errRaced
	}
	if ok && s.holder != nil && r.key != nil {
		// Whoever settles the session answers the key (recover.go): a
		// failure from here on leaves it in flight instead of giving it
		// back, so a retry learns the outcome rather than running again.
		r.key.settles = true
	}
	return attemptID, state, err
}

// reserve takes the stock this order needs now, at the shown prices,
// before any money moves; it goes back if the payment fails, expires or is
// canceled. When the catalog changed meanwhile nothing is taken and the
// checkout comes back as the catalog has it now; nothing is charged, and
// the attempt this request claimed is never started (only this request
// knows it until the settle sweep would stop it), so the session simply
// reopens. A nil result with no error means go on.
func (s *Service) reserve(ctx context.Context, r completion, sess session, cur *bcp.Checkout, attemptID string) (*checkoutv1.CheckoutResult, error) {
	req := &catalogv1.ReserveStockRequest{CheckoutId: r.id, CheckPrices: true}
	for _, l := range cur.LineItems {
		req.Lines = append(req.Lines, &catalogv1.StockLine{VariantId: l.Item.ID, Quantity: l.Quantity, UnitPrice: l.Item.Price})
	}
	_, err := s.catalog.ReserveStock(ctx, connect.NewRequest(req))
	if err == nil {
		return nil, nil
	}
	switch apperr.As(err).Code {
	case bcp.CodeOutOfStock, bcp.CodeItemUnavailable, codePriceChanged:
		fresh, _, rerr := s.rebuilt(ctx, r.agent, sess)
		if rerr != nil {
			return nil, rerr
		}
		return s.reopenAs(ctx, r.id, attemptID, "refresh", r.key, func(*bcp.Checkout) *bcp.Checkout { return fresh })
	case codeCheckoutClosed:
		// Canceled after the claim: what the cancel left is the answer.
		_, c, lerr := s.store.getState(ctx, r.id)
		if lerr != nil {
			return nil, lerr
		}
		return result(c)
	}
	return s.reopenAs(ctx, r.id, attemptID, "reopen", r.key, func(c *bcp.Checkout) *bcp.Checkout {
		c.Status, c.Payment = bcp.StatusReadyForComplete, nil
		c.Messages = []bcp.Message{bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments[0]",
			"Não foi possível reservar o estoque agora; tente novamente com uma nova chave de idempotência.")}
		return c
	})
}

// codePriceChanged is the catalog's refusal to reserve at a price it no
// longer has (never shown to agents: the checkout comes back updated);
// codeCheckoutClosed its refusal to reserve for a checkout that ended.
const (
	codePriceChanged   = "price_changed"
	codeCheckoutClosed = "checkout_closed"
)

// refresh answers a complete_checkout that found its checkout out of date
// (prices, stock, shipping): the session is rebuilt and saved (with the
// completion's key k), nothing is charged.
func (s *Service) refresh(ctx context.Context, agent agentInfo, sess session, k *opKey) (*checkoutv1.CheckoutResult, error) {
	fresh, req, err := s.rebuilt(ctx, agent, sess)
	if err != nil {
		return nil, err
	}
	if err := move("refresh", sess.Status, fresh.Status); err != nil {
		return nil, err
	}
	state, reqJSON, err := encodeBoth(fresh, req)
	if err != nil {
		return nil, err
	}
	ok, _, err := s.store.update(ctx, sess, nil, fresh.Status, grandTotal(fresh), buyerEmail(fresh), sess.Capabilities, reqJSON, state, k)
	if err == nil && !ok {
		err = apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed while this request was being processed; retry")
	}
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: fresh.Status}, nil
}

// rebuilt is sess's checkout priced as the catalog and pricing have it now,
// for a complete_checkout that found it out of date: it says so, and a
// checkout that would still be ready waits for the agent to confirm the
// new total with an update.
func (s *Service) rebuilt(ctx context.Context, agent agentInfo, sess session) (*bcp.Checkout, *bcp.Checkout, error) {
	stored, shown := &bcp.Checkout{}, &bcp.Checkout{}
	if err := bcp.DecodeCheckout(sess.Request, stored); err != nil {
		return nil, nil, err
	}
	if err := bcp.DecodeCheckout(sess.State, shown); err != nil {
		return nil, nil, err
	}
	b, err := s.build(ctx, agent, sess.ID, stored, shown, sess.TenantID.String(), false)
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

// reopenAs gives up an attempt that was never started: the session
// becomes next(its checkout), which has no payment (the answer to the
// completion's key k).
func (s *Service) reopenAs(ctx context.Context, id, attemptID, transition string, k *opKey, next func(*bcp.Checkout) *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	for try := 0; try < 5; try++ {
		sess, c, err := s.store.getState(ctx, id)
		if err != nil {
			return nil, err
		}
		if sess.PaymentAttemptID == nil || *sess.PaymentAttemptID != attemptID {
			return result(c)
		}
		c = next(c)
		if err := move(transition, sess.Status, c.Status); err != nil {
			return nil, err
		}
		state, err := bcp.EncodeCheckout(c)
		if err != nil {
			return nil, err
		}
		ok, err := s.store.finish(ctx, sess, c.Status, nil, nil, state, k)
		if err != nil {
			return nil, err
		}
		if ok {
			return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}, nil
		}
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// publicInstrument is the instrument as it may be echoed: never the
// credential.
func publicInstrument(in bcp.PaymentInstrument) bcp.PaymentInstrument {
	yes := true
	return bcp.PaymentInstrument{ID: in.ID, HandlerID: in.HandlerID, Type: in.Type, BillingAddress: in.BillingAddress, Display: in.Display, Selected: &yes}
}
