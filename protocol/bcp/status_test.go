package bcp_test

import (
	"encoding/json"
	"io/fs"
	"slices"
	"testing"

	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// TestStatusesAreTheSchemas: the one list of checkout statuses is the
// checkout schema's status enum, in its order.
func TestStatusesAreTheSchemas(t *testing.T) {
	b, err := fs.ReadFile(bcpschema.FS(), "schemas/shopping/checkout.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Status struct {
				Enum []string `json:"enum"`
			} `json:"status"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := bcp.Statuses(), doc.Properties.Status.Enum; !slices.Equal(got, want) {
		t.Errorf("Statuses() = %q, the schema's enum is %q", got, want)
	}
}

func TestStatusClasses(t *testing.T) {
	open := bcp.OpenStatuses()
	if want := []string{"incomplete", "requires_escalation", "ready_for_complete"}; !slices.Equal(open, want) {
		t.Errorf("OpenStatuses() = %q, want %q", open, want)
	}
	var terminal []string
	for _, s := range bcp.Statuses() {
		if bcp.Open(s) != slices.Contains(open, s) {
			t.Errorf("Open(%q) = %v, disagrees with OpenStatuses", s, bcp.Open(s))
		}
		if bcp.Terminal(s) {
			terminal = append(terminal, s)
		}
	}
	if want := []string{"completed", "canceled"}; !slices.Equal(terminal, want) {
		t.Errorf("terminal statuses %q, want %q", terminal, want)
	}
	for _, s := range []string{"", "COMPLETED", "pending"} {
		if bcp.Open(s) || bcp.Terminal(s) {
			t.Errorf("%q is open or terminal", s)
		}
	}
	// A caller may change the list it got without changing the next one.
	bcp.Statuses()[0] = "x"
	if bcp.Statuses()[0] != bcp.StatusIncomplete {
		t.Error("Statuses shares its backing array")
	}
}
