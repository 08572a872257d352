package bcpschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var (
	defaultValidatorOnce     = sync.OnceValues(func() (*Validator, error) { return NewValidator() })
	defaultToolValidatorOnce = sync.OnceValues(func() (*ToolValidator, error) { return newBindingValidator() })
	// noAP2 is the negotiated set of a tenant without AP2 mandates.
	noAP2 = []string{CapCheckout, CapFulfillment, CapDiscount, CapBuyerConsent}
)

func defaultValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := defaultValidatorOnce()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func defaultToolValidator(t testing.TB) *ToolValidator {
	t.Helper()
	v, err := defaultToolValidatorOnce()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// arguments returns params.arguments of a JSON-RPC tools/call fixture, or
// the whole file for *.args.json fixtures.
func arguments(t testing.TB, name string) (string, json.RawMessage) {
	t.Helper()
	data := readFixture(t, name)
	var req struct {
		Params struct {
			Name      string
			Arguments json.RawMessage
		}
	}
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	if req.Params.Arguments == nil {
		return "", data
	}
	return req.Params.Name, req.Params.Arguments
}

// structured returns result.structuredContent of a JSON-RPC result fixture.
func structured(t testing.TB, name string) json.RawMessage {
	t.Helper()
	var res struct {
		Result struct {
			StructuredContent json.RawMessage
		}
	}
	if err := json.Unmarshal(readFixture(t, name), &res); err != nil {
		t.Fatal(err)
	}
	if res.Result.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent", name)
	}
	return res.Result.StructuredContent
}

// got is "path keyword" for each violation, the shape the tables compare.
func got(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T (%v), want *ValidationError", err, err)
	}
	out := make([]string, len(ve.Violations))
	for i, v := range ve.Violations {
		out[i] = v.Path + " " + v.Keyword
	}
	return out
}

func TestBindingRequestsValidate(t *testing.T) {
	v := defaultToolValidator(t)
	vNoAP2, err := newBindingValidator(noAP2...)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		fixture, tool string
		v             *ToolValidator
	}{
		{"binding_create_checkout.request.json", "", v},
		{"binding_request_metadata.request.json", "", v},
		{"binding_update_checkout.request.json", "", v},
		{"digest_minimal_create.args.json", "create_checkout", v},
		{"digest_complete_checkout.args.json", "complete_checkout", v},
		// The binding's complete example carries no ap2: valid exactly when
		// AP2 is not negotiated (see TestAP2RequiredOnComplete).
		{"binding_complete_checkout.request.json", "", vNoAP2},
		{"digest_complete_checkout.args.json", "complete_checkout", vNoAP2},
	}
	for _, c := range cases {
		name, args := arguments(t, c.fixture)
		if c.tool != "" {
			name = c.tool
		}
		if err := c.v.ValidateToolInput(name, args); err != nil {
			t.Errorf("%s (%s): %v", c.fixture, name, err)
		}
	}
	// The remaining tools, built from the binding's input-schema prose.
	agent := `"meta":{"ucp-agent":{"profile":"https://platform.example/profiles/shopping-agent.json"}`
	idem := `,"idempotency-key":"550e8400-e29b-41d4-a716-446655440000"`
	for tool, args := range map[string]string{
		"get_checkout":    `{` + agent + `},"id":"checkout_abc123"}`,
		"cancel_checkout": `{` + agent + idem + `},"id":"checkout_abc123"}`,
		"get_order":       `{` + agent + `},"id":"ord_123"}`,
		// Pix: an instrument without credential, extra meta members allowed.
		"complete_checkout": `{` + agent + idem + `,"x-trace":"abc"},"id":"chk_1","checkout":{"payment":{"instruments":[{"id":"pi_1","handler_id":"pix_recebedor_001","type":"pix"}]},"ap2":{"checkout_mandate":"a.b.c"}}}`,
	} {
		if err := v.ValidateToolInput(tool, json.RawMessage(args)); err != nil {
			t.Errorf("%s: %v", tool, err)
		}
	}
}

