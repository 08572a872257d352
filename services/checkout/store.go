package checkout

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// store is the checkout schema: the only SQL of the service (sqlc package
// checkoutdb), always in the context tenant's scope except the sweeps'
// listings. Every write of a session is one statement, a compare-and-swap
// on its version: no row lock is ever held across a call to another
// service, and a write that lost the race reports it (false) instead of
// overwriting what won.
type store struct{ pool *pgxpool.Pool }

type session = checkoutdb.CheckoutSession

// one runs fn, a single statement, in the context tenant's scope.
func (st store) one(ctx context.Context, fn func(q *checkoutdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return keyTaken(pgstore.Single(ctx, st.pool, func(q *pgstore.SingleQuerier) error { return fn(checkoutdb.New(q), tid) }))
}

// errNotFound is the answer for an id this tenant has no session with
// (another tenant's id included: RLS and the tenant filter).
func errNotFound(id string) error { return apperr.NotFound(bcp.CodeNotFound, "no checkout %q", id) }

// insert writes a new session; with k, its key and answer too. It returns
// the new row's xmin (seen.go).
func (st store) insert(ctx context.Context, p checkoutdb.InsertSessionParams, k *opKey) (int64, error) {
	answer, err := k.answer(&checkoutv1.CheckoutResult{CheckoutJson: p.State, Status: p.Status})
	if err != nil {
		return 0, err
	}
	var xmin int64
	err = st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		p.TenantID, p.Idem, p.IdemResponse = tid, k.arg(), answer
		row, err := q.InsertSession(ctx, p)
		k.wrote(row.Kept, true)
		xmin = row.Seen
		return err
	})
	return xmin, err
}

func (st store) get(ctx context.Context, id string) (session, error) {
	var sess session
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		sess, err = q.GetSession(ctx, checkoutdb.GetSessionParams{TenantID: tid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sess, errNotFound(id)
	}
	return sess, err
}

// owned fails as not found when the session is not owner's: a checkout
// belongs to the agent platform that created it, and another agent of the
// same merchant learns nothing of it, not even that it exists. An empty
// owner is the platform's own callers (the hosted page, the admin, the
// sweeps), scoped by tenant only.
func owned(sess session, owner string) error {
	if owner != "" && sess.AgentProfileUrl != owner {
		return errNotFound(sess.ID)
	}
	return nil
}

// getState reads a session and decodes its checkout.
func (st store) getState(ctx context.Context, id string) (session, *bcp.Checkout, error) {
	sess, err := st.get(ctx, id)
	if err != nil {
		return sess, nil, err
	}
	c, err := decodeState(sess)
	return sess, c, err
}

func decodeState(sess session) (*bcp.Checkout, error) {
	c := &bcp.Checkout{}
	if err := bcp.DecodeCheckout(sess.State, c); err != nil {
		return nil, err
	}
	return c, nil
}

// update rewrites an open session (build, refresh), with k's key and
// answer; false: it changed since it was read (or, with seen, since this
// process wrote it: seen.go). It returns the new row's xmin.
func (st store) update(ctx context.Context, sess session, seen *int64, status string, total int64, email string, capabilities []string, request, state []byte, k *opKey) (bool, int64, error) {
	var xmin int64
	ok, err := keyedWrite(ctx, st, k, true, &checkoutv1.CheckoutResult{CheckoutJson: state, Status: status}, func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error) {
		row, err := q.UpdateSession(ctx, checkoutdb.UpdateSessionParams{
			TenantID: tid, ID: sess.ID, Version: sess.Version, Status: status, Total: total, BuyerEmail: email,
			Capabilities: capabilities, Request: request, State: state, Idem: idem, IdemResponse: answer, Seen: seen,
		})
		xmin = row.NowSeen
		return row.Written, row.Kept, err
	})
	return ok, xmin, err
}

// claim is the one write that lets money move: the session becomes
// complete_in_progress with the attempt's id (machine.go, "claim"); the
// completion's key, if any, is claimed with it. owner is the process
// incarnation doing the completion ("": none, no recovery) and
// completeKey the key as whoever settles answers it (recover.go).
func (st store) claim(ctx context.Context, sess session, seen *int64, attemptID, webhookURL, baseURL string, state, mandate []byte, settleAfter time.Time, automaticDiscounts []string, owner string, completeKey []byte, k *opKey) (bool, error) {
	if automaticDiscounts == nil {
		automaticDiscounts = []string{}
	}
	return keyedWrite(ctx, st, k, false, nil, func(q *checkoutdb.Queries, tid uuid.UUID, idem, _ []byte) (int64, bool, error) {
		row, err := q.SetSessionPayment(ctx, checkoutdb.SetSessionPaymentParams{
			TenantID: tid, ID: sess.ID, Version: sess.Version, Status: bcp.StatusCompleteInProgress, PaymentAttemptID: &attemptID,
			OrderWebhookUrl: webhookURL, BaseUrl: baseURL, State: state, SettleAfter: &settleAfter, Ap2Mandate: mandate, AutomaticDiscountIds: automaticDiscounts,
			SettleOwner: ownerArg(owner), CompleteKey: completeKey, Idem: idem, Seen: seen,
		})
		return row.Written, row.Kept, err
	})
}

