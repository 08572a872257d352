package checkout

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Idempotency keys (ucp-digest §10) are kept by the statement that writes
// the request's outcome, not by commits of their own before and after it
// (issue 23): a keyed create, update or cancel stores its key with its
// answer in the statement that writes the checkout or cart; a completion
// claims its key (in flight) in the statement that claims the payment, the
// fence, and stores its answer in the one that settles the session. An
// answer no write of the request's own stored (a refusal with the checkout
// as it is, an error_response) is stored on its own. The SQL is
// checkout.keep_key (migration 00034); what a caller sees is keyed's.
//
// A repeat of a request is executed up to its first write, which fails
// (nothing written) because the key is taken: only then is the key read,
// and the stored answer replayed, the conflict refused or the request
// told to wait. Until that write a request only reads, so this is safe,
// and the common case (a key used once) costs no read of the key at all.
// The 48-hour retention and the 2-minute in-flight lease live in keep_key.

// opKey is one request's idempotency key (nil: the request has none).
type opKey struct {
	scope, key string
	hash       []byte
	token      string    // this request's own, to tell its claim from another's
	now        time.Time // the request's clock (tests move it)
	claimed    bool      // this request holds the key in flight
	kept       bool      // the answer is stored
	// settles: the key was claimed with a completion that whoever settles
	// it answers (complete_key, recover.go); a failure keeps it in flight.
	settles bool
	// raw is the key as keep_key reads it, when it is a completion's key
	// read back from its session (storedKey) rather than a request's.
	raw []byte
	// args are arg's answers, unclaimed and held, once made (a completion
	// writes its key four times: claim, the session's copy, settle).
	args *[2][]byte
}

// errKeyTaken is a keyed write refused because another request holds or
// answered the key (keep_key's SQLSTATE BCK01): the write did not happen.
var errKeyTaken = apperr.New(apperr.KindAborted, "idempotency_key_taken", "the idempotency key is held by another request")

// Refusals of a repeated key, as the edge renders them (409, -32000).
var (
	errKeyConflict = apperr.New(apperr.KindAlreadyExists, "idempotency_conflict",
		"this idempotency key was already used with a different request; use a new key for a new request")
	errKeyInFlight = apperr.New(apperr.KindAborted, "request_in_flight",
		"a request with this idempotency key is still being processed; retry later with the same key")
)

// newOpKey validates the key the edge sent with a request.
func newOpKey(m *checkoutv1.Idempotency, now time.Time) (*opKey, error) {
	if m == nil {
		return nil, nil
	}
	if m.GetScope() == "" || len(m.GetScope()) > 2300 {
		return nil, apperr.Invalid("idempotency.scope", "invalid_scope", "scope is required")
	}
	if m.GetKey() == "" || len(m.GetKey()) > 255 {
		return nil, apperr.Invalid("idempotency.key", "invalid_idempotency_key", "idempotency key must have 1 to 255 characters")
	}
	if len(m.GetRequestHash()) != 32 {
		return nil, apperr.Invalid("idempotency.request_hash", "invalid_hash", "request_hash must be a SHA-256 digest")
	}
	return &opKey{scope: m.GetScope(), key: m.GetKey(), hash: m.GetRequestHash(), token: ids.New("idk"), now: now}, nil
}

// arg is the key as keep_key reads it (nil without a key). A request that
// claimed its key stores its answer as its holder (held): if the key was
// taken over meanwhile (the 2-minute lease), its write still stands. Any
// other write with a key fails if the key is taken (errKeyTaken).
func (k *opKey) arg() []byte {
	if k == nil {
		return nil
	}
	return k.encoded(k.claimed)
}

