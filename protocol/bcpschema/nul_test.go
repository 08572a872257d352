package bcpschema

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestNULIsAViolationOnEveryTool(t *testing.T) {
	v, err := NewToolValidator(checkoutTools)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range checkoutTools {
		tool := ct.Name
		for _, tc := range []struct{ args, path string }{
			{`{"meta":{"ucp-agent":{"profile":"https://a.example/p\u0000.json"}},"id":"x"}`, "$.meta['ucp-agent'].profile"},
			{`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"id":"chk_\u0000"}`, "$.id"},
			{`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"checkout":{"line_items":[{"item":{"id":"a\u0000"}}]}}`, "$.checkout.line_items[0].item.id"},
			{`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"x\u0000":1}`, `$['x\u0000']`},
		} {
			err := v.ValidateToolInput(tool, json.RawMessage(tc.args))
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != tc.path || ve.Violations[0].Keyword != "nul" {
				t.Errorf("%s %s: %v, want one nul violation at %s", tool, tc.args, err, tc.path)
			}
			var inst any
			_ = json.Unmarshal([]byte(tc.args), &inst)
			err = v.ValidateToolInputValue(tool, inst)
			if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Violations, func(x Violation) bool { return x.Path == tc.path && x.Keyword == "nul" }) {
				t.Errorf("%s (value) %s: %v", tool, tc.args, err)
			}
		}
	}
	// An escaped backslash before u0000 is not a NUL.
	if err := v.ValidateToolInput("get_checkout", json.RawMessage(`{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"id":"chk_\\u0000"}`)); err != nil {
		t.Errorf("escaped backslash: %v", err)
	}
}
