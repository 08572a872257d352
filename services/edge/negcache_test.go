package edge

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// negFixture is an edge whose merchant "t1" has the fixture business
// profile's offer cached, and the fixture agent profile.
func negFixture(t testing.TB) (*mcpEdge, *agentprofile.Profile) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile("agentprofile/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	offer, err := agentprofile.OfferFromProfileJSON(read("business_profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	p, err := agentprofile.Parse("https://agente.example.com/p.json", read("agent_profile.json"), v, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := &mcpEdge{offers: map[string]agentprofile.BusinessOffer{"t1": offer}}
	return m, p
}

// wrapEachCall is what execute did before the negotiation was kept:
// negotiate, build the envelope, marshal it, splice it.
func wrapEachCall(m *mcpEdge, p *agentprofile.Profile, capability string, body []byte) ([]byte, error) {
	neg, err := agentprofile.Negotiate(m.offers["t1"], p)
	if err != nil {
		return nil, err
	}
	var handlers any = map[string]any{}
	switch {
	case capability == bcpnames.Order:
		handlers = nil
	case len(neg.PaymentHandlers) > 0:
		handlers = neg.PaymentHandlers
	}
	return m.wrap(body, envelope{Version: bcpnames.Version, Capabilities: neg.ResponseCapabilities(capability), PaymentHandlers: handlers})
}

func wrapKept(m *mcpEdge, p *agentprofile.Profile, capability string, body []byte) ([]byte, error) {
	neg, err := m.negotiate(context.Background(), "t1", p)
	if err != nil {
		return nil, err
	}
	env, err := m.responseEnvelope(neg, capability)
	if err != nil {
		return nil, err
	}
	return m.wrapEncoded(body, env)
}

// The kept negotiation answers byte for byte what negotiating on every
// call answered, for checkout and order responses, on a hit as on a miss;
// and a merchant change (offerGen) retires it.
func TestKeptNegotiationSameBytes(t *testing.T) {
	m, p := negFixture(t)
	for _, c := range []string{bcpnames.Checkout, bcpnames.Order} {
		want, err := wrapEachCall(m, p, c, benchCheckoutJSON)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			got, err := wrapKept(m, p, c, benchCheckoutJSON)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, call %d:\n got %s\nwant %s", c, i, got, want)
			}
		}
	}
	first, _ := m.negotiate(context.Background(), "t1", p)
	if again, _ := m.negotiate(context.Background(), "t1", p); again != first {
		t.Fatal("the second negotiation was not the kept one")
	}
	// A merchant change: the offer is dropped and the generation bumped;
	// the kept result must not be served (here the offer is put back by
	// hand, as a refill would).
	offer := m.offers["t1"]
	m.invalidate("t1")
	m.offers["t1"] = offer
	if again, _ := m.negotiate(context.Background(), "t1", p); again == first {
		t.Fatal("a negotiation from before the merchant changed was served")
	}
}

// BenchmarkNegotiateAndWrap is the per-response work of negotiating the
// merchant's offer with the agent's profile and splicing the "ucp"
// envelope in front of the service's checkout: done on every call, and
// with the negotiation and its envelope kept (negcache.go).
func BenchmarkNegotiateAndWrap(b *testing.B) {
	m, p := negFixture(b)
	for _, c := range []struct {
		name string
		f    func(*mcpEdge, *agentprofile.Profile, string, []byte) ([]byte, error)
	}{{"each_call", wrapEachCall}, {"kept", wrapKept}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(m, p, bcpnames.Checkout, benchCheckoutJSON); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
