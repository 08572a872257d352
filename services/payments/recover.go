package payments

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/lease"
	"github.com/bcpdev/bcp/internal/paymentevents"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// Recovery in seconds (issue 32). An attempt's insert records the process
// incarnation that goes on to charge the card or create the Pix charge
// (owner, internal/lease); the attempt's next write clears it. Every
// process hosting the service looks at start-up and then every
// RecoverEvery for pending attempts whose owner is gone (its process
// died: its PostgreSQL session ended), takes each over (TakeOverAttempt)
// and finishes what the dead process was doing:
//   - a card charge: the sale is decided at the processor by the
//     attempt's key (resolveCard: Cancel stops it for good unless it was
//     approved, which then succeeds): never charged twice, never left
//     approved without an attempt that knows it;
//   - a Pix charge's creation: resumed (PUT /cob/{txid} is idempotent at
//     the PSP), so the buyer gets the Pix to pay.
//
// Either way the checkout service is told (paymentevents), and settles
// the checkout at once. An attempt whose start failed while its process
// lives (the card processor did not answer) is handed to this process's
// own recovery at once (recoverSoon): waiting for the resolve sweep's
// two minutes left a buyer charged with no order that long.

// recoverSoon gives this process's recovery an attempt it owns whose
// start failed without an outcome (nothing without a holder).
func (s *Service) recoverSoon(id string) {
	if s.holder != nil && s.recovering != nil {
		s.recovering.add(id)
	}
}

// RecoverEvery is how often the recovery looks for abandoned attempts.
const RecoverEvery = 500 * time.Millisecond

// UseHolder names this process incarnation as the owner of the attempts
// it starts (nil: none, and no recovery).
func (s *Service) UseHolder(h *lease.Holder) {
	s.holder = h
	s.recovering = &recovering{m: map[string]retryAt{}}
}

// RunRecovery recovers at once, then every RecoverEvery until ctx ends.
func (s *Service) RunRecovery(ctx context.Context, log *slog.Logger) {
	if s.holder == nil {
		return
	}
	if log == nil {
		log = s.log
	}
	t := time.NewTicker(RecoverEvery)
	defer t.Stop()
	failing := false // logged once, not every pass (the database is down)
	for {
		n, err := s.Recover(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.WarnContext(ctx, "payments: recovery could not look for abandoned attempts; trying every pass", "err", err.Error())
		case err == nil && n > 0:
			log.InfoContext(ctx, "payments: recovered abandoned attempts", "attempts", n)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Recover finishes the abandoned attempts it finds now and says how many.
func (s *Service) Recover(ctx context.Context) (int, error) {
	if s.holder == nil {
		return 0, nil
	}
	var owned []paymentsdb.ListOwnedAttemptsRow
	err := pgstore.InPaymentsSweep(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		owned, err = paymentsdb.New(tx).ListOwnedAttempts(ctx, jobs.SweepBatch)
		return err
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
	// Side by side: each waits on the processor or the PSP.
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, recoverParallel)
	for _, o := range owned {
		mine := s.holder.Owns(o.Owner)
		// This process's own attempts are its requests' (or, once taken
		// over, this recovery's to try again).
		if (!mine && !gone[o.Owner]) || (mine && !s.recovering.due(o.ID)) {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			tctx := tenancy.With(ctx, o.TenantID)
			if !mine {
				took, err := s.takeOver(tctx, o.ID, o.Owner)
				if err != nil {
					s.log.WarnContext(ctx, "payments: recovery could not take over an attempt", "attempt_id", o.ID, "err", err.Error())
					return
				}
				if !took {
					return // written meanwhile, or another process took it
				}
				s.recovering.add(o.ID)
			}
			err := retryNow(ctx, func() error { return s.recoverAttempt(tctx, o.ID) })
			s.recovering.done(o.ID, err == nil)
			if err != nil {
				s.log.WarnContext(ctx, "payments: recovery could not finish an attempt; trying again", "attempt_id", o.ID, "owner", o.Owner, "err", err.Error())
				return
			}
			n.Add(1)
		}()
	}
	wg.Wait()
	return int(n.Load()), goneErr
}

// recoverParallel bounds the attempts one recovery pass finishes at once.
const recoverParallel = 16

// ownerArg is this incarnation as an attempt's owner (nil: no recovery).
func (s *Service) ownerArg() *string {
	if s.holder == nil {
		return nil
	}
	id := s.holder.ID()
	return &id
}

func (s *Service) takeOver(ctx context.Context, id, was string) (bool, error) {
	var n int64
	me := s.holder.ID()
	err := pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		tid, _ := tenancy.From(ctx)
		n, err = paymentsdb.New(q).TakeOverAttempt(ctx, paymentsdb.TakeOverAttemptParams{Owner: &me, TenantID: tid, ID: id, Was: &was})
		return err
	})
	return n == 1, err
}

// recoverAttempt finishes the start of one pending attempt whose process
// is gone, and tells the checkout service.
func (s *Service) recoverAttempt(ctx context.Context, id string) error {
	a, err := s.getAttempt(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Status != stPending {
		return nil // written meanwhile
	}
	if a.Txid == nil {
		// resolveCard announces what it decides.
		return s.resolveCard(ctx, id)
	}
	if compactJSON(a.Display) == "{}" {
		h, err := s.handlerOf(ctx, a)
		if err != nil {
			return err
		}
		if h == nil {
			a, err = s.failPending(ctx, a.ID, failed("O handler de pagamento %q foi removido desta loja.", a.HandlerID), false)
		} else if psp, chave, perr := s.pspForStart(ctx, *h, a.BaseUrl); perr != nil {
			if !unusable(perr) {
				return perr
			}
			a, err = s.failPending(ctx, a.ID, failed("O Pix não pôde ser gerado agora; tente novamente."), false)
		} else {
			a, err = s.createCharge(ctx, a, psp, chave)
		}
		if err != nil {
			return err
		}
	}
	if s.jobs == nil {
		return errNoJobs
	}
	_, err = s.jobs.Insert(ctx, paymentevents.AttemptChanged{TenantID: a.TenantID, CheckoutID: a.CheckoutID, AttemptID: a.ID}, nil)
	return err
}

// retryNow runs try, and again at once (a few times, 50 ms, 100 ms,
// 200 ms apart) while it fails: a processor's or PSP's failures are
// mostly one call's, and waiting for the next pass would add seconds to
// a recovery that is meant to take one.
func retryNow(ctx context.Context, try func() error) error {
	err := try()
	for pause := 50 * time.Millisecond; err != nil && pause <= 200*time.Millisecond && ctx.Err() == nil; pause *= 2 {
		time.Sleep(pause)
		err = try()
	}
	return err
}

// recovering is the attempts this process's recovery took over and has
// not finished, with when to try each again.
type recovering struct {
	mu sync.Mutex
	m  map[string]retryAt
}

type retryAt struct {
	next  time.Time
	delay time.Duration
}

func (r *recovering) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[id]; !ok {
		r.m[id] = retryAt{}
	}
}

// due: taken over by this recovery and due for another try.
func (r *recovering) due(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[id]
	return ok && !time.Now().Before(e.next)
}

// done records a try: forgotten once it succeeded, else tried again after
// RecoverEvery, doubling up to a minute.
func (r *recovering) done(id string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		delete(r.m, id)
		return
	}
	e := r.m[id]
	e.delay = min(max(2*e.delay, RecoverEvery), time.Minute)
	e.next = time.Now().Add(e.delay)
	r.m[id] = e
}
