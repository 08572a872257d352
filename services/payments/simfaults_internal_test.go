package payments

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bcpdev/bcp/services/payments/card"
)

func TestParseSimFaults(t *testing.T) {
	f, err := parseSimFaults(" timeout=0.25 , hang=150ms ")
	if err != nil || f.timeout != 0.25 || f.hang != 150*time.Millisecond {
		t.Fatalf("parse: %+v %v", f, err)
	}
	if f, err := parseSimFaults(""); f != nil || err != nil {
		t.Fatalf("empty spec: %+v %v", f, err)
	}
	for _, bad := range []string{"timeout", "timeout=2", "timeout=x", "hang=-1s", "slow=1"} {
		if _, err := parseSimFaults(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// countingProcessor stands for a card processor (the outside world).
type countingProcessor struct{ charges int }

func (p *countingProcessor) Charge(context.Context, card.ChargeRequest) (card.Charge, error) {
	p.charges++
	return card.Charge{ID: "ch_1", Status: card.StatusApproved, Amount: 100}, nil
}
func (p *countingProcessor) Refund(context.Context, string, string, int64) (card.Refund, error) {
	return card.Refund{}, nil
}
func (p *countingProcessor) Cancel(context.Context, card.CancelRequest) (card.Charge, error) {
	return card.Charge{}, nil
}

// Every faulted call fails after the hang; about half of them reached the
// processor first (the answer was lost), and a nil knob changes nothing.
func TestSimFaultsTimeout(t *testing.T) {
	f, _ := parseSimFaults("timeout=1,hang=1ms")
	inner := &countingProcessor{}
	proc := f.card(inner)
	const n = 400
	for range n {
		if _, err := proc.Charge(context.Background(), card.ChargeRequest{}); !errors.Is(err, errSimTimeout) {
			t.Fatalf("charge: %v, want the simulated timeout", err)
		}
	}
	if inner.charges < n/4 || inner.charges > 3*n/4 {
		t.Fatalf("%d of %d timed-out calls were applied, want about half", inner.charges, n)
	}
	if _, ok := proc.(card.Lookuper); !ok {
		t.Fatal("the faulted processor lost Lookup (the resolve job needs it)")
	}
	var none *simFaults
	if got := none.card(inner); got != card.Processor(inner) {
		t.Fatal("no faults configured: the processor must be returned as is")
	}
}
