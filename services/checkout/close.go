package checkout

import (
	"context"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/payattempt"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// endReason says who ends a checkout without an order.
type endReason int

const (
	endCancel endReason = iota // the agent (cancel_checkout)
	endExpire                  // the clock (a read, an update, the sweep)
)

// releaseSafetyNet is when the settle sweep makes sure a closed
// checkout's stock went back, if this process could not confirm it.
const releaseSafetyNet = time.Minute

// end closes a session without an order (machine.go: cancel, expire);
// owner is the calling agent's profile ("" for the platform's own), k a
// cancel's idempotency key (kept with the close). A
// session with an attempt on it is closed only once the payments service
// has stopped that attempt for good (stop); if its money had already
// moved, completion wins: the session is settled and returned completed
// (to a cancel, with a message saying so). Its stock then goes back, and
// the catalog fences it against a reservation still in flight.
//
// A cancel whose payment cannot be stopped now (the processor or PSP does
// not answer) gets the checkout as it is with a recoverable message; an
// expiry leaves it for the next sweep.
func (s *Service) end(ctx context.Context, id string, why endReason, owner string, k *opKey) (*checkoutv1.CheckoutResult, error) {
	if tid, err := tenancy.From(ctx); err == nil {
		// The close's stock release is this request's work (recover.go).
		defer s.working.add(tid, id)()
	}
	for try := 0; try < 5; try++ {
		sess, c, err := s.store.getState(ctx, id)
		if err == nil {
			err = owned(sess, owner)
		}
		if err != nil {
			return nil, err
		}
		switch {
		case sess.Status == bcp.StatusCanceled:
			return result(c) // canceling twice changes nothing
		case sess.Status == bcp.StatusCompleted && why == endCancel:
			return unchanged(c, notModifiable(sess.Status))
		case bcp.Terminal(sess.Status):
			return result(c)
		case why == endExpire && (s.now().Before(sess.ExpiresAt) || sess.Status == bcp.StatusCompleteInProgress):
			// Not due, or a completion in flight: its payment decides.
			return result(c)
		}
		if sess.PaymentAttemptID != nil {
			a, err := s.stop(ctx, sess, c)
			switch {
			case err != nil && why == endCancel && apperr.IsKind(err, apperr.KindUnavailable):
				slog.WarnContext(ctx, "checkout: cancel could not stop the payment", "checkout_id", id, "attempt_id", *sess.PaymentAttemptID, "err", err)
				return unchanged(c, notStopped())
			case err != nil:
				return nil, err
			case outcomes[a.GetStatus()] == "await" || outcomes[a.GetStatus()] == "escalate":
				// Not stopped (the payments service must say final or paid):
				// never close on a payment that may still move money.
				slog.ErrorContext(ctx, "checkout: the payment was not stopped", "checkout_id", id, "attempt_id", *sess.PaymentAttemptID, "status", a.GetStatus())
				if why != endCancel {
					return nil, apperr.New(apperr.KindUnavailable, "payment_not_stopped", "the payment of checkout %s was not stopped; retry", id)
				}
				return unchanged(c, notStopped())
			case payattempt.MovedMoneyProto(a.GetStatus()):
				// The money moved first: completion wins.
				res, err := s.settle(ctx, id, *sess.PaymentAttemptID, false, nil)
				if err != nil || why != endCancel {
					return res, err
				}
				done, err := decodeResult(res)
				if err != nil {
					return nil, err
				}
				return unchanged(done, bcp.Error(bcp.CodeCheckoutNotModifiable, bcp.SeverityRecoverable, "$.status",
					"O pagamento já havia sido aprovado: o checkout foi concluído e não pode mais ser cancelado."))
			}
			if err := s.at(ctx, StepStopped, id); err != nil {
				return nil, err
			}
		}
		res, ok, err := s.close(ctx, sess, c, why, k)
		if err != nil || ok {
			return res, err
		}
		// The session changed meanwhile (a settle, an update): look again.
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// close writes the cancel or expire transition; ok is false when the
// session changed since it was read. Its stock is released and fenced
// right after, and until that confirms the settle sweep keeps a release
// due.
func (s *Service) close(ctx context.Context, sess session, c *bcp.Checkout, why endReason, k *opKey) (*checkoutv1.CheckoutResult, bool, error) {
	transition := "cancel"
	c.Messages = nil
	if why == endExpire {
		transition = "expire"
		c.Messages = []bcp.Message{bcp.Info("expired", "", "Este checkout expirou; inicie um novo.")}
	}
	if err := move(transition, sess.Status, bcp.StatusCanceled); err != nil {
		return nil, false, err
	}
	c.Status = bcp.StatusCanceled
	c.ContinueURL = "" // omitted on terminal states
	state, err := bcp.EncodeCheckout(c)
	if err != nil {
		return nil, false, err
	}
	// Every closed checkout is fenced, not only one holding an attempt now:
	// a completion that claimed earlier and was reopened by the settle
	// sweep may still be on its way to reserve.
	releaseBy := s.now().Add(releaseSafetyNet)
	ok, err := s.store.close(ctx, sess, state, &releaseBy, s.holder.ID(), k)
	if err != nil || !ok {
		return nil, false, err
	}
	res := &checkoutv1.CheckoutResult{CheckoutJson: state, Status: bcp.StatusCanceled}
	if ck := storedKey(sess.CompleteKey); ck != nil {
		// A completion whose request is gone ends here: its key gets the
		// canceled checkout (best effort; else its 2-minute lease).
		if err := s.store.keepKey(context.WithoutCancel(ctx), ck, res); err != nil {
			slog.WarnContext(ctx, "checkout: the canceled completion's key was not answered", "checkout_id", sess.ID, "err", err)
		}
	}
	if err := s.at(ctx, StepClosed, sess.ID); err != nil {
		return nil, false, err
	}
	// Closed: an error from here on is the sweep's to finish, not the
	// caller's (the checkout is canceled whatever happens).
	if err := s.releaseClosed(ctx, sess.ID); err != nil {
		slog.WarnContext(ctx, "checkout: stock of a closed checkout not released yet; the settle sweep will", "checkout_id", sess.ID, "err", err)
	}
	return res, true, nil
}

// releaseClosed gives a closed checkout's stock back for good and clears
// the release the settle sweep had due.
func (s *Service) releaseClosed(ctx context.Context, id string) error {
	if err := s.releaseStock(ctx, id, true); err != nil {
		return err
	}
	return s.store.released(ctx, id)
}

// releaseStock returns a checkout's reserved stock (idempotent); with
// close it can never reserve again.
func (s *Service) releaseStock(ctx context.Context, id string, close bool) error {
	_, err := s.catalog.ReleaseStock(ctx, connect.NewRequest(&catalogv1.ReleaseStockRequest{CheckoutId: id, Close: close}))
	return err
}

func decodeResult(res *checkoutv1.CheckoutResult) (*bcp.Checkout, error) {
	c := &bcp.Checkout{}
	if err := bcp.DecodeCheckout(res.GetCheckoutJson(), c); err != nil {
		return nil, err
	}
	return c, nil
}

// notStopped answers a cancel whose payment could not be stopped now.
func notStopped() bcp.Message {
	return bcp.Error("payment_in_progress", bcp.SeverityRecoverable, "$.status",
		"O pagamento deste checkout está em andamento e não pôde ser interrompido agora; tente cancelar de novo em instantes ou consulte-o com get_checkout.")
}