// encoded is the key as keep_key reads it, held or not, made once per
// request: the same bytes every time (callers never change them).
func (k *opKey) encoded(held bool) []byte {
	if k.raw != nil {
		return k.raw
	}
	if k.args == nil {
		k.args = new([2][]byte)
	}
	i := 0
	if held {
		i = 1
	}
	if k.args[i] == nil && held {
		// The holder's answer reads only where the key is and whose claim
		// it is: without the hash and the clock it is 112 bytes shorter (hash and now) in
		// every session version that keeps it (complete_key).
		b, _ := json.Marshal(struct {
			Scope string `json:"scope"`
			Key   string `json:"key"`
			Token string `json:"token"`
			Held  bool   `json:"held"`
		}{k.scope, k.key, k.token, true})
		k.args[i] = b
	}
	if k.args[i] == nil {
		b, _ := json.Marshal(struct {
			Scope string    `json:"scope"`
			Key   string    `json:"key"`
			Hash  string    `json:"hash"`
			Token string    `json:"token"`
			Now   time.Time `json:"now"`
			Held  bool      `json:"held"`
		}{k.scope, k.key, hex.EncodeToString(k.hash), k.token, k.now, false})
		k.args[i] = b
	}
	return k.args[i]
}

// heldArg is the key as its holder stores the answer (arg once claimed):
// what a completion's session keeps, so that whoever settles it answers
// the key (nil without a key).
func (k *opKey) heldArg() []byte {
	if k == nil {
		return nil
	}
	return k.encoded(true)
}

// storedKey is a completion's key as its session keeps it (complete_key):
// the settle that learns the outcome stores its answer as the key's
// holder would (nil: none kept).
func storedKey(raw []byte) *opKey {
	if len(raw) == 0 {
		return nil
	}
	return &opKey{raw: raw, claimed: true}
}

// answer is the stored answer of res (nil without a key).
func (k *opKey) answer(res proto.Message) ([]byte, error) {
	if k == nil {
		return nil, nil
	}
	return proto.Marshal(res)
}

// wrote records what a keyed write did to the key: claimed it (an answer
// of nil) or stored the answer.
func (k *opKey) wrote(kept bool, answered bool) {
	if k == nil || !kept {
		return
	}
	if answered {
		k.kept = true
	} else {
		k.claimed = true
	}
}

// keyedWrite runs one optimistic write that keeps k's key in the same
// statement, answered (false: a completion's claim, in flight) with res
// (nil: the statement stores the answer by reference, FinishSession);
// write gets the key's arguments and reports the rows it wrote and whether
// the key was kept. false: the row changed since it was read.
func keyedWrite(ctx context.Context, st store, k *opKey, answered bool, res proto.Message, write func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error)) (bool, error) {
	var answer []byte
	if res != nil {
		var err error
		if answer, err = k.answer(res); err != nil {
			return false, err
		}
	}
	var written int64
	var kept bool
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		written, kept, err = write(q, tid, k.arg(), answer)
		return err
	})
	k.wrote(kept, answered)
	return written == 1, err
}

// keyTaken maps keep_key's refusal to errKeyTaken.
func keyTaken(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "BCK01" {
		return errKeyTaken
	}
	return err
}

// keyed runs one keyed operation (run) and answers it: a result whose
// answer no write stored is stored now; a write refused because the key
// is taken answers what the key says (replay, conflict, in flight). So
// does a failure, when the key has an answer: a repeat can fail because of
// what the first request did (a canceled cart is not found). A failure
// gives back a key the request claimed, so a retry executes.
func keyed[R proto.Message](ctx context.Context, st store, k *opKey, run func() (R, error), empty func() R) (R, error) {
	if k == nil {
		return run()
	}
	var zero R
	// Keep the table small without a cross-tenant sweeper: every hundredth
	// keyed request clears its tenant's expired keys, beside it rather
	// than before it (one request in a hundred is the p99: it must not
	// wait for a delete that a busy merchant's expired keys can make long).
	if keyedRequests.Add(1)%cleanEvery == 0 {
		go st.deleteExpiredKeys(context.WithoutCancel(ctx))
	}
	res, err := run()
	// Once executed, the outcome is recorded even if the caller went away.
	bg := context.WithoutCancel(ctx)
	if err == nil && !k.kept {
		err = st.keepKey(bg, k, res)
	}
	switch {
	case err == nil:
		return res, nil
	case k.claimed && !k.kept && !k.settles:
		st.releaseKey(bg, k)
		return zero, err
	case k.claimed && !k.kept:
		// A completion's key stays in flight: whoever settles the session
		// (this process's recovery first) answers it with the outcome.
		return zero, err
	case k.claimed:
		return zero, err
	}
	r, rerr := replay(ctx, st, k, empty)
	switch {
	case errors.Is(err, errKeyTaken):
		if errors.Is(rerr, errNoKey) {
			rerr = errKeyInFlight // given back meanwhile: the retry executes
		}
		return r, rerr
	case errors.Is(rerr, errNoKey):
		return zero, err
	}
	return r, rerr
}

