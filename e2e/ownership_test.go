package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// A checkout belongs to the agent platform that created it, as orders
// do: another agent of the same merchant gets not_found for it on get,
// update, complete and cancel, over MCP and REST, and changes nothing.
func TestCheckoutsBelongToTheirAgent(t *testing.T) {
	const host = "dono.localhost"
	s := newShopper(t, 0, host)
	c := s.ready(host)
	otherProfile := strings.TrimSuffix(s.profile, "/agent.json") + "/outra-plataforma.json"
	other := &agent{t: t, s: agentSession(t, s.r, host, otherProfile), profile: otherProfile, v: s.v}
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	mcpOther := mcpDriver{agents: map[string]*agent{host: other}}
	restOther := restDriver{addr: s.r.PublicAddr, v: v, clients: map[string]*http.Client{host: restClient(t, s, host, otherProfile)}}
	update := map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}
	payment := map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument("tok_intruso_4242")}}}
	for _, d := range []driver{mcpOther, restOther} {
		for _, op := range []struct {
			name     string
			checkout map[string]any
			key      string
		}{
			{"get_checkout", nil, ""},
			{"update_checkout", update, ""},
			{"complete_checkout", payment, uuid.NewString()},
			{"cancel_checkout", nil, uuid.NewString()},
		} {
			// Exactly what an id that never existed gets: the error_response
			// with not_found at $.id, and nothing of the checkout.
			o := d.do(t, host, op.name, c.ID, op.checkout, op.key)
			missing := d.do(t, host, op.name, "chk_nao_existe", op.checkout, uuid.NewString())
			ucp, _ := o.body["ucp"].(map[string]any)
			if ucp["status"] != "error" || !strings.Contains(string(o.raw), `"code":"not_found"`) || strings.Contains(string(o.raw), "Camiseta") ||
				strings.Contains(string(o.raw), "rui@example.com") || o.httpStatus != missing.httpStatus {
				t.Errorf("%s %s of another agent's checkout: HTTP %d %s (an unknown id: HTTP %d)", d.name(), op.name, o.httpStatus, o.raw, missing.httpStatus)
			}
		}
	}
	// Untouched: still the owner's, ready, with no payment or order.
	_, got := s.agents[host].call("get_checkout", map[string]any{"id": c.ID})
	if got.Status != bcp.StatusReadyForComplete || got.Order != nil || len(got.LineItems) != 1 || got.LineItems[0].Quantity != 2 {
		t.Fatalf("the owner's checkout after another agent's calls: %s %+v", got.Status, got.LineItems)
	}
	if n := s.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID); n != 0 {
		t.Fatalf("another agent's complete started %d payments", n)
	}
	// Its order likewise: the orders service refuses another agent.
	done := s.complete(host, c.ID, uuid.NewString(), cardInstrument("tok_dono_4242"))
	if done.Order == nil {
		t.Fatalf("completion: %s %+v", done.Status, done.Messages)
	}
	for _, d := range []driver{mcpOther, restOther} {
		o := d.do(t, host, "get_order", done.Order.ID, nil, "")
		if !strings.Contains(string(o.raw), `"code":"not_found"`) || strings.Contains(string(o.raw), "Camiseta") {
			t.Errorf("%s get_order of another agent's order: %s", d.name(), o.raw)
		}
	}
	if _, err := s.agents[host].callErr("get_order", map[string]any{"id": done.Order.ID}); err != nil {
		t.Errorf("the owner's get_order: %v", err)
	}
}
