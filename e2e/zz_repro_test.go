package e2e

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

func TestReproCancelVsComplete(t *testing.T) {
	host := "repro.localhost"
	s := newShopper(t, 0, host)
	bad := 0
	for round := 0; round < 30; round++ {
		c := s.ready(host)
		var wg sync.WaitGroup
		for i := 0; i < 5; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				args := completeArgs(c.ID, uuid.NewString(), cardInstrument("tok_race_4242"))
				args["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": s.profile}
				_, _ = s.agents[host].callErr("complete_checkout", args)
			}()
			go func() {
				defer wg.Done()
				args := map[string]any{"id": c.ID, "meta": map[string]any{"ucp-agent": map[string]any{"profile": s.profile}, "idempotency-key": uuid.NewString()}}
				_, _ = s.agents[host].callErr("cancel_checkout", args)
			}()
		}
		wg.Wait()
		st := s.sql(`SELECT CASE status WHEN 'canceled' THEN 1 WHEN 'completed' THEN 2 ELSE 0 END FROM checkout.sessions WHERE id = $1`, c.ID)
		orders := s.sql(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, c.ID)
		charges := s.sql(`SELECT count(*) FROM payments.sim_card_charges ch JOIN payments.attempts a ON a.tenant_id = ch.tenant_id AND a.id = ch.idempotency_key WHERE a.checkout_id = $1 AND ch.status = 'approved' AND ch.refunded < ch.amount`, c.ID)
		t.Logf("round %d: status %d orders %d unrefunded charges %d", round, st, orders, charges)
		if (st == 1 && (orders != 0 || charges != 0)) || (st == 2 && (orders != 1 || charges != 1)) {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d bad rounds", bad)
	}
}