// errNoKey: the key has no row (nobody used it, or it was given back).
var errNoKey = errors.New("checkout: idempotency key not found")

// replay answers a request whose key another request holds or answered:
// the stored answer, or a refusal.
func replay[R proto.Message](ctx context.Context, st store, k *opKey, empty func() R) (R, error) {
	var zero R
	var row checkoutdb.GetIdempotencyKeyRow
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		row, err = q.GetIdempotencyKey(ctx, checkoutdb.GetIdempotencyKeyParams{TenantID: tid, Scope: k.scope, Key: k.key})
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return zero, errNoKey
	case err != nil:
		return zero, err
	case string(row.RequestHash) != string(k.hash):
		return zero, errKeyConflict
	case row.State == "answered":
		// Kept by reference (migration 00053): the completed session's
		// state and status, exactly as FinishSession wrote them with the
		// key (a completed session never changes again).
		res := empty()
		r, ok := any(res).(*checkoutv1.CheckoutResult)
		if !ok || row.AnswerStatus == nil || row.AnswerCheckout == nil {
			return zero, apperr.New(apperr.KindInternal, "internal", "idempotency key %q is answered by a checkout that is not there", k.key)
		}
		r.CheckoutJson, r.Status = row.AnswerState, *row.AnswerStatus
		return res, nil
	case row.State != "done":
		return zero, errKeyInFlight
	}
	res := empty()
	if err := proto.Unmarshal(row.Response, res); err != nil {
		return zero, err
	}
	return res, nil
}

// keepKey stores the answer of a request no write of its own answered.
func (st store) keepKey(ctx context.Context, k *opKey, res proto.Message) error {
	answer, err := k.answer(res)
	if err != nil {
		return err
	}
	return st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		kept, err := q.KeepIdempotencyKey(ctx, checkoutdb.KeepIdempotencyKeyParams{TenantID: tid, Idem: k.arg(), Response: answer})
		k.wrote(kept, true)
		return err
	})
}

// releaseKey gives back the key a failed request claimed (best effort: a
// key left in flight is taken over by a retry after the lease).
func (st store) releaseKey(ctx context.Context, k *opKey) {
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		_, err := q.ReleaseIdempotencyKey(ctx, checkoutdb.ReleaseIdempotencyKeyParams{TenantID: tid, Scope: k.scope, Key: k.key, ClaimToken: k.token})
		return err
	})
	if err != nil {
		slog.WarnContext(ctx, "checkout: release idempotency key", "err", err)
	}
}

// keyedRequests counts this process's keyed requests; every cleanEvery-th
// clears its tenant's expired keys.
var keyedRequests atomic.Uint64

const cleanEvery = 100

// deleteExpiredKeys clears the context tenant's expired keys (the
// protocol asks for at least 24 hours; they are kept 48).
func (st store) deleteExpiredKeys(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		_, err := q.DeleteExpiredIdempotencyKeys(ctx, tid)
		return err
	}); err != nil {
		slog.WarnContext(ctx, "checkout: delete expired idempotency keys", "err", err)
	}
}
