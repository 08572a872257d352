package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// SweepEvery is how often the periodic sweeps run by default (checkout
// expiry and settle, card resolve): they replace a durable job per
// checkout, completion or card attempt with one job that finds what is
// due.
const SweepEvery = 15 * time.Second

// Sweep batches: a sweep lists again while a listing comes back full, up
// to SweepBatches listings (the next sweep takes the rest).
const (
	SweepBatch   = 500
	SweepBatches = 20
)

// Periodic is the periodic job that inserts args every interval (SweepEvery
// when every is not positive) and once at start. river runs periodic jobs
// on the elected leader only, so one sweep runs at a time across
// processes; one attempt each, since the next comes round anyway.
func Periodic(every time.Duration, args river.JobArgs) *river.PeriodicJob {
	if every <= 0 {
		every = SweepEvery
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
		return args, &river.InsertOpts{MaxAttempts: 1}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// Sweep lists due items in batches of SweepBatch and acts on each. act
// reports whether it moved the item; an error concerns that item only
// (failed gets it, e.g. to log it) and the sweep goes on. A failing
// listing ends the sweep with its error. It says how many items moved.
func Sweep[T any](ctx context.Context, list func(ctx context.Context) ([]T, error), act func(T) (bool, error), failed func(T, error)) (int, error) {
	moved := 0
	for range SweepBatches {
		due, err := list(ctx)
		if err != nil {
			return moved, err
		}
		nfailed := 0
		for _, d := range due {
			ok, err := act(d)
			switch {
			case err != nil:
				nfailed++
				failed(d, err)
			case ok:
				moved++
			}
		}
		if len(due) < SweepBatch || nfailed == len(due) || ctx.Err() != nil {
			break
		}
	}
	return moved, nil //nolint:nilerr // an item's error is that item's (failed had it); the sweep succeeded
}
