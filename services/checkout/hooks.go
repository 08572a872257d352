package checkout

import "context"

// Step names a point of the money path between two of its writes, where a
// process may die or another request may run.
type Step string

// The steps, in the order a completion and a cancel pass them.
const (
	// StepReady: a completion found the session ready and its total as
	// shown; nothing claimed yet (another completion, an update or a
	// cancel may still win the claim).
	StepReady Step = "ready"
	// StepClaimed: the session is complete_in_progress with its attempt;
	// no stock taken, nothing sent to the payments service.
	StepClaimed Step = "claimed"
	// StepReserved: the stock is taken; StartPayment not called yet.
	StepReserved Step = "reserved"
	// StepCharged: StartPayment answered (money may have moved); the
	// session is not settled yet.
	StepCharged Step = "charged"
	// StepOrdered: the order exists; the session is not completed yet.
	StepOrdered Step = "ordered"
	// StepStopped: a cancel or expiry has the attempt stopped for good
	// (CancelPayment answered); the session is not closed yet.
	StepStopped Step = "stopped"
	// StepClosed: the session is canceled; its stock is not released yet.
	StepClosed Step = "closed"
)

// Hooks let tests stand between two steps. At runs at each step: an error
// ends the request right there as if its process had died (nothing after
// it runs, the sweeps recover what it left), and blocking in it holds the
// request there while another one runs, which forces an interleaving
// instead of hoping for it.
type Hooks struct {
	At func(ctx context.Context, step Step, checkoutID string) error
	// CheckSeen compares every remembered session a request starts from
	// with its row (seen.go): the same xmin with different columns is a
	// write that forgot to mirror what it wrote, answered as an internal
	// error.
	CheckSeen bool
	// Recover, when set, is asked before this process's recovery
	// (recover.go) finishes a session's abandoned work: false leaves the
	// session to the settle sweep (or a later pass), so a test decides
	// whether the recovery acts instead of racing its loop.
	Recover func(checkoutID string) bool
}

// UseHooks installs test hooks (nil: none). Production never sets them.
func (s *Service) UseHooks(h *Hooks) { s.hooks = h }

func (s *Service) at(ctx context.Context, step Step, checkoutID string) error {
	if s.hooks == nil || s.hooks.At == nil {
		return nil
	}
	return s.hooks.At(ctx, step, checkoutID)
}

// mayRecover says whether the recovery may finish session id's work now.
func (s *Service) mayRecover(checkoutID string) bool {
	return s.hooks == nil || s.hooks.Recover == nil || s.hooks.Recover(checkoutID)
}
