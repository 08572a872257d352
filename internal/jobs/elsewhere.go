package jobs

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
)

// AddWorker registers worker when this process hosts its service
// (hosted), and a stand-in for its job kind (Elsewhere) otherwise. Each
// service's AddWorkers lists its kinds once through it, and every process
// with a job client registers every service's (platform.Start).
//
// Why every kind everywhere: river's leader alone rescues stuck jobs (a
// job left running by a process that died, SIGKILL or a lost host), and it
// discards, for good, one whose kind it has no worker for. With one role
// per process the leader may be a checkout process and the job an order
// webhook an orders process was delivering when it was killed: the webhook
// was never delivered (found by bcpchaos --ha). With the stand-in the
// leader hands the job back to its queue instead, where a process hosting
// its service takes it.
func AddWorker[T river.JobArgs](w *river.Workers, worker river.Worker[T], hosted bool) {
	if hosted {
		river.AddWorker(w, worker)
		return
	}
	river.AddWorker[T](w, Elsewhere[T]{})
}

// Elsewhere stands in for a job kind of a service this process does not
// host: the kind's queue is not worked here, so Work never runs but for a
// job left in the default queue from before the queues existed, which it
// fails so that river retries it (as it did an unknown kind). For a
// rescue, river's default retry policy and job timeout apply (no job's own
// timeout exceeds RescueStuckJobsAfter, so none is rescued while working).
type Elsewhere[T river.JobArgs] struct{ river.WorkerDefaults[T] }

func (Elsewhere[T]) Work(_ context.Context, job *river.Job[T]) error {
	return fmt.Errorf("jobs: %s is worked by the processes hosting its service, not this one", job.Kind)
}