// finish records where a completion ended: completed with its order, back
// where the buyer can try again (attempt nil), or waiting (same attempt);
// with the completion's key (k), its answer too: for a completed session,
// which never changes again, the session itself (FinishSession keeps its
// id with the key instead of a copy of state and status).
func (st store) finish(ctx context.Context, sess session, status string, attemptID, orderID *string, state []byte, k *opKey) (bool, error) {
	var res proto.Message
	if status != bcp.StatusCompleted {
		res = &checkoutv1.CheckoutResult{CheckoutJson: state, Status: status}
	}
	return keyedWrite(ctx, st, k, true, res, func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error) {
		row, err := q.FinishSession(ctx, checkoutdb.FinishSessionParams{
			TenantID: tid, ID: sess.ID, Version: sess.Version, Status: status, PaymentAttemptID: attemptID, OrderID: orderID, State: state,
			Idem: idem, IdemResponse: answer,
		})
		return row.Written, row.Kept, err
	})
}

// close ends a session without an order; releaseBy, when set, is when the
// settle sweep makes sure its stock went back, and owner ("": none) the
// process incarnation releasing it now. With a cancel's key (k), its key
// and answer too.
func (st store) close(ctx context.Context, sess session, state []byte, releaseBy *time.Time, owner string, k *opKey) (bool, error) {
	return keyedWrite(ctx, st, k, true, &checkoutv1.CheckoutResult{CheckoutJson: state, Status: bcp.StatusCanceled}, func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error) {
		row, err := q.CloseSession(ctx, checkoutdb.CloseSessionParams{TenantID: tid, ID: sess.ID, Version: sess.Version, State: state, SettleAfter: releaseBy,
			SettleOwner: ownerArg(owner), Idem: idem, IdemResponse: answer})
		return row.Written, row.Kept, err
	})
}

// released says a closed session's stock release confirmed.
func (st store) released(ctx context.Context, id string) error {
	return st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		_, err := q.ClearSettleAfter(ctx, checkoutdb.ClearSettleAfterParams{TenantID: tid, ID: id})
		return err
	})
}

// settleAgain sets when the settle sweep looks at a completion again (nil:
// never), while the session is still on that attempt.
func (st store) settleAgain(ctx context.Context, id, attemptID string, at *time.Time) error {
	return st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		_, err := q.SetSettleAfter(ctx, checkoutdb.SetSettleAfterParams{SettleAfter: at, TenantID: tid, ID: id, PaymentAttemptID: &attemptID})
		return err
	})
}

// ownerArg is an owner as the row keeps it (NULL for none).
func ownerArg(owner string) *string {
	if owner == "" {
		return nil
	}
	return &owner
}

// takeOver makes this process incarnation (owner) the owner of the work
// on session id that was was's; false when it is not was's any more.
func (st store) takeOver(ctx context.Context, id, was, owner string) (bool, error) {
	var n int64
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		n, err = q.TakeOverSession(ctx, checkoutdb.TakeOverSessionParams{Owner: &owner, TenantID: tid, ID: id, Was: &was})
		return err
	})
	return n == 1, err
}

func (st store) list(ctx context.Context, status, before *string, size int32) ([]checkoutdb.ListSessionsRow, error) {
	var rows []checkoutdb.ListSessionsRow
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		rows, err = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tid, Status: status, BeforeID: before, PageSize: size})
		return err
	})
	return rows, err
}

func (st store) expiredOpen(ctx context.Context, now time.Time) ([]string, error) {
	var ids []string
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		ids, err = q.ListExpiredOpenSessions(ctx, checkoutdb.ListExpiredOpenSessionsParams{TenantID: tid, Now: now})
		return err
	})
	return ids, err
}

// sweepList lists due sessions of every tenant in the read-only
// checkout_sweep scope (ids only; each is then acted on in its tenant).
func sweepList[T any](ctx context.Context, st store, list func(q *checkoutdb.Queries) ([]T, error)) ([]T, error) {
	var due []T
	err := pgstore.InCheckoutSweep(ctx, st.pool, func(tx pgx.Tx) error {
		var err error
		due, err = list(checkoutdb.New(tx))
		return err
	})
	return due, err
}
