package checkout

import (
	"testing"

	"github.com/bcpdev/bcp/internal/payattempt"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Every transition of the table against every pair of statuses, written
// out so a change to the machine has to change this table too.
func TestMachineTable(t *testing.T) {
	I, E, R, P, C, X := bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete,
		bcp.StatusCompleteInProgress, bcp.StatusCompleted, bcp.StatusCanceled
	type pair = [2]string
	allowed := map[string]map[pair]bool{
		"build": {{"", I}: true, {"", E}: true, {"", R}: true, {I, I}: true, {I, E}: true, {I, R}: true, {E, I}: true, {E, E}: true, {E, R}: true,
			{R, I}: true, {R, E}: true, {R, R}: true},
		"refresh":  {{R, I}: true, {R, E}: true, {R, R}: true, {P, I}: true, {P, E}: true, {P, R}: true},
		"claim":    {{R, P}: true},
		"await":    {{P, P}: true},
		"pay":      {{P, C}: true, {E, C}: true},
		"escalate": {{P, E}: true},
		"reopen":   {{P, R}: true, {E, R}: true},
		"cancel":   {{I, X}: true, {E, X}: true, {R, X}: true, {P, X}: true},
		"expire":   {{I, X}: true, {E, X}: true, {R, X}: true},
	}
	if len(allowed) != len(machine) {
		t.Fatalf("the table has %d transitions, this test %d", len(machine), len(allowed))
	}
	all := []string{"", I, E, R, P, C, X}
	for name, ok := range allowed {
		for _, from := range all {
			for _, to := range all {
				if got := move(name, from, to) == nil; got != ok[pair{from, to}] {
					t.Errorf("%s %q → %q: allowed=%v, want %v", name, from, to, got, ok[pair{from, to}])
				}
			}
		}
	}
	// No way back from the end, and no money without a claim.
	for name := range machine {
		for _, to := range all {
			if move(name, C, to) == nil || move(name, X, to) == nil {
				t.Errorf("%s leaves a terminal status", name)
			}
		}
		if name != "claim" && move(name, R, P) == nil {
			t.Errorf("%s reaches complete_in_progress without a claim", name)
		}
	}
	if move("unknown", I, I) == nil {
		t.Error("an unknown transition is allowed")
	}
	for _, s := range all[1:] {
		if bcp.Terminal(s) != (s == C || s == X) {
			t.Errorf("bcp.Terminal(%s) wrong", s)
		}
		if bcp.Open(s) != (s == I || s == E || s == R) {
			t.Errorf("bcp.Open(%s) wrong", s)
		}
	}
}

// Every attempt status has an outcome, and only the paid ones pay.
func TestOutcomes(t *testing.T) {
	for v, name := range paymentsv1.AttemptStatus_name {
		st := paymentsv1.AttemptStatus(v)
		if st == paymentsv1.AttemptStatus_ATTEMPT_STATUS_UNSPECIFIED {
			continue
		}
		o, ok := outcomes[st]
		if !ok {
			t.Errorf("%s has no outcome", name)
		}
		if _, ok := machine[o]; !ok {
			t.Errorf("%s → %q is not a transition", name, o)
		}
		want := st == paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED || st == paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED ||
			st == paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED
		// Only the statuses that moved money by the one rule (settle and
		// close decide by it too) complete the checkout.
		if payattempt.MovedMoneyProto(st) != want || (o == "pay") != want {
			t.Errorf("%s: MovedMoneyProto = %v, outcome %q; want moved money %v", name, payattempt.MovedMoneyProto(st), o, want)
		}
	}
}

func TestStatusFromMessages(t *testing.T) {
	cases := []struct {
		name string
		msgs []bcp.Message
		want string
	}{
		{"clean", nil, bcp.StatusReadyForComplete},
		{"warnings and info only", []bcp.Message{bcp.Warning("quantity_adjusted", "$.line_items[0].quantity", "x"), bcp.Info("free_shipping", "", "y")}, bcp.StatusReadyForComplete},
		{"recoverable error", []bcp.Message{bcp.Error("missing", bcp.SeverityRecoverable, "$.buyer.email", "x")}, bcp.StatusIncomplete},
		{"buyer input escalates", []bcp.Message{bcp.Error("missing", bcp.SeverityRecoverable, "$.buyer.email", "x"), bcp.Error("missing", bcp.SeverityRequiresBuyerInput, "$", "y")}, bcp.StatusRequiresEscalation},
		{"buyer review escalates", []bcp.Message{bcp.Error("high_value_order", bcp.SeverityRequiresBuyerReview, "$", "y")}, bcp.StatusRequiresEscalation},
	}
	for _, c := range cases {
		if got := statusFor(c.msgs); got != c.want {
			t.Errorf("%s: status %s, want %s", c.name, got, c.want)
		}
	}
}

func TestAssignLineIDs(t *testing.T) {
	prev := &bcp.Checkout{LineItems: []bcp.LineItem{{ID: "li_1"}, {ID: "li_2"}}}
	in := []bcp.LineItem{
		{ID: "li_2", Item: bcp.Item{ID: "a", Title: "client title ignored", Price: 1}, Quantity: 1},
		{ID: "li_9", Item: bcp.Item{ID: "b"}, Quantity: 2}, // unknown id: reassigned
		{ID: "li_2", Item: bcp.Item{ID: "c"}, Quantity: 3}, // duplicate: reassigned
		{Item: bcp.Item{ID: "d"}, Quantity: 2_000_000},     // over the cap
	}
	out, msgs := assignLineIDs(in, prev)
	got := []string{out[0].ID, out[1].ID, out[2].ID, out[3].ID}
	want := []string{"li_2", "li_3", "li_4", "li_5"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids = %v, want %v", got, want)
		}
	}
	if out[0].Item.Title != "" || out[0].Item.Price != 0 {
		t.Errorf("agent-sent item fields must be dropped: %+v", out[0].Item)
	}
	if out[3].Quantity != maxQuantity || len(msgs) != 1 || msgs[0].Path != "$.line_items[3].quantity" {
		t.Errorf("quantity cap: %d, messages %+v", out[3].Quantity, msgs)
	}
	fresh, _ := assignLineIDs([]bcp.LineItem{{ID: "li_7", Item: bcp.Item{ID: "x"}, Quantity: 1}, {Item: bcp.Item{ID: "y"}, Quantity: 1}}, nil)
	if fresh[0].ID != "li_1" || fresh[1].ID != "li_2" {
		t.Errorf("create ids = %s, %s; want li_1, li_2 (agent ids are not ours to keep on create)", fresh[0].ID, fresh[1].ID)
	}
}

func TestConsentAdvertisesCompleteSet(t *testing.T) {
	yes := true
	b, msgs := applyConsent(&bcp.Buyer{Consent: &bcp.Consent{Marketing: &yes, SaleOfData: &yes}}, nil, []string{"marketing", "analytics"}, nil)
	c := b.Consent
	if c.Marketing == nil || !*c.Marketing || c.Analytics == nil || *c.Analytics || c.SaleOfData != nil || c.Preferences != nil {
		t.Fatalf("consent = %+v; want marketing true, analytics false, others absent", c)
	}
	if len(msgs) != 1 || msgs[0].Code != bcp.CodeMissingConsentData {
		t.Fatalf("marketing consent without contact data: messages %+v", msgs)
	}
	// An update that omits consent keeps what the buyer stated before.
	prev := &bcp.Checkout{Buyer: b}
	b2, _ := applyConsent(&bcp.Buyer{Email: "a@b.com"}, prev, []string{"marketing", "analytics"}, nil)
	if !*b2.Consent.Marketing || *b2.Consent.Analytics {
		t.Fatalf("consent after update without consent = %+v", b2.Consent)
	}
}
