package bcpschema

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bcpdev/bcp/protocol/bcpschema/internal/derivation"
)

// upstreamSource is the UCP 2026-04-08 release tree, relative to this package.
const upstreamSource = "../../../shared/reference/ucp/release-2026-04-08/source"

// TestDerivationUpToDate re-runs the derivation and fails if the committed
// schemas/ differ, so nobody hand-edits a derived file.
func TestDerivationUpToDate(t *testing.T) {
	if _, err := os.Stat(upstreamSource); err != nil {
		t.Skipf("upstream source %s not available (%v); cannot check schemas/ for drift", upstreamSource, err)
	}
	res, err := derivation.Derive(upstreamSource, filepath.Join(upstreamSource, "..", "..", "LICENSE-upstream"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := derivation.Write(tmp, res); err != nil {
		t.Fatal(err)
	}
	// Writing and diffing the temp tree also proves Write is faithful.
	if diffs, err := derivation.Diff(tmp, res); err != nil || len(diffs) > 0 {
		t.Fatalf("temp tree: %v %v", err, diffs)
	}
	diffs, err := derivation.Diff("schemas", res)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("schemas/%s", d)
	}
	if len(diffs) > 0 {
		t.Log("regenerate: go run ./protocol/bcpschema/internal/derive -src ../shared/reference/ucp/release-2026-04-08/source -out protocol/bcpschema/schemas")
	}
}

// TestDerivedTreeCompiles compiles every embedded document by its $id, as an
// outside consumer would fetch them: every relative $ref must resolve.
func TestDerivedTreeCompiles(t *testing.T) {
	c := jsonschema.NewCompiler()
	var ids []string
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		f, err := FS().Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			return err
		}
		ids = append(ids, BaseURL+p)
		return c.AddResource(BaseURL+p, doc)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 79 {
		t.Errorf("%d schema documents, want 79", len(ids))
	}
	for _, id := range ids {
		if _, err := c.Compile(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	// No upstream name survived the renames.
	_ = fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		data, _ := fs.ReadFile(FS(), p)
		for _, bad := range []string{"ucp.dev", "dev.ucp.", "UCP-Agent", "well-known/ucp"} {
			if strings.Contains(string(data), bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		return nil
	})
}
