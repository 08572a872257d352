package checkout_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/protocol/bcp"
)

// Update re-prices a modifiable checkout exactly and leaves any other one
// as it is, answering it with checkout_not_modifiable at $.status.
func TestUpdateRules(t *testing.T) {
	e := newEnv(t)

	t.Run("a new quantity is re-priced", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		got, err := e.update(c.ID, e.readyBody(c, 3))
		if err != nil {
			t.Fatal(err)
		}
		// 3 × 5990 + PAC 1500.
		want := map[string]int64{bcp.TotalSubtotal: 17970, bcp.TotalFulfillment: 1500, bcp.TotalTotal: 19470}
		if got.Status != bcp.StatusReadyForComplete || len(got.LineItems) != 1 || got.LineItems[0].ID != c.LineItems[0].ID || got.LineItems[0].Quantity != 3 ||
			got.LineItems[0].Item.Price != 5990 || len(totals(got)) != len(want) {
			t.Fatalf("update: %s %+v %v", got.Status, got.LineItems, totals(got))
		}
		for k, v := range want {
			if totals(got)[k] != v {
				t.Errorf("total %s = %d, want %d", k, totals(got)[k], v)
			}
		}
		if n := e.sql(`SELECT total::int FROM checkout.sessions WHERE id = $1`, c.ID); n != 19470 {
			t.Errorf("stored total %d", n)
		}
		// A line the agent does not echo by id gets the next free one.
		body := e.readyBody(c, 1)
		body["line_items"] = append(body["line_items"].([]any), map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1})
		got, err = e.update(c.ID, body)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.LineItems) != 2 || got.LineItems[0].ID != c.LineItems[0].ID || got.LineItems[1].ID != "li_2" || totals(got)[bcp.TotalSubtotal] != 11980 {
			t.Errorf("two lines: %+v %v", got.LineItems, totals(got))
		}
		// li_2 is not in the fulfillment method: it says so.
		if !equalStrings(msgs(got), []string{"error missing recoverable $.line_items[1]"}) || got.Status != bcp.StatusIncomplete {
			t.Errorf("uncovered line: %s %v", got.Status, msgs(got))
		}
	})

	notModifiable := func(t *testing.T, id, status, content string) {
		t.Helper()
		before := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, id)
		got, err := e.update(id, map[string]any{"line_items": shirts(5), "buyer": map[string]any{"email": "outro@example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != status || len(got.Messages) == 0 {
			t.Fatalf("update answered %s %v, want %s", got.Status, msgs(got), status)
		}
		m := got.Messages[0]
		if m.Type != bcp.MessageError || m.Code != bcp.CodeCheckoutNotModifiable || m.Severity != bcp.SeverityRecoverable || m.Path != "$.status" || m.Content != content {
			t.Errorf("first message %+v", m)
		}
		if got.LineItems[0].Quantity != 2 || got.Buyer.Email != "rui@example.com" {
			t.Errorf("the answer shows the update: %+v %+v", got.LineItems, got.Buyer)
		}
		if after := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, id); after != before {
			t.Errorf("version %d → %d: the refused update wrote", before, after)
		}
		if stored := e.get(id); hasMessage(stored, bcp.CodeCheckoutNotModifiable) || stored.Status != status {
			t.Errorf("stored: %s %v", stored.Status, msgs(stored))
		}
	}
	t.Run("complete_in_progress", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, e.pix()); got.Status != bcp.StatusCompleteInProgress {
			t.Fatalf("Pix: %s", got.Status)
		}
		notModifiable(t, c.ID, bcp.StatusCompleteInProgress,
			"O pagamento deste checkout está em andamento; aguarde o resultado com get_checkout antes de alterá-lo.")
	})
	t.Run("completed", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242")); got.Status != bcp.StatusCompleted {
			t.Fatalf("card: %s", got.Status)
		}
		notModifiable(t, c.ID, bcp.StatusCompleted, "Este checkout já foi concluído e não pode ser alterado.")
	})
	t.Run("canceled", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if _, err := e.cancel(c.ID); err != nil {
			t.Fatal(err)
		}
		notModifiable(t, c.ID, bcp.StatusCanceled, "Este checkout foi cancelado; inicie um novo.")
	})
	t.Run("past its expiry: closed first, then refused", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID)
		got, err := e.update(c.ID, e.readyBody(c, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bcp.StatusCanceled || !equalStrings(msgs(got), []string{"error checkout_not_modifiable recoverable $.status", "info expired"}) {
			t.Errorf("update of an expired checkout: %s %v", got.Status, msgs(got))
		}
		if got.LineItems[0].Quantity != 2 {
			t.Errorf("quantity %d: the update was applied", got.LineItems[0].Quantity)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		defer e.use(t)()
		_, err := e.update("chk_nope", map[string]any{"line_items": shirts(1)})
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	})
}
