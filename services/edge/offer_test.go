package edge

import (
	"reflect"
	"testing"

	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Merchants' equal offer parts are shared, different ones are not, and
// parts of different types never stand in for each other (nil maps and
// nil lists both marshal to "null").
func TestShareOffer(t *testing.T) {
	m := &mcpEdge{shared: map[string]any{}}
	caps := func() map[string][]agentprofile.CapabilityEntry {
		return map[string][]agentprofile.CapabilityEntry{"br.dev.bcp.shopping.checkout": {{Version: "2026-07-28"}}}
	}
	pix := func(id string) []agentprofile.HandlerEntry {
		return []agentprofile.HandlerEntry{{ID: id, Version: "2026-07-28"}}
	}
	a := m.shareOffer(agentprofile.BusinessOffer{Version: "v", Capabilities: caps(), PaymentHandlers: map[string][]agentprofile.HandlerEntry{"br.dev.bcp.pix": pix("pix_a")}})
	b := m.shareOffer(agentprofile.BusinessOffer{Version: "v", Capabilities: caps(), PaymentHandlers: map[string][]agentprofile.HandlerEntry{"br.dev.bcp.pix": pix("pix_b")}})
	if reflect.ValueOf(a.Capabilities).Pointer() != reflect.ValueOf(b.Capabilities).Pointer() {
		t.Error("equal capability maps are not shared")
	}
	if got := b.PaymentHandlers["br.dev.bcp.pix"][0].ID; got != "pix_b" {
		t.Fatalf("merchant b's handler is %q, want pix_b", got)
	}
	// A nil capability map, then a nil handler list: no mix-up, no panic.
	n := m.shareOffer(agentprofile.BusinessOffer{Version: "v"})
	h := m.shareOffer(agentprofile.BusinessOffer{Version: "v", Capabilities: caps(), PaymentHandlers: map[string][]agentprofile.HandlerEntry{"x": nil}})
	if n.Capabilities != nil || h.PaymentHandlers["x"] != nil {
		t.Fatalf("nil parts changed: %v %v", n.Capabilities, h.PaymentHandlers["x"])
	}
}
