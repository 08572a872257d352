package edge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamOpenAPI is UCP release 2026-04-08's REST document in the shared
// reference tree next to the repository (as protocol/bcpschema's
// derivation reads it).
var upstreamOpenAPI = filepath.Join("..", "..", "..", "shared", "reference", "ucp", "release-2026-04-08", "source", "services", "shopping", "rest.openapi.json")

// TestOpenAPIDrift re-derives the served document from upstream and fails
// when the checked-in file differs. Regenerate with
// BCP_UPDATE_OPENAPI=1 go test ./services/edge -run TestOpenAPIDrift.
func TestOpenAPIDrift(t *testing.T) {
	src, err := os.ReadFile(upstreamOpenAPI)
	if err != nil {
		t.Skipf("upstream reference not available: %v", err)
	}
	got, err := DeriveOpenAPI(src)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if os.Getenv("BCP_UPDATE_OPENAPI") != "" {
		if err := os.WriteFile(filepath.Join("openapi", "rest.openapi.json"), got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, restOpenAPI) {
		t.Fatal("openapi/rest.openapi.json drifted from DeriveOpenAPI(upstream); regenerate with BCP_UPDATE_OPENAPI=1")
	}
}

func TestOpenAPIDocument(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Parameters map[string]map[string]any `json:"parameters"`
			Schemas    map[string]any            `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(restOpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Paths) != len(restPaths) {
		t.Fatalf("paths = %d, want %d", len(doc.Paths), len(restPaths))
	}
	for _, p := range restPaths {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("missing path %s", p)
		}
	}
	if doc.Components.Parameters["ucp_agent"]["name"] != "BCP-Agent" {
		t.Errorf("agent header = %v", doc.Components.Parameters["ucp_agent"]["name"])
	}
	s := string(restOpenAPI)
	for _, bad := range []string{"ucp.dev", "UCP-Agent", "../../"} {
		if strings.Contains(s, bad) {
			t.Errorf("document still contains %q", bad)
		}
	}
}
