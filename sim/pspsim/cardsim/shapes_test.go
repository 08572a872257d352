package cardsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/bcpdev/bcp/services/payments/card"
)

// stripeSpec is Stripe's OpenAPI description as stripe-mock (pinned in
// tools/stripe-mock/go.mod) embeds it.
func stripeSpec(t *testing.T) *openapi3.T {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-m", "-modfile="+filepath.Join(root, "tools", "stripe-mock", "go.mod"), "-f", "{{.Dir}}", "github.com/stripe/stripe-mock")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list stripe-mock: %v: %s", err, stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "embedded", "openapi", "spec3.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("Stripe's OpenAPI description: %v", err)
	}
	return doc
}

// TestShapesAreStripes checks every kind of object and error the
// simulator answers against the schemas of Stripe's OpenAPI description:
// each field's type, enum values and nullability, and the (few) fields it
// requires.
func TestShapesAreStripes(t *testing.T) {
	doc := stripeSpec(t)
	e := newEnv(t)
	ctx := context.Background()
	// Make one of each: a payment method from a token, intents in every
	// state, a decline, a refund.
	for _, tok := range []string{newToken("4242"), newToken("3220"), newToken("0002"), "pm_card_visa"} {
		if _, err := e.proc.Charge(ctx, chargeReq(newKey(), tok, 1990)); err != nil {
			t.Fatal(err)
		}
	}
	paid, err := e.proc.Charge(ctx, chargeReq(newKey(), "pm_card_visa", 1990))
	if err != nil || paid.Status != card.StatusApproved {
		t.Fatal(paid, err)
	}
	if _, err := e.proc.Refund(ctx, paid.ID, "ref_1", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.proc.Refund(ctx, paid.ID, "ref_2", 5000); err == nil {
		t.Fatal("refund over the charge")
	}
	if _, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: newKey(), Amount: 1990, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	if err := e.proc.CheckCredentials(ctx); err != nil {
		t.Fatal(err)
	}
	bad, rec := e.processor("sk_test_" + strings.Repeat("n0", 20))
	_ = bad.CheckCredentials(ctx)
	ex := append(e.rec.take(), rec.take()...)

	schema := func(name string) *openapi3.Schema {
		s := doc.Components.Schemas[name]
		if s == nil {
			t.Fatalf("no schema %s", name)
		}
		return s.Value
	}
	check := func(what, name string, v any) {
		t.Helper()
		if err := schema(name).VisitJSON(v, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s is not a Stripe %s:\n%v", what, name, err)
		}
	}
	seen := map[string]int{}
	for _, x := range ex {
		var v map[string]any
		if err := json.Unmarshal(x.Body, &v); err != nil {
			t.Fatalf("%s %s: %v", x.Method, x.Path, err)
		}
		what := x.Method + " " + x.Path
		if x.Status >= 400 {
			check(what, "error", v)
			seen["error"]++
			if inner, ok := v["error"].(map[string]any)["payment_intent"]; ok {
				check(what+" (its payment_intent)", "payment_intent", inner)
				seen["decline's payment_intent"]++
			}
			continue
		}
		var objs []any
		switch v["object"] {
		case "list", "search_result":
			objs = v["data"].([]any)
		default:
			objs = []any{v}
		}
		for _, o := range objs {
			name := o.(map[string]any)["object"].(string)
			check(what, name, o)
			seen[name+" "+stringOr(o.(map[string]any)["status"])]++
		}
	}
	for _, want := range []string{"payment_method ", "payment_intent succeeded", "payment_intent requires_action", "payment_intent requires_payment_method",
		"payment_intent canceled", "refund succeeded", "balance ", "error", "decline's payment_intent"} {
		if seen[want] == 0 {
			t.Errorf("no %q was checked (%v)", want, seen)
		}
	}
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}
