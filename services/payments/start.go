package payments

import (
	"context"
	"crypto/hmac"
	"errors"
	"net/url"
	"regexp"
	"strings"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
)

var (
	attemptIDPattern = regexp.MustCompile(`^pay_[A-Za-z0-9]{1,60}$`)
	currencyPattern  = regexp.MustCompile(`^[A-Z]{3}$`)
)

// maxAmount is the protocol's amount range (JSON-safe integers).
const maxAmount = 1<<53 - 1

func validateStart(m *paymentsv1.StartPaymentRequest) error {
	if !attemptIDPattern.MatchString(m.GetAttemptId()) {
		return apperr.Invalid("attempt_id", "invalid_attempt_id", "attempt_id must look like pay_<letters and digits>")
	}
	if n := len(m.GetCheckoutId()); n == 0 || n > 100 {
		return apperr.Invalid("checkout_id", "invalid_checkout_id", "checkout_id is required (at most 100 characters)")
	}
	if m.GetAmount() <= 0 || m.GetAmount() > maxAmount {
		return apperr.Invalid("amount", "invalid_amount", "amount must be a positive number of minor units")
	}
	if !currencyPattern.MatchString(m.GetCurrency()) {
		return apperr.Invalid("currency", "invalid_currency", "currency must be an upper-case ISO 4217 code")
	}
	if u, err := url.Parse(m.GetBaseUrl()); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return apperr.Invalid("base_url", "invalid_base_url", "base_url must be the merchant origin, e.g. https://loja.com.br")
	}
	if len(m.GetInstrument().GetCredential()) > 64<<10 {
		return apperr.Invalid("instrument.credential", "instrument_too_large", "instrument.credential is larger than 64 KiB")
	}
	return nil
}

// StartPayment begins the attempt the checkout service chose. Idempotent
// by attempt id: a retry returns the stored attempt (and finishes work a
// crash interrupted); the same id with a different request is refused.
// Instrument problems are not RPC errors: the attempt is stored FAILED
// with payment_failed and a message for the buyer.
func (s *Service) StartPayment(ctx context.Context, r *connect.Request[paymentsv1.StartPaymentRequest]) (*connect.Response[paymentsv1.StartPaymentResponse], error) {
	a, err := s.startPayment(ctx, r.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.StartPaymentResponse{Attempt: toProto(a)}), nil
}

func (s *Service) startPayment(ctx context.Context, m *paymentsv1.StartPaymentRequest) (attempt, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return attempt{}, err
	}
	if err := validateStart(m); err != nil {
		return attempt{}, err
	}
	m.BaseUrl = strings.TrimRight(m.GetBaseUrl(), "/")
	in, bound, f := instrumentOf(m)
	hash := s.requestHash(m.GetCheckoutId(), m.GetAmount(), m.GetCurrency(), bound)
	// No read first: a repeated StartPayment (same attempt id) fails its
	// insert on the attempt's key, and insertAttempt's callers answer it
	// with replay — one transaction fewer on every first call.
	handlers, _, err := s.loadHandlers(ctx, tid.String())
	if err != nil {
		return attempt{}, err
	}
	p := paymentsdb.InsertAttemptParams{
		TenantID: tid, ID: m.GetAttemptId(), CheckoutID: m.GetCheckoutId(), Amount: m.GetAmount(), Currency: m.GetCurrency(),
		RequestHash: hash, BaseUrl: m.GetBaseUrl(), Environment: "sandbox", Display: []byte("{}"),
	}
	var h handler
	if f == nil {
		h, f = resolveHandler(handlers, in)
	}
	p.InstrumentID, p.InstrumentType = in.ID, in.Type
	p.HandlerID, p.HandlerName = in.HandlerID, h.Name
	if h.Environment != "" {
		p.Environment = h.Environment
	}
	if f == nil && m.GetCurrency() != "BRL" {
		f = failed("Esta loja só recebe pagamentos em BRL (o pedido está em %s).", m.GetCurrency())
	}
	if f != nil {
		return s.insertFailed(ctx, p, f, m, hash)
	}
	if h.isPix() {
		return s.startPix(ctx, p, h, m, hash)
	}
	return s.startCard(ctx, p, h, in, m, hash, nil)
}

// replay answers a repeated StartPayment.
func (s *Service) replay(ctx context.Context, a attempt, m *paymentsv1.StartPaymentRequest, hash []byte) (attempt, error) {
	if a.Status == stCanceled && a.FailureCode == codeCanceledBeforeStart {
		return a, nil // stopped before it started: nothing is charged
	}
	if !hmac.Equal(a.RequestHash, hash) {
		return attempt{}, apperr.New(apperr.KindFailedPrecondition, "attempt_conflict",
			"payment attempt %s was started with a different request", a.ID)
	}
	if a.Status != stPending {
		return a, nil
	}
	// A crash (or a concurrent call) left the attempt half-way: finish it.
	switch {
	case a.Txid != nil && compactJSON(a.Display) == "{}":
		h, err := s.handlerOf(ctx, a)
		if err != nil {
			return attempt{}, err
		}
		if h == nil {
			return s.failPending(ctx, a.ID, failed("O handler de pagamento %q foi removido desta loja.", a.HandlerID), false)
		}
		psp, chave, err := s.pspForStart(ctx, *h, a.BaseUrl)
		if err != nil {
			if unusable(err) {
				return s.failPending(ctx, a.ID, failed("%s", apipix.Diagnose(err).Buyer), false)
			}
			return attempt{}, err
		}
		return s.createCharge(ctx, a, psp, chave)
	case a.Txid == nil && a.ChargeID == nil:
		h, err := s.handlerOf(ctx, a)
		if err != nil {
			return attempt{}, err
		}
		if h == nil {
			return s.failPending(ctx, a.ID, failed("O handler de pagamento %q foi removido desta loja.", a.HandlerID), false)
		}
		in, _, f := instrumentOf(m)
		if f != nil {
			return s.failPending(ctx, a.ID, f, false)
		}
		return s.startCard(ctx, paymentsdb.InsertAttemptParams{}, *h, in, m, hash, &a)
	}
	return a, nil
}

