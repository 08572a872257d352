package bcpschema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidateToolInput feeds arbitrary bytes to the argument validator of
// every tool: it must never panic, and every rejection must be a
// *ValidationError whose paths are JSONPaths.
func FuzzValidateToolInput(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "binding_*.request.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var req struct {
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &req) == nil && len(req.Params.Arguments) > 0 {
			f.Add(uint8(0), []byte(req.Params.Arguments))
		}
	}
	f.Add(uint8(3), []byte(`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"},"idempotency-key":"x"},"id":"chk_1","checkout":{"payment":{"instruments":[]}}}`))
	f.Add(uint8(1), []byte(`{"meta":{},"id":7}`))
	f.Add(uint8(2), []byte(`[]`))
	f.Add(uint8(4), []byte(`{"checkout":{"line_items":[{"item":{"id":""},"quantity":-1}]}}`))
	f.Add(uint8(5), []byte(`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"id":"chk_\u0000","x\u0000":["\\u0000"]}`))
	v, err := NewToolValidator(checkoutTools)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := checkoutTools[int(which)%len(checkoutTools)].Name
		err := v.ValidateToolInput(tool, args)
		if err == nil {
			if !json.Valid(args) {
				t.Fatalf("%s accepted invalid JSON %q", tool, args)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: rejection is %T, not *ValidationError: %v", tool, err, err)
		}
		for _, viol := range ve.Violations {
			if !strings.HasPrefix(viol.Path, "$") {
				t.Fatalf("%s: violation path %q is not a JSONPath", tool, viol.Path)
			}
		}
	})
}
