package checkout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// seenSessions remembers each session as this process last wrote it
// (create, update), so the agent's next update or completion of the same
// checkout starts from it instead of reading the row again: a purchase
// reads its session once instead of three times.
//
// A remembered session is a hint, never the truth. Every write that starts
// from one is fenced on the row's xmin as this process wrote it
// (UpdateSession, SetSessionPayment: "seen"), and any change to the row by
// anyone — another checkout process, a sweep, an operator's SQL — gives
// the row a new xmin. So a stale entry costs a refused write and a fresh
// read, never a wrong answer; and only the paths that end in such a write
// use an entry: every other outcome (expired, not modifiable, refreshed,
// AP2, bad input) is answered from a fresh read.
type seenSessions struct {
	max int
	ttl time.Duration

	mu sync.Mutex
	m  map[seenKey]seenEntry

	// Counted by the callers: started from a remembered session (hits),
	// read the row (misses: none, or none this call could start from),
	// started from one and then read the row (rereads).
	hits, misses, rereads atomic.Int64
}

type seenKey struct {
	tenant uuid.UUID
	id     string
}

type seenEntry struct {
	sess session
	// checkout is sess's checkout as this process encoded it into
	// sess.State: whoever takes the entry owns it (and may change it),
	// so the request starting from it does not decode the state again.
	checkout *bcp.Checkout
	// request is sess.Request as this process encoded it (the normalised
	// request build returned), for the completion's re-check: whoever
	// takes the entry may read it, never change it (nil: decode it).
	request *bcp.Checkout
	xmin    int64 // the row's xmin when this process wrote sess
	at      time.Time
}

// Sizing: an agent's next call on a checkout comes within seconds; a
// minute covers it. 4 096 sessions of a few kB each bound the memory.
const (
	seenMax = 4096
	seenTTL = time.Minute
)

func newSeenSessions() *seenSessions {
	return &seenSessions{max: seenMax, ttl: seenTTL, m: map[seenKey]seenEntry{}}
}

// take returns and forgets the session as last written here, with its
// checkout and request: a write that starts from it either replaces it
// (put) or shows it stale.
func (c *seenSessions) take(tenant uuid.UUID, id string, now time.Time) (seenEntry, bool) {
	k := seenKey{tenant, id}
	c.mu.Lock()
	e, ok := c.m[k]
	if ok {
		delete(c.m, k)
	}
	c.mu.Unlock()
	if !ok || now.Sub(e.at) > c.ttl {
		return seenEntry{}, false
	}
	return e, true
}

// put remembers sess as written with xmin, with checkout and request, the
// checkout sess.State and the request sess.Request encode (the caller no
// longer changes either).
func (c *seenSessions) put(sess session, checkout, request *bcp.Checkout, xmin int64, now time.Time) {
	if xmin == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.trim(now)
	}
	c.m[seenKey{sess.TenantID, sess.ID}] = seenEntry{sess: sess, checkout: checkout, request: request, xmin: xmin, at: now}
}

// trim drops expired entries, then arbitrary ones (map order) down to 3/4
// of max: at the cap the oldest are mostly expired anyway.
func (c *seenSessions) trim(now time.Time) {
	for k, e := range c.m {
		if now.Sub(e.at) > c.ttl {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) <= c.max*3/4 {
			break
		}
		delete(c.m, k)
	}
}

// fromSeen runs fn on the session as this process last wrote it (and its
// checkout, decoded, and its request when remembered: nil otherwise), when
// there is one, unexpired, that usable says this request would end in a
// write fenced on its xmin. done is false when the request is to be
// answered from a fresh read instead: nothing usable was remembered, or fn
// answered errReread.
func (s *Service) fromSeen(ctx context.Context, tid uuid.UUID, id string, usable func(session) bool,
	fn func(sess session, c, request *bcp.Checkout, xmin *int64) (*checkoutv1.CheckoutResult, error)) (res *checkoutv1.CheckoutResult, done bool, err error) {
	e, ok := s.seen.take(tid, id, s.now())
	sess, c, xmin := e.sess, e.checkout, e.xmin
	if !ok || !s.now().Before(sess.ExpiresAt) || !usable(sess) {
		s.seen.misses.Add(1)
		return nil, false, nil
	}
	s.seen.hits.Add(1)
	if err := s.checkSeen(ctx, sess, c, e.request, xmin); err != nil {
		return nil, true, err
	}
	if c == nil {
		if c, err = decodeState(sess); err != nil {
			return nil, true, err
		}
	}
	if res, err = fn(sess, c, e.request, &xmin); errors.Is(err, errReread) {
		s.seen.rereads.Add(1)
		return nil, false, nil
	}
	return res, true, err
}

// checkSeen (tests only: Hooks.CheckSeen) compares a remembered session
// with its row, and its remembered checkout and request with the state
// and request it was written as. A row changed since (another xmin) is the
// fence's business; the same xmin with different columns is a bug here.
func (s *Service) checkSeen(ctx context.Context, sess session, c, request *bcp.Checkout, xmin int64) error {
	if s.hooks == nil || !s.hooks.CheckSeen {
		return nil
	}
	if c != nil {
		// Not bcp.EncodeCheckout: a check, not the request's work.
		if b, err := json.Marshal(c); err != nil || !bytes.Equal(b, sess.State) {
			return apperr.New(apperr.KindInternal, "internal", "checkout %s: the remembered checkout is not the state it was written as (%v):\nremembered %s\nstate      %s", sess.ID, err, b, sess.State)
		}
	}
	if request != nil {
		if b, err := json.Marshal(request); err != nil || !bytes.Equal(b, sess.Request) {
			return apperr.New(apperr.KindInternal, "internal", "checkout %s: the remembered request is not the one it was written as (%v):\nremembered %s\nrequest    %s", sess.ID, err, b, sess.Request)
		}
	}
	var row session
	var x int64
	err := pgstore.InTenant(ctx, s.store.pool, func(tx pgx.Tx) error {
		var err error
		if row, err = checkoutdb.New(tx).GetSession(ctx, checkoutdb.GetSessionParams{TenantID: sess.TenantID, ID: sess.ID}); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT xmin::text::bigint FROM checkout.sessions WHERE tenant_id = $1 AND id = $2`, sess.TenantID, sess.ID).Scan(&x)
	})
	if err != nil || x != xmin {
		return err
	}
	// Timestamps the writes set with now(): no decision reads them.
	row.CreatedAt, row.UpdatedAt = sess.CreatedAt, sess.UpdatedAt
	if row.ExpiresAt.Equal(sess.ExpiresAt) {
		row.ExpiresAt = sess.ExpiresAt
	}
	if !reflect.DeepEqual(row, sess) {
		return apperr.New(apperr.KindInternal, "internal", "checkout %s: the remembered session differs from its row at xmin %d:\nremembered %+v\nrow        %+v", sess.ID, xmin, sess, row)
	}
	return nil
}

// Metrics registers the checkout service's metrics: what remembered
// sessions saved, and the completions in flight (inflight.go).
func (s *Service) Metrics(reg prometheus.Registerer) {
	for outcome, c := range map[string]*atomic.Int64{"hit": &s.seen.hits, "miss": &s.seen.misses, "reread": &s.seen.rereads} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "bcp_checkout_remembered_sessions_total", ConstLabels: prometheus.Labels{"outcome": outcome},
			Help: "Updates and completions by whether they started from the session as this process last wrote it (hit), read it (miss), or read it after starting from it (reread: the row had changed, or the outcome is answered from a fresh read).",
		}, func() float64 { return float64(c.Load()) }))
	}
	reg.MustRegister(inFlight{s.store}) // inflight.go
}