// handlerOf finds the attempt's handler among the tenant's current ones
// (nil when it was removed).
func (s *Service) handlerOf(ctx context.Context, a attempt) (*handler, error) {
	handlers, _, err := s.loadHandlers(ctx, a.TenantID.String())
	if err != nil {
		return nil, err
	}
	for _, h := range handlers {
		if h.ID == a.HandlerID {
			return &h, nil
		}
	}
	return nil, nil
}

// insertAttempt inserts p in one transaction with before (which may turn
// the attempt into a failure, e.g. a reused token) and after (jobs that
// must exist with it). It reports whether the attempt already existed (a
// concurrent StartPayment with the same id won the insert).
func (s *Service) insertAttempt(ctx context.Context, p paymentsdb.InsertAttemptParams,
	before func(q *paymentsdb.Queries) (*failure, error), after func(tx pgx.Tx, a attempt) error,
) (attempt, bool, error) {
	var a attempt
	var err error
	if before == nil && after == nil {
		// The insert alone: one statement, one round trip.
		err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
			var err error
			a, err = paymentsdb.New(q).InsertAttempt(ctx, p)
			return err
		})
	} else {
		err = s.inTenant(ctx, func(q *paymentsdb.Queries, _ uuid.UUID, tx pgx.Tx) error {
			if before != nil {
				f, err := before(q)
				if err != nil {
					return err
				}
				if f != nil {
					p.Status, p.FailureCode, p.FailureMessage = stFailed, f.code, f.msg
					p.Txid, p.ExpiresAt, p.ResolveAfter, after = nil, nil, nil, nil
				}
			}
			var err error
			if a, err = q.InsertAttempt(ctx, p); err != nil {
				return err
			}
			if after != nil {
				return after(tx, a)
			}
			return nil
		})
	}
	if err == nil {
		s.metrics.attempts.WithLabelValues(kindOf(a), a.Status).Inc()
	}
	switch constraintOf(err) {
	case "attempts_pkey":
		existing, gerr := s.getAttempt(ctx, p.ID)
		return existing, true, gerr
	case "attempts_one_live":
		// Whichever unique index reports first, a repeat of this very
		// attempt is a replay, not a second payment.
		if existing, gerr := s.getAttempt(ctx, p.ID); gerr == nil {
			return existing, true, nil
		}
		return attempt{}, false, apperr.New(apperr.KindFailedPrecondition, "payment_in_progress",
			"checkout %s already has a payment attempt in flight or paid", p.CheckoutID)
	}
	return a, false, err
}

// insertFailed stores the attempt as FAILED with f.
func (s *Service) insertFailed(ctx context.Context, p paymentsdb.InsertAttemptParams, f *failure, m *paymentsv1.StartPaymentRequest, hash []byte) (attempt, error) {
	p.Status, p.FailureCode, p.FailureMessage = stFailed, f.code, f.msg
	p.Txid, p.ExpiresAt, p.ResolveAfter = nil, nil, nil
	a, existed, err := s.insertAttempt(ctx, p, nil, nil)
	if err == nil && existed {
		return s.replay(ctx, a, m, hash)
	}
	return a, err
}

// failPending moves a still-pending attempt to FAILED (a no-op on any
// other status). notify announces the change to the checkout service (asynchronous changes only).
func (s *Service) failPending(ctx context.Context, id string, f *failure, notify bool) (attempt, error) {
	return s.transition(ctx, id, notify, func(a *attempt) bool {
		if a.Status != stPending {
			return false
		}
		a.Status, a.FailureCode, a.FailureMessage = stFailed, f.code, f.msg
		return true
	})
}

// transition locks the attempt, lets change edit it (false: leave it),
// writes it and, when notify, announces it to the checkout service in the
// same transaction.
// transitionKnown is transition for a caller that holds the attempt as it
// just wrote or read it (known; nil: it does not): the change is applied
// to that copy and written in one statement, guarded by its version. If
// the attempt changed meanwhile (or notify needs a job in the same
// transaction), the locked path decides on the current row, calling
// change again.
func (s *Service) transitionKnown(ctx context.Context, known *attempt, id string, notify bool, change func(a *attempt) bool) (attempt, error) {
	if known != nil && !notify {
		if a := *known; change(&a) {
			var out attempt
			err := pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
				var err error
				out, err = s.update(ctx, paymentsdb.New(q), known.Status, a)
				return err
			})
			if !apperr.IsKind(err, apperr.KindAborted) {
				return out, err
			}
		}
	}
	return s.transition(ctx, id, notify, change)
}

func (s *Service) transition(ctx context.Context, id string, notify bool, change func(a *attempt) bool) (attempt, error) {
	var out attempt
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		a, err := q.LockAttempt(ctx, paymentsdb.LockAttemptParams{TenantID: tid, ID: id})
		if err != nil {
			return err
		}
		out = a
		if !change(&a) {
			return nil
		}
		if out, err = s.update(ctx, q, out.Status, a); err != nil {
			return err
		}
		if notify {
			return s.announce(ctx, tx, out)
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return out, errAttemptNotFound(id)
	}
	return out, err
}
