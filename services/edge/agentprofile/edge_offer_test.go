package agentprofile_test

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// The offer is built from the profile the edge really serves.
func TestOfferFromEdgeProfile(t *testing.T) {
	d := &tenantsv1.GetDiscoveryResponse{
		Tenant: &tenantsv1.Tenant{Capabilities: bcpnames.DefaultCapabilities},
		PaymentHandlers: []*tenantsv1.PaymentHandler{{
			Id: "pix_loja", Name: bcpnames.PixHandler, Version: bcpnames.Version,
			Spec: bcpnames.PixSpec, Schema: bcpnames.PixSchema,
			AvailableInstrumentsJson: `[{"type":"pix"}]`, ConfigJson: `{"environment":"sandbox"}`,
		}},
	}
	body, err := json.Marshal(edge.BuildProfile(d, "https://loja.example.com.br"))
	if err != nil {
		t.Fatal(err)
	}
	offer, err := agentprofile.OfferFromProfileJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("testdata/agent_profile.json")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := agentprofile.Parse("https://agente.example.com.br/p.json", doc, v, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentprofile.Negotiate(offer, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{bcpnames.Checkout, bcpnames.Discount, bcpnames.Fulfillment, bcpnames.Order}
	if got := r.Names(); !slices.Equal(got, want) || r.Incompatible {
		t.Errorf("negotiated %q (incompatible %v), want %q", got, r.Incompatible, want)
	}
	if got := slices.Sorted(maps.Keys(r.ResponseCapabilities(bcpnames.Checkout))); !slices.Equal(got, []string{bcpnames.Checkout, bcpnames.Discount, bcpnames.Fulfillment}) {
		t.Errorf("checkout response capabilities %q", got)
	}
	if h := r.PaymentHandlers[bcpnames.PixHandler]; len(h) != 1 || h[0].ID != "pix_loja" || string(h[0].Config) != `{"environment":"sandbox"}` {
		t.Errorf("pix handler %+v", h)
	}
}
