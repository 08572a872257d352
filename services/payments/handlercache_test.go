package payments_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// A merchant's payment handlers are read from the registry once and then
// served from the cache; a change in the registry reaches the cache through
// the change stream (Run). Without the invalidation the cached handlers
// would live 5 minutes while the feed is connected, and the brand change
// below would not apply within the second it is given.
func TestHandlerCacheFollowsRegistry(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.svc.Run(ctx, quietLog())
	e.eventually(5*time.Second, "handler cache watched", func() bool { _, _, w := e.svc.HandlerCacheStats(); return w })

	_, misses0, _ := e.svc.HandlerCacheStats()
	for i, tok := range []string{"tok_a_4242", "tok_b_4242", "tok_c_4242"} {
		a := e.start(e.a, startReq(e.a, "chk_cache_"+tok, 1000+int64(i), cardInstrument(tokenCred(tok), "visa", "4242")))
		if a.GetStatus() != statusSucceeded {
			t.Fatalf("payment %d: %v %s", i, a.GetStatus(), a.GetFailureMessage())
		}
	}
	if _, misses, _ := e.svc.HandlerCacheStats(); misses-misses0 != 1 {
		t.Fatalf("three payments at one merchant read the registry %d times, want 1", misses-misses0)
	}

	// The merchant stops accepting visa.
	e.setHandler(e.a.id, &tenantsv1.PaymentHandler{Id: "cartao", Name: "com.example.vendor.delegate_payment", Position: 1,
		AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["elo"]}}]`, ConfigJson: `{}`, Environment: "sandbox"})
	const want = `A bandeira "visa" não é aceita por esta loja (aceitas: elo).`
	n := 0
	e.eventually(time.Second, "brand change reaches the cache", func() bool {
		n++
		a := e.start(e.a, startReq(e.a, fmt.Sprint("chk_cache_after_", n), 2000, cardInstrument(tokenCred(fmt.Sprint("tok_after", n, "_4242")), "visa", "4242")))
		return a.GetStatus() == statusFailed && a.GetFailureMessage() == want
	})
	// The other merchant's entry was left alone (and still accepts visa).
	a := e.start(e.b, startReq(e.b, "chk_cache_b", 3000, cardInstrument(tokenCred("tok_b2_4242"), "visa", "4242")))
	if a.GetStatus() != statusSucceeded {
		t.Fatalf("other merchant: %v %s", a.GetStatus(), a.GetFailureMessage())
	}
}