func TestAP2RequiredOnComplete(t *testing.T) {
	_, args := arguments(t, "binding_complete_checkout.request.json")
	err := defaultToolValidator(t).ValidateToolInput("complete_checkout", args)
	if want := []string{"$.checkout.ap2 required"}; !reflect.DeepEqual(got(t, err), want) {
		t.Fatalf("got %v, want %v", got(t, err), want)
	}
}

// toolInputViolation is one invalid-argument case of
// testdata/tool_input_violations.json: the tool, its arguments (args, or
// raw when they are not a JSON value: "" for none) and the violations
// ("path keyword") the full schemas report. platform/devenv's
// TestDemoToolSurface sends the same cases to the edge over MCP, which
// advertises the compact schemas and must answer the same errors.
type toolInputViolation struct {
	Name string          `json:"name"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	Raw  *string         `json:"raw"`
	Want []string        `json:"want"`
}

func TestToolInputViolations(t *testing.T) {
	var cases []toolInputViolation
	if err := json.Unmarshal(readFixture(t, "tool_input_violations.json"), &cases); err != nil {
		t.Fatal(err)
	}
	v := defaultToolValidator(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			args := c.Args
			if c.Raw != nil {
				args = json.RawMessage(*c.Raw)
			}
			err := v.ValidateToolInput(c.Tool, args)
			if g := got(t, err); !reflect.DeepEqual(g, c.Want) {
				t.Errorf("got %q\nwant %q\nerr: %v", g, c.Want, err)
			}
		})
	}
}

func TestValidateToolInputValue(t *testing.T) {
	v := defaultToolValidator(t)
	args := map[string]any{
		"meta":     map[string]any{"ucp-agent": map[string]any{"profile": "https://p.example/a.json"}},
		"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "a"}, "quantity": 1.0}}},
	}
	if err := v.ValidateToolInputValue("create_checkout", args); err != nil {
		t.Fatal(err)
	}
	args["checkout"].(map[string]any)["line_items"].([]any)[0].(map[string]any)["quantity"] = json.Number("0")
	if g, want := got(t, v.ValidateToolInputValue("create_checkout", args)), []string{"$.checkout.line_items[0].quantity minimum"}; !reflect.DeepEqual(g, want) {
		t.Errorf("got %v, want %v", g, want)
	}
	if err := v.ValidateToolInputValue("create_wishlist", args); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("err = %v, want ErrUnknownTool", err)
	}
	if err := v.ValidateToolInput("delete_checkout", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("err = %v, want ErrUnknownTool", err)
	}
}

func TestBindingResponsesValidate(t *testing.T) {
	v := defaultValidator(t)
	for fixture, op := range map[string]Op{
		"binding_create_checkout.response.json":  OpCreate,
		"binding_update_checkout.response.json":  OpUpdate,
		"binding_business_outcome.response.json": OpUpdate,
	} {
		if err := v.ValidateCheckoutResponse(op, structured(t, fixture)); err != nil {
			t.Errorf("%s: %v", fixture, err)
		}
	}
	for _, fixture := range []string{"binding_create_checkout.error.json", "binding_item_unavailable.error.json"} {
		if err := v.ValidateErrorResponse(structured(t, fixture)); err != nil {
			t.Errorf("%s: %v", fixture, err)
		}
		// An error_response is not a checkout.
		if err := v.ValidateCheckoutResponse(OpCreate, structured(t, fixture)); err == nil {
			t.Errorf("%s validates as a checkout", fixture)
		}
	}
	if err := v.ValidateCheckoutResponse("delete", structured(t, "binding_create_checkout.response.json")); err == nil {
		t.Error("unknown op accepted")
	}
}

// checkoutResponse is a minimal valid checkout response; extra members are
// spliced in before the closing brace.
func checkoutResponse(extra string) json.RawMessage {
	return json.RawMessage(`{
	  "ucp": {"version": "2026-07-28", "capabilities": {"br.dev.bcp.shopping.checkout": [{"version": "2026-07-28"}]},
	          "payment_handlers": {"br.dev.bcp.pix": [{"id": "pix_1", "version": "2026-07-28", "available_instruments": [{"type": "pix"}], "config": {}}]}},
	  "id": "chk_1", "status": "completed", "currency": "BRL", "links": [],
	  "line_items": [{"id": "li_1", "item": {"id": "sku_1", "title": "Café", "price": 1050}, "quantity": 2,
	                  "totals": [{"type": "subtotal", "amount": 2100}, {"type": "total", "amount": 2100}]}],
	  "totals": [{"type": "subtotal", "amount": 2100}, {"type": "total", "amount": 2100}]` + extra + `}`)
}

func TestCheckoutResponseCases(t *testing.T) {
	v := defaultValidator(t)
	valid := map[string]string{
		"completed with order": `,"order": {"id": "ord_1", "permalink_url": "https://loja.example/pedidos/ord_1"}`,
		// Possible only because of the fulfillment_destination oneOf->anyOf
		// patch: a retail location also matches shipping_destination.
		"pickup destination": `,"fulfillment": {"methods": [{"id": "m1", "type": "pickup", "line_item_ids": ["li_1"],
		    "destinations": [{"id": "loja_1", "name": "Loja Centro", "address": {"address_locality": "São Paulo"}}],
		    "selected_destination_id": "loja_1"}]}`,
		"ap2 and discounts": `,"ap2": {"merchant_authorization": "eyJhbGciOiJFUzI1NiJ9..c2ln"},
		    "discounts": {"codes": ["BEMVINDO"], "applied": [{"code": "BEMVINDO", "title": "Boas-vindas", "amount": 100}]},
		    "messages": [{"type": "info", "content": "Pix expira em 30 minutos"}]`,
	}
	for name, extra := range valid {
		if err := v.ValidateCheckoutResponse(OpComplete, checkoutResponse(extra)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	invalid := []struct {
		name, doc string
		want      []string
	}{
		{"missing totals and ucp.payment_handlers",
			`{"ucp":{"version":"2026-07-28"},"id":"c","status":"incomplete","currency":"BRL","links":[],"line_items":[]}`,
			[]string{"$.totals required", "$.ucp.payment_handlers required"}},
		{"bad status and negative subtotal, no total",
			`{"ucp":{"version":"2026-07-28","payment_handlers":{}},"id":"c","status":"open","currency":"BRL","links":[],"line_items":[],
			  "totals":[{"type":"subtotal","amount":-1}]}`,
			[]string{"$.status enum", "$.totals minContains", "$.totals[0].amount minimum"}},
		{"message branches: the discriminator picks the error shape",
			`{"ucp":{"version":"2026-07-28","payment_handlers":{}},"id":"c","status":"incomplete","currency":"BRL","links":[],"line_items":[],
			  "totals":[{"type":"subtotal","amount":0},{"type":"total","amount":0}],
			  "messages":[{"type":"error","code":"out_of_stock","content":"x","severity":"fatal"},{"type":"warning","code":5,"content":"y"}]}`,
			[]string{"$.messages[0].severity enum", "$.messages[1].code type"}},
		{"order confirmation needs permalink_url",
			string(checkoutResponse(`,"order":{"id":"ord_1"}`)),
			[]string{"$.order.permalink_url required"}},
	}
	for _, c := range invalid {
		err := v.ValidateCheckoutResponse(OpRead, json.RawMessage(c.doc))
		if g := got(t, err); !reflect.DeepEqual(g, c.want) {
			t.Errorf("%s: got %q, want %q (%v)", c.name, g, c.want, err)
		}
	}
}

func TestErrorResponseCases(t *testing.T) {
	v := defaultValidator(t)
	err := v.ValidateErrorResponse(json.RawMessage(`{"ucp":{"version":"2026-07-28","status":"success"},"messages":[],"id":"x"}`))
	want := []string{"$.id additionalProperties", "$.messages minItems", "$.ucp.status const"}
	if g := got(t, err); !reflect.DeepEqual(g, want) {
		t.Errorf("got %q, want %q (%v)", g, want, err)
	}
}

func TestProfiles(t *testing.T) {
	v := defaultValidator(t)
	profile := readFixture(t, "binding_business_profile.json")
	if err := v.ValidateBusinessProfile(profile); err != nil {
		t.Fatalf("binding business profile: %v", err)
	}
	// A business profile is not a platform profile: platform handler
	// entries must carry spec and schema.
	if g := got(t, v.ValidatePlatformProfile(profile)); len(g) == 0 {
		t.Error("business profile accepted as platform profile")
	}

	var doc map[string]any
	if err := json.Unmarshal(profile, &doc); err != nil {
		t.Fatal(err)
	}
	ucp := doc["ucp"].(map[string]any)
	ucp["version"] = "draft"
	delete(ucp["payment_handlers"].(map[string]any)["br.dev.bcp.pix"].([]any)[0].(map[string]any), "id")
	delete(doc["signing_keys"].([]any)[0].(map[string]any), "kty")
	ucp["capabilities"].(map[string]any)["Checkout"] = []any{}
	bad, _ := json.Marshal(doc)
	want := []string{
		"$.signing_keys[0].kty required",
		"$.ucp.capabilities.Checkout propertyNames",
		"$.ucp.payment_handlers['br.dev.bcp.pix'][0].id required",
		"$.ucp.version pattern",
	}
	if g := got(t, v.ValidateBusinessProfile(bad)); !reflect.DeepEqual(g, want) {
		t.Errorf("got %q, want %q", g, want)
	}

	platform := json.RawMessage(`{
	  "ucp": {
	    "version": "2026-07-28",
	    "services": {"br.dev.bcp.shopping": [{"version": "2026-07-28", "transport": "mcp",
	      "spec": "https://bcp.dev.br/draft/specification/overview",
	      "schema": "https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
	    "capabilities": {
	      "br.dev.bcp.shopping.checkout": [{"version": "2026-07-28",
	        "spec": "https://bcp.dev.br/draft/specification/checkout",
	        "schema": "https://bcp.dev.br/draft/schemas/shopping/checkout.json"}],
	      "br.dev.bcp.shopping.order": [{"version": "2026-07-28",
	        "spec": "https://bcp.dev.br/draft/specification/order",
	        "schema": "https://bcp.dev.br/draft/schemas/shopping/order.json",
	        "config": {"webhook_url": "https://platform.example/webhooks/bcp"}}]
	    },
	    "payment_handlers": {}
	  },
	  "signing_keys": [{"kid": "platform-2026", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]
	}`)
	if err := v.ValidatePlatformProfile(platform); err != nil {
		t.Errorf("platform profile: %v", err)
	}
}

func TestOrder(t *testing.T) {
	v := defaultValidator(t)
	order := `{
	  "ucp": {"version": "2026-07-28", "capabilities": {"br.dev.bcp.shopping.order": [{"version": "2026-07-28"}]}},
	  "id": "ord_1", "checkout_id": "chk_1", "permalink_url": "https://loja.example/pedidos/ord_1", "currency": "BRL",
	  "line_items": [{"id": "li_1", "item": {"id": "sku_1", "title": "Café", "price": 1050},
	                  "quantity": {"original": 2, "total": 2, "fulfilled": 0}, "status": "%s",
	                  "totals": [{"type": "subtotal", "amount": 2100}, {"type": "total", "amount": 2100}]}],
	  "fulfillment": {"expectations": [], "events": []},
	  "totals": [{"type": "subtotal", "amount": 2100}, {"type": "total", "amount": 2100}]
	}`
	if err := v.ValidateOrder(json.RawMessage(fmt.Sprintf(order, "processing"))); err != nil {
		t.Fatal(err)
	}
	if g, want := got(t, v.ValidateOrder(json.RawMessage(fmt.Sprintf(order, "shipped")))), []string{"$.line_items[0].status enum"}; !reflect.DeepEqual(g, want) {
		t.Errorf("got %v, want %v", g, want)
	}
}

func TestValidationErrorLimitAndFormat(t *testing.T) {
	v := defaultToolValidator(t)
	var items []string
	for i := 0; i < MaxViolations+7; i++ {
		items = append(items, `{"item":{"id":"x"},"quantity":0}`)
	}
	args := `{"meta":{"ucp-agent":{"profile":"https://p.example/a"}},"checkout":{"line_items":[` + strings.Join(items, ",") + `]}}`
	err := v.ValidateToolInput("create_checkout", json.RawMessage(args))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Violations) != MaxViolations || ve.Omitted != 7 {
		t.Fatalf("%d violations, %d omitted", len(ve.Violations), ve.Omitted)
	}
	// Numeric order: [2] before [10], and the first 20 are kept.
	if ve.Violations[2].Path != "$.checkout.line_items[2].quantity" || ve.Violations[19].Path != "$.checkout.line_items[19].quantity" {
		t.Errorf("order: %v ... %v", ve.Violations[2], ve.Violations[19])
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "bcpschema: invalid document: $.checkout.line_items[0].quantity: minimum: got 0, want 1; ") ||
		!strings.HasSuffix(msg, "; and 7 more") {
		t.Errorf("Error() = %q", msg)
	}
}

func TestJSONPath(t *testing.T) {
	inst := map[string]any{
		"a":   []any{map[string]any{"0": map[string]any{}}},
		"b-c": map[string]any{},
	}
	cases := []struct {
		tokens []string
		want   string
	}{
		{nil, "$"},
		{[]string{"a", "0", "0", "x"}, "$.a[0]['0'].x"},
		{[]string{"b-c", "it's"}, `$['b-c']['it\'s']`},
		{[]string{"back\\slash", "tab\tnl\n", "\x01"}, `$['back\\slash']['tab\tnl\n']['\u0001']`},
		{[]string{"_ok9", "9no", "ünï"}, "$._ok9['9no']['ünï']"},
		{[]string{"a", "7"}, "$.a['7']"}, // out of range: not an index
	}
	for _, c := range cases {
		if g := jsonPath(c.tokens, inst); g != c.want {
			t.Errorf("jsonPath(%q) = %s, want %s", c.tokens, g, c.want)
		}
	}
}

func TestValidatorConcurrent(t *testing.T) {
	v := defaultToolValidator(t)
	_, good := arguments(t, "binding_create_checkout.request.json")
	bad := json.RawMessage(`{"meta":{},"checkout":{"id":"x","line_items":[]}}`)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if err := v.ValidateToolInput("create_checkout", good); err != nil {
					t.Error(err)
					return
				}
				if err := v.ValidateToolInput("create_checkout", bad); err == nil {
					t.Error("bad input accepted")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewValidatorCapabilities(t *testing.T) {
	v, err := NewValidator(CapFulfillment, CapCheckout, CapOrder, CapFulfillment)
	if err != nil {
		t.Fatal(err)
	}
	if g, want := v.Capabilities(), []string{CapCheckout, CapFulfillment}; !reflect.DeepEqual(g, want) {
		t.Errorf("Capabilities() = %v, want %v", g, want)
	}
	// Without the discount extension "discounts" is unknown but allowed
	// (schemas are open) and not type-checked.
	tv, err := NewToolValidator(checkoutTools, CapFulfillment, CapCheckout, CapOrder, CapFulfillment)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"meta":{"ucp-agent":{"profile":"https://p.example/a"}},"checkout":{"line_items":[{"item":{"id":"a"},"quantity":1}],"discounts":{"codes":[5]}}}`
	if err := tv.ValidateToolInput("create_checkout", json.RawMessage(args)); err != nil {
		t.Errorf("discounts checked without the extension: %v", err)
	}
	if _, err := NewValidator(CapFulfillment); err == nil {
		t.Error("capability set without the checkout root accepted")
	}
	if _, err := NewToolValidator(checkoutTools, CapFulfillment); err == nil {
		t.Error("tools: capability set without the checkout root accepted")
	}
	if _, err := NewValidator(CapCheckout, "com.example.loyalty"); err == nil {
		t.Error("unknown capability accepted")
	}
}
