package checkout

import (
	"testing"

	"github.com/bcpdev/bcp/protocol/bcp"
)

// Every pair of statuses, allowed or forbidden, written out so a change to
// the machine has to change this table too.
func TestStatusMachine(t *testing.T) {
	I, E, R, P, C, X := bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete,
		bcp.StatusCompleteInProgress, bcp.StatusCompleted, bcp.StatusCanceled
	allowed := map[[2]string]bool{
		{I, I}: true, {I, E}: true, {I, R}: true, {I, X}: true,
		{E, I}: true, {E, E}: true, {E, R}: true, {E, C}: true, {E, X}: true,
		{R, I}: true, {R, E}: true, {R, R}: true, {R, P}: true, {R, C}: true, {R, X}: true,
		{P, C}: true, {P, R}: true, {P, I}: true, {P, E}: true, {P, X}: true,
	}
	all := []string{I, E, R, P, C, X}
	for _, from := range all {
		for _, to := range all {
			if got := canTransition(from, to); got != allowed[[2]string{from, to}] {
				t.Errorf("%s → %s: allowed=%v, want %v", from, to, got, allowed[[2]string{from, to}])
			}
		}
	}
	// Forbidden highlights: no way back from the end, no completion
	// without passing through ready_for_complete.
	for _, bad := range [][2]string{{C, X}, {X, I}, {C, I}, {I, C}, {I, P}, {E, P}, {X, C}} {
		if canTransition(bad[0], bad[1]) {
			t.Errorf("%s → %s must be forbidden", bad[0], bad[1])
		}
	}
	for _, s := range all {
		if terminal(s) != (s == C || s == X) {
			t.Errorf("terminal(%s) wrong", s)
		}
		if modifiable(s) != (s == I || s == E || s == R) {
			t.Errorf("modifiable(%s) wrong", s)
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
