// Package hooktest holds or crashes the checkout's money path at a chosen
// step (checkout.Hooks), so tests force an interleaving instead of hoping
// for one.
package hooktest

import (
	"context"
	"errors"
	"sync"

	"github.com/bcpdev/bcp/services/checkout"
)

// ErrCrash is what a crashed step returns: the request ends there, as if
// its process had died.
var ErrCrash = errors.New("hooktest: the process died here")

// Gate acts at one step of one checkout, for the first request that
// reaches it.
type Gate struct {
	mu      sync.Mutex
	id      string
	step    checkout.Step
	crash   bool
	reached chan struct{}
	release chan struct{}
	// unrecovered are the checkouts the process's recovery leaves alone.
	unrecovered map[string]bool
}

// Hooks are the checkout hooks that consult the gate.
// They also check every remembered session against its row.
func (g *Gate) Hooks() *checkout.Hooks {
	return &checkout.Hooks{At: g.at, CheckSeen: true, Recover: g.mayRecover}
}

// HoldRecovery keeps the process's recovery (its loop of RecoverEvery)
// away from checkout id until ReleaseRecovery: what a crash leaves is
// then finished by whatever the test runs (the settle sweep by hand, a
// settle on the payments service's news), not by whichever gets there
// first.
func (g *Gate) HoldRecovery(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unrecovered == nil {
		g.unrecovered = map[string]bool{}
	}
	g.unrecovered[id] = true
}

// ReleaseRecovery lets the recovery finish checkout id's work again (on
// its next pass).
func (g *Gate) ReleaseRecovery(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.unrecovered, id)
}

func (g *Gate) mayRecover(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.unrecovered[id]
}

// Hold makes the first request reaching step for checkout id wait there
// until Release; Reached is closed when it arrives.
func (g *Gate) Hold(id string, step checkout.Step) { g.arm(id, step, false) }

// Crash makes the first request reaching step for checkout id end there.
func (g *Gate) Crash(id string, step checkout.Step) { g.arm(id, step, true) }

func (g *Gate) arm(id string, step checkout.Step, crash bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id, g.step, g.crash = id, step, crash
	g.reached, g.release = make(chan struct{}), make(chan struct{})
	if crash {
		close(g.release)
	}
}

// Reached is closed once a request is held (or crashed) at the step.
func (g *Gate) Reached() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reached
}

// Release lets the held request go on.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// Disarm forgets a step nobody reached.
func (g *Gate) Disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id = ""
}

func (g *Gate) at(_ context.Context, step checkout.Step, id string) error {
	g.mu.Lock()
	if id != g.id || step != g.step {
		g.mu.Unlock()
		return nil
	}
	g.id = "" // once
	reached, release, crash := g.reached, g.release, g.crash
	g.mu.Unlock()
	close(reached)
	<-release
	if crash {
		return ErrCrash
	}
	return nil
}
