package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// TestAP2MandateMatchesPublishedSchema: the mandate the platform requires,
// an SD-JWT with key binding, is valid for the schemas the platform
// publishes — complete_checkout's input schema in tools/list, and the
// derived ap2_mandate.json checkout_mandate definition (published at its
// $id, which the schemas /bcp/rest/openapi.json refers to compose) — and
// the platform completes the checkout with it. An agent that validates
// its arguments against what it was shown, or generates a client from
// it, can send a valid mandate.
func TestAP2MandateMatchesPublishedSchema(t *testing.T) {
	const host = "ap2-schema.localhost"
	w := newAP2World(t, host)
	w.setAP2(host, true)
	d := w.driver("mcp", "ap2", host)
	id := decodeAP2(t, d.ready(w.rates(host))[1]).ID
	m := w.mandate(host, d.do("get_checkout", id, nil), ap2.MandateOptions{})
	if kb := m[strings.LastIndex(m, "~")+1:]; strings.Count(kb, ".") != 2 {
		t.Fatalf("the wallet's mandate has no key-binding JWT: %s", m)
	}
	token := freshToken()
	args, _ := json.Marshal(map[string]any{
		"meta":     map[string]any{"ucp-agent": map[string]any{"profile": w.profile["ap2"]}, "idempotency-key": "550e8400-e29b-41d4-a716-446655440000"},
		"id":       id,
		"checkout": map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(token)}}, "ap2": map[string]any{"checkout_mandate": m}},
	})

	// tools/list as the agent sees it.
	tools, err := d.mcp.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var published []byte
	for _, tool := range tools.Tools {
		if tool.Name == "complete_checkout" {
			published, _ = json.Marshal(tool.InputSchema)
		}
	}
	if !bytes.Contains(published, []byte(`"checkout_mandate"`)) {
		t.Fatalf("complete_checkout's tools/list schema does not describe ap2.checkout_mandate: %s", published)
	}
	if err := validateAgainst(published, args); err != nil {
		t.Errorf("complete_checkout arguments with a key-bound mandate fail the tools/list schema: %v", err)
	}

	// The derived definition, and every mandate pattern the OpenAPI
	// document may carry.
	def, err := bcpschema.Resolve("schemas/shopping/ap2_mandate.json#/$defs/checkout_mandate", bcpschema.Request, bcpschema.OpComplete)
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(m)
	if err := validateAgainst(def, quoted); err != nil {
		t.Errorf("the mandate fails ap2_mandate.json#/$defs/checkout_mandate: %v", err)
	}
	if err := validateAgainst(def, []byte(`"h.p.s~d1~kb.p"`)); err == nil {
		t.Error("checkout_mandate admits a two-part key-binding JWT")
	}
	openapi := get(t, w.r, http.MethodGet, host, "/bcp/rest/openapi.json", nil)
	if openapi.status != http.StatusOK {
		t.Fatalf("openapi.json: %d", openapi.status)
	}
	var doc any
	if err := json.Unmarshal(openapi.body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range mandatePatterns(doc) {
		if err := validateAgainst([]byte(`{"type":"string","pattern":`+p+`}`), quoted); err != nil {
			t.Errorf("openapi.json pattern %s refuses the mandate", p)
		}
	}

	// The platform takes it.
	if done := decodeAP2(t, d.complete(id, m, token)); done.Status != "completed" || done.Order == nil {
		t.Fatalf("complete with the mandate: %+v", done)
	}
}

// validateAgainst validates the JSON instance inst against schema.
func validateAgainst(schema, inst []byte) error {
	s, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", s); err != nil {
		return err
	}
	sch, err := c.Compile("mem://schema.json")
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(inst))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// mandatePatterns returns, JSON-quoted, every "pattern" in doc that
// mentions "~" (an SD-JWT's separator).
func mandatePatterns(doc any) []string {
	var out []string
	switch v := doc.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "pattern" && strings.Contains(s, "~") {
				q, _ := json.Marshal(s)
				out = append(out, string(q))
			}
			out = append(out, mandatePatterns(c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, mandatePatterns(c)...)
		}
	}
	return out
}
