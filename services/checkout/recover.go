package checkout

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/lease"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Recovery in seconds (issue 32). A completion's claim and a close's
// stock release record the process incarnation doing them (settle_owner,
// internal/lease). Every process hosting the service looks at start-up
// and then every RecoverEvery for such work that nobody is doing any
// more, and finishes it:
//   - work whose owner is gone (the process died: its PostgreSQL session
//     ended) is taken over (TakeOverSession: one process does it, and if
//     that one dies too the next takes it over);
//   - this process's own work that no request of it is doing any more
//     (the request failed half-way: the database went away, the caller
//     did) is finished too.
//
// A completion is settled from the payments service's record exactly as
// the settle sweep would (an attempt that service never saw is stopped
// for good, so a late StartPayment charges nothing), and its idempotency
// key is answered with the outcome (complete_key): a retry with the key
// learns it instead of request_in_flight. One whose payment is still
// being decided (a card charge in flight, its process gone too: the
// payments service's own recovery asks the processor) is left to the
// payments service's news and the settle sweep. A close's stock goes back.
// The settle sweep (settle_after, a minute after the claim) stays the
// backstop for what has no owner.

// RecoverEvery is how often the recovery looks for abandoned work.
const RecoverEvery = 500 * time.Millisecond

// UseHolder names this process incarnation as the owner of the work the
// service starts (nil: none, and no recovery).
func (s *Service) UseHolder(h *lease.Holder) { s.holder = h }

// RunRecovery recovers at once, then every RecoverEvery until ctx ends.
func (s *Service) RunRecovery(ctx context.Context, log *slog.Logger) {
	if s.holder == nil {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(RecoverEvery)
	defer t.Stop()
	failing := false // logged once, not every pass (the database is down)
	for {
		n, err := s.Recover(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.WarnContext(ctx, "checkout: recovery could not look for abandoned work; trying every pass", "err", err)
		case err == nil && n > 0:
			log.InfoContext(ctx, "checkout: recovered abandoned work", "sessions", n)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Recover finishes the abandoned work it finds now and says how many
// sessions it finished.
func (s *Service) Recover(ctx context.Context) (int, error) {
	if s.holder == nil {
		return 0, nil
	}
	owned, err := sweepList(ctx, s.store, func(q *checkoutdb.Queries) ([]checkoutdb.ListOwnedSessionsRow, error) {
		return q.ListOwnedSessions(ctx, jobs.SweepBatch)
	})
	if err != nil {
		return 0, err
	}
	owners := make([]string, len(owned))
	for i, o := range owned {
		owners[i] = o.Owner
	}
	// Whose owners are gone; without an answer (the holder's session is
	// reconnecting), this process's own work is finished all the same.
	gone, goneErr := s.holder.Gone(ctx, owners)
	// Side by side: each settle waits on the payments service (which may
	// wait on the processor), and a dead process leaves many at once.
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, recoverParallel)
	for _, o := range owned {
		mine := s.holder.Owns(o.Owner)
		if (!mine && !gone[o.Owner]) || (mine && s.working.has(o.TenantID, o.ID)) || !s.retry.due(o.ID) || !s.mayRecover(o.ID) {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok, err := s.recoverOne(ctx, o, mine)
			s.retry.record(o.ID, err == nil)
			if err != nil {
				slog.WarnContext(ctx, "checkout: recovery could not finish a session; trying again", "checkout_id", o.ID, "status", o.Status, "owner", o.Owner, "err", err)
			}
			if ok {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load()), goneErr
}

// recoverParallel bounds the sessions one recovery pass finishes at once.
const recoverParallel = 16

// recoverOne finishes one session's abandoned work (its owner's, or this
// process's own when mine): ok when it did.
func (s *Service) recoverOne(ctx context.Context, o checkoutdb.ListOwnedSessionsRow, mine bool) (bool, error) {
	tctx := tenancy.With(ctx, o.TenantID)
	defer s.working.add(o.TenantID, o.ID)()
	if !mine {
		took, err := s.store.takeOver(tctx, o.ID, o.Owner, s.holder.ID())
		if err != nil || !took {
			return false, err // finished meanwhile, or another process took it
		}
	}
	if o.Status == bcp.StatusCanceled {
		return true, s.releaseClosed(tctx, o.ID)
	}
	if o.PaymentAttemptID == nil {
		return false, errors.New("a completion in progress without an attempt") // never written
	}
	// Again at once while it fails (a few times, 50 ms, 100 ms, 200 ms
	// apart): the payments service's failures are mostly one call's (the
	// processor's), and the next pass would add a second and more.
	res, err := s.settle(tctx, o.ID, *o.PaymentAttemptID, true, nil)
	for pause := 50 * time.Millisecond; err != nil && pause <= 200*time.Millisecond && ctx.Err() == nil; pause *= 2 {
		time.Sleep(pause)
		res, err = s.settle(tctx, o.ID, *o.PaymentAttemptID, true, nil)
	}
	if err != nil {
		return false, err
	}
	// Settled, or still waiting for the payments service (its news, or
	// the settle sweep a little later, takes it from here): either way
	// nobody owns the session any more.
	var next *time.Time
	if res.GetStatus() == bcp.StatusCompleteInProgress {
		t := s.now().Add(settleRetry)
		next = &t
	}
	return true, s.store.settleAgain(tctx, o.ID, *o.PaymentAttemptID, next)
}

// workingSet is the sessions this process's requests are working on.
type workingSet struct {
	mu sync.Mutex
	n  map[seenKey]int
}

func newWorkingSet() *workingSet { return &workingSet{n: map[seenKey]int{}} }

// add counts a request working on session id until the returned func runs.
func (w *workingSet) add(tenant uuid.UUID, id string) func() {
	k := seenKey{tenant, id}
	w.mu.Lock()
	w.n[k]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.n[k]--; w.n[k] <= 0 {
			delete(w.n, k)
		}
		w.mu.Unlock()
	}
}

func (w *workingSet) has(tenant uuid.UUID, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[seenKey{tenant, id}] > 0
}

// backoff spaces the recovery's tries at an item that failed: from
// RecoverEvery, doubling up to a minute; forgotten once it succeeds.
type backoff struct {
	mu sync.Mutex
	m  map[string]backoffEntry
}

type backoffEntry struct {
	next  time.Time
	delay time.Duration
}

func newBackoff() *backoff { return &backoff{m: map[string]backoffEntry{}} }

func (b *backoff) due(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[id]
	return !ok || !time.Now().Before(e.next)
}

func (b *backoff) record(id string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		delete(b.m, id)
		return
	}
	e := b.m[id]
	e.delay = min(max(2*e.delay, RecoverEvery), time.Minute)
	e.next = time.Now().Add(e.delay)
	b.m[id] = e
	if len(b.m) > 10000 { // bounded: a forgotten entry only retries sooner
		for k := range b.m {
			delete(b.m, k)
			break
		}
	}
}
