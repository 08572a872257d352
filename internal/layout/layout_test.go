package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/bcpdev/bcp/"

// owner is the service a repository path belongs to ("services/checkout",
// "tenants"), or "" for shared code.
func owner(path string) string {
	parts := strings.Split(path, "/")
	switch {
	case parts[0] == "services" && len(parts) > 1:
		return "services/" + parts[1]
	case parts[0] == "tenants":
		return "tenants"
	}
	return ""
}

// TestServicesImportNoOtherService: a service's code (tests apart, which
// may assemble the platform) imports no other service's packages. What
// two services share — a job contract, a file format, a wire format —
// lives under internal/ or protocol/, and calls go through the generated
// clients (proto/gen), so each service can run as its own process.
func TestServicesImportNoOtherService(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") || rel == "third_party" || rel == "proto" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		from := owner(rel)
		if from == "" {
			return nil // shared code, commands, the platform's assembly
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(path, module)
			if !ok {
				continue
			}
			if to := owner(dep); to != "" && to != from {
				t.Errorf("%s imports %s (a package of %s)", rel, path, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files: the walk missed the tree", checked)
	}
}
