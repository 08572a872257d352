package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bcpdev/bcp/agentclient"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// outcome is one operation's answer, whichever binding carried it: a
// business payload (resource or error_response) or a protocol error.
type outcome struct {
	body map[string]any // nil on a protocol error
	raw  []byte
	// Protocol error: data.code (MCP) / body code (REST), JSONPaths, and the
	// binding's own signal (REST: HTTP status; MCP: JSON-RPC code).
	errCode    string
	errPaths   []string
	httpStatus int // REST: every response; MCP: 0
	rpcCode    int64
	header     http.Header
}

func (o outcome) checkout(t *testing.T) *bcp.Checkout {
	t.Helper()
	if o.body == nil {
		t.Fatalf("want a business outcome, got protocol error %s %v (HTTP %d, rpc %d)", o.errCode, o.errPaths, o.httpStatus, o.rpcCode)
	}
	return decodeCheckout(t, o.body)
}

// driver performs BCP operations over one binding. key is the
// idempotency key ("" for none); checkout is the payload (nil for none).
type driver interface {
	name() string
	do(t *testing.T, host, op, id string, checkout map[string]any, key string) outcome
}

// mcpDriver drives the MCP tools through the go-sdk client.
type mcpDriver struct {
	agents map[string]*agent
}

func (mcpDriver) name() string { return "mcp" }

func (d mcpDriver) do(t *testing.T, host, op, id string, checkout map[string]any, key string) outcome {
	t.Helper()
	a := d.agents[host]
	meta := map[string]any{"ucp-agent": map[string]any{"profile": a.profile}}
	if key != "" {
		meta["idempotency-key"] = key
	}
	args := map[string]any{"meta": meta}
	if id != "" {
		args["id"] = id
	}
	if checkout != nil {
		args["checkout"] = checkout
	}
	res, err := a.callErr(op, args)
	if err != nil {
		var e *jsonrpc.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s over MCP: %v", op, err)
		}
		var data struct {
			Code  string   `json:"code"`
			Paths []string `json:"paths"`
		}
		_ = json.Unmarshal(e.Data, &data)
		return outcome{errCode: data.Code, errPaths: data.Paths, rpcCode: e.Code}
	}
	raw, _ := json.Marshal(res)
	return outcome{body: res, raw: raw}
}

// restDriver drives /bcp/rest with an API key per host and validates every
// response: business bodies against the BCP response schemas, protocol
// errors as the flat {"code","content"[,"paths","violations"]} body.
type restDriver struct {
	addr    string
	v       *bcpschema.Validator
	clients map[string]*http.Client
}

func (restDriver) name() string { return "rest" }

var restRoutes = map[string]struct{ method, path string }{
	"create_checkout":   {"POST", "/checkout-sessions"},
	"get_checkout":      {"GET", "/checkout-sessions/{id}"},
	"update_checkout":   {"PUT", "/checkout-sessions/{id}"},
	"complete_checkout": {"POST", "/checkout-sessions/{id}/complete"},
	"cancel_checkout":   {"POST", "/checkout-sessions/{id}/cancel"},
	"get_order":         {"GET", "/orders/{id}"},
}

func (d restDriver) do(t *testing.T, host, op, id string, checkout map[string]any, key string) outcome {
	t.Helper()
	route := restRoutes[op]
	var body io.Reader
	if checkout != nil {
		b, _ := json.Marshal(checkout)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(route.method, "http://"+d.addr+"/bcp/rest"+strings.Replace(route.path, "{id}", id, 1), body)
	if err != nil {
		t.Fatal(err)
	}
	if checkout != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return restSend(t, d.clients[host], d.v, op, req)
}

// restSend sends a REST request and checks the response's shape.
func restSend(t *testing.T, c *http.Client, v *bcpschema.Validator, op string, req *http.Request) outcome {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	o := outcome{raw: raw, httpStatus: resp.StatusCode, header: resp.Header}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q", op, ct)
	}
	if resp.StatusCode >= 300 {
		var flat map[string]any
		if err := json.Unmarshal(raw, &flat); err != nil {
			t.Fatalf("%s: protocol error body is not JSON: %s", op, raw)
		}
		for k := range flat {
			if !slices.Contains([]string{"code", "content", "paths", "violations", "continue_url"}, k) {
				t.Fatalf("%s: protocol error body has %q: %s", op, k, raw)
			}
		}
		o.errCode, _ = flat["code"].(string)
		o.errPaths = toStrings(flat["paths"])
		if o.errCode == "" || flat["content"] == nil {
			t.Fatalf("%s: protocol error without code/content: %s", op, raw)
		}
		return o
	}
	if err := json.Unmarshal(raw, &o.body); err != nil {
		t.Fatalf("%s: body is not a JSON object: %s", op, raw)
	}
	ucp, _ := o.body["ucp"].(map[string]any)
	switch {
	case ucp["status"] == "error":
		if err := v.ValidateErrorResponse(raw); err != nil {
			t.Fatalf("%s: error_response fails the schema: %v\n%s", op, err, raw)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: error_response with HTTP %d, want 200", op, resp.StatusCode)
		}
	case op == "get_order":
		if err := v.ValidateOrder(raw); err != nil {
			t.Fatalf("get_order: response fails the order schema: %v\n%s", err, raw)
		}
	default:
		o2 := map[string]bcpschema.Op{"create_checkout": bcpschema.OpCreate, "update_checkout": bcpschema.OpUpdate, "get_checkout": bcpschema.OpRead,
			"cancel_checkout": bcpschema.OpCancel, "complete_checkout": bcpschema.OpComplete}[op]
		if err := v.ValidateCheckoutResponse(o2, raw); err != nil {
			t.Fatalf("%s: response fails the checkout schema: %v\n%s", op, err, raw)
		}
		want := http.StatusOK
		if op == "create_checkout" {
			want = http.StatusCreated
		}
		if resp.StatusCode != want {
			t.Fatalf("%s: HTTP %d, want %d", op, resp.StatusCode, want)
		}
	}
	return o
}

// wantProtocolError checks a protocol error on either binding: the code,
// a path when given, and the binding's status (REST HTTP, MCP JSON-RPC).
func wantProtocolError(t *testing.T, d driver, o outcome, code string, httpStatus int, rpcCode int64, path string) {
	t.Helper()
	if o.body != nil {
		t.Fatalf("%s: want protocol error %s, got a business outcome: %s", d.name(), code, o.raw)
	}
	if o.errCode != code {
		t.Fatalf("%s: error code %q, want %q (%s)", d.name(), o.errCode, code, o.raw)
	}
	if path != "" && !slices.Contains(o.errPaths, path) {
		t.Fatalf("%s: error paths %v lack %s", d.name(), o.errPaths, path)
	}
	switch d.name() {
	case "rest":
		if o.httpStatus != httpStatus {
			t.Fatalf("rest: %s with HTTP %d, want %d", code, o.httpStatus, httpStatus)
		}
	case "mcp":
		if o.rpcCode != rpcCode {
			t.Fatalf("mcp: %s with JSON-RPC %d, want %d", code, o.rpcCode, rpcCode)
		}
	}
}

var volatileValue = regexp.MustCompile(`\b(chk|ord|li|fm|fg|fd|pa|att|evt|adj|pi)_[A-Za-z0-9_-]+`)

// clockInText matches times shown to people ("até 30/11 02:06"): two
// runs a few seconds apart can straddle a minute.
var clockInText = regexp.MustCompile(`\b\d{2}/\d{2} \d{2}:\d{2}\b`)

// normalize drops what legitimately differs between two equal runs: ids,
// timestamps, URLs naming a resource, the Pix display (txid, QR), the
// order label (a per-merchant sequence).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range x {
			if k == "id" || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "_ids") || strings.HasSuffix(k, "_at") ||
				k == "continue_url" || k == "permalink_url" || k == "display" || k == "label" {
				continue
			}
			out[k] = normalize(c)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = normalize(c)
		}
		return out
	case string:
		return clockInText.ReplaceAllString(volatileValue.ReplaceAllString(x, "$1_*"), "dd/mm hh:mm")
	}
	return v
}

// bindingEnv is what the cases share: two merchants and the shopper's
// profile (with an order webhook and a delegated card handler).
type bindingEnv struct {
	s            *shopper
	alfa, beta   string
	unreachable  map[string]driver // drivers acting for a profile that cannot be fetched
	readyAddress map[string]any
}

// ready takes a fresh checkout (1 shirt, PAC, code BEMVINDO10) to
// ready_for_complete over d and returns every step's outcome.
func (e *bindingEnv) ready(t *testing.T, d driver, host string) (*bcp.Checkout, []outcome) {
	t.Helper()
	created := d.do(t, host, "create_checkout", "", map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
	}, "")
	c := created.checkout(t)
	if c.Status != bcp.StatusIncomplete || totals(c)["subtotal"] != 5990 || !hasMessage(c, "error", "missing", "$.buyer.email") {
		t.Fatalf("%s create: %s %v %+v", d.name(), c.Status, totals(c), c.Messages)
	}
	li := c.LineItems[0].ID
	addressed := d.do(t, host, "update_checkout", c.ID, map[string]any{
		"line_items":  []any{map[string]any{"id": li, "item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":       map[string]any{"email": "ana@example.com", "first_name": "Ana"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "line_item_ids": []any{li}, "destinations": []any{e.readyAddress}}}},
	}, "")
	c = addressed.checkout(t)
	m := c.Fulfillment.Methods[0]
	if len(m.Groups) != 1 || len(m.Groups[0].Options) != 2 {
		t.Fatalf("%s options: %+v", d.name(), m)
	}
	selected := d.do(t, host, "update_checkout", c.ID, map[string]any{
		"line_items": []any{map[string]any{"id": li, "item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": "ana@example.com", "first_name": "Ana"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": m.ID, "type": "shipping", "line_item_ids": []any{li},
			"destinations": []any{e.readyAddress}, "selected_destination_id": *m.SelectedDestinationID,
			"groups": []any{map[string]any{"id": m.Groups[0].ID, "selected_option_id": e.s.merchant[host].rates["PAC"]}}}}},
		"discounts": map[string]any{"codes": []any{"BEMVINDO10"}},
	}, "")
	c = selected.checkout(t)
	// 5990 − 599 + 1500 = 6891.
	if c.Status != bcp.StatusReadyForComplete || totals(c)["total"] != 6891 {
		t.Fatalf("%s ready: %s %v %+v", d.name(), c.Status, totals(c), c.Messages)
	}
	return c, []outcome{created, addressed, selected}
}

type bindingCase struct {
	name string
	// run drives the scenario over d and returns the payloads whose
	// normalized forms must be equal across bindings.
	run func(t *testing.T, e *bindingEnv, d driver) []outcome
}

var bindingCases = []bindingCase{
	{"create-update-ready-get", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		c, outs := e.ready(t, d, e.alfa)
		got := d.do(t, e.alfa, "get_checkout", c.ID, nil, "")
		if gc := got.checkout(t); gc.Status != bcp.StatusReadyForComplete || totals(gc)["total"] != 6891 {
			t.Fatalf("get: %s %v", gc.Status, totals(gc))
		}
		return append(outs, got)
	}},
	{"complete-pix", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		c, _ := e.ready(t, d, e.alfa)
		key := uuid.NewString()
		payment := map[string]any{"payment": map[string]any{"instruments": []any{e.s.pixInstrument(e.alfa)}}}
		done := d.do(t, e.alfa, "complete_checkout", c.ID, payment, key)
		p := done.checkout(t)
		if p.Status != bcp.StatusCompleteInProgress || !hasMessage(p, "info", "pix_awaiting_payment", "$.payment.instruments[0]") {
			t.Fatalf("pix complete: %s %+v", p.Status, p.Messages)
		}
		pix := pixOf(t, p)
		// Same key, same body: the stored response, byte for byte.
		again := d.do(t, e.alfa, "complete_checkout", c.ID, payment, key)
		if !jsonEqual(string(again.raw), string(done.raw)) {
			t.Fatalf("replay differs:\n%s\n%s", again.raw, done.raw)
		}
		// The buyer pays (simulated PSP, real webhook); the agent polls.
		e.s.pay(e.alfa, pix.Pix.AttemptID)
		var paid outcome
		eventually(t, 30*time.Second, "the Pix checkout completes", func() bool {
			paid = d.do(t, e.alfa, "get_checkout", c.ID, nil, "")
			return paid.checkout(t).Status == bcp.StatusCompleted
		})
		if paid.checkout(t).Order == nil {
			t.Fatalf("completed without an order: %s", paid.raw)
		}
		return []outcome{done, paid}
	}},
	{"complete-delegated-card-and-order", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		c, _ := e.ready(t, d, e.alfa)
		done := d.do(t, e.alfa, "complete_checkout", c.ID, map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(freshToken())}}}, uuid.NewString())
		cc := done.checkout(t)
		if cc.Status != bcp.StatusCompleted || cc.Order == nil || cc.Order.ID == "" {
			t.Fatalf("card complete: %s %+v %+v", cc.Status, cc.Order, cc.Messages)
		}
		if d.name() == "rest" {
			// The merchant signs complete responses on REST too.
			keys, err := (&agentclient.Client{Endpoint: "http://" + e.s.r.PublicAddr + "/bcp/mcp", Transport: &agentclient.Transport{Host: e.alfa}}).BusinessSigningKeys(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := agentclient.VerifyResponse(context.Background(), &agentclient.Response{Status: done.httpStatus, Header: done.header, Body: done.raw}, keys); err != nil {
				t.Fatalf("REST complete response signature: %v", err)
			}
		}
		order := d.do(t, e.alfa, "get_order", cc.Order.ID, nil, "")
		if order.body == nil || order.body["checkout_id"] != cc.ID {
			t.Fatalf("get_order: %s", order.raw)
		}
		return []outcome{done, order}
	}},
	{"errors", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		zero := d.do(t, e.alfa, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 0}}}, "")
		wantProtocolError(t, d, zero, "invalid_params", 400, -32602, "$.checkout.line_items[0].quantity")
		c := d.do(t, e.alfa, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}}}, "").checkout(t)
		withID := d.do(t, e.alfa, "update_checkout", c.ID, map[string]any{"id": "chk_x", "line_items": []any{}}, "")
		wantProtocolError(t, d, withID, "invalid_params", 400, -32602, "$.checkout.id")
		noKey := d.do(t, e.alfa, "cancel_checkout", c.ID, nil, "")
		wantProtocolError(t, d, noKey, "invalid_params", 400, -32602, "$.meta['idempotency-key']")
		badKey := d.do(t, e.alfa, "cancel_checkout", c.ID, nil, "not-a-uuid")
		wantProtocolError(t, d, badKey, "invalid_params", 400, -32602, "$.meta['idempotency-key']")
		unreachable := e.unreachable[d.name()].do(t, e.alfa, "get_checkout", c.ID, nil, "")
		wantProtocolError(t, d, unreachable, "profile_unreachable", 424, -32001, "")
		soldOut := d.do(t, e.alfa, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_out"}, "quantity": 1}}}, "")
		if _, has := soldOut.body["id"]; has || !strings.Contains(string(soldOut.raw), "out_of_stock") {
			t.Fatalf("sold out: %s", soldOut.raw)
		}
		missing := d.do(t, e.alfa, "get_checkout", "chk_nao_existe", nil, "")
		if !strings.Contains(string(missing.raw), `"code":"not_found"`) {
			t.Fatalf("unknown id: %s", missing.raw)
		}
		return []outcome{soldOut, missing}
	}},
	{"idempotency", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		c, _ := e.ready(t, d, e.alfa)
		key := uuid.NewString()
		first := d.do(t, e.alfa, "complete_checkout", c.ID, map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(freshToken())}}}, key)
		if first.checkout(t).Status != bcp.StatusCompleted {
			t.Fatalf("complete: %s", first.raw)
		}
		other := d.do(t, e.alfa, "complete_checkout", c.ID, map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(freshToken())}}}, key)
		wantProtocolError(t, d, other, "idempotency_conflict", 409, -32000, "")
		c2 := d.do(t, e.alfa, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}}}, "").checkout(t)
		ck := uuid.NewString()
		canceled := d.do(t, e.alfa, "cancel_checkout", c2.ID, nil, ck)
		if canceled.checkout(t).Status != bcp.StatusCanceled {
			t.Fatalf("cancel: %s", canceled.raw)
		}
		if again := d.do(t, e.alfa, "cancel_checkout", c2.ID, nil, ck); !jsonEqual(string(again.raw), string(canceled.raw)) {
			t.Fatalf("cancel replay differs")
		}
		return []outcome{first, canceled}
	}},
	{"cross-tenant", func(t *testing.T, e *bindingEnv, d driver) []outcome {
		c := d.do(t, e.alfa, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}},
			"buyer": map[string]any{"email": "segredo@example.com"}}, "").checkout(t)
		other := d.do(t, e.beta, "get_checkout", c.ID, nil, "")
		if !strings.Contains(string(other.raw), `"code":"not_found"`) || strings.Contains(string(other.raw), "segredo") || strings.Contains(string(other.raw), "Caneca") {
			t.Fatalf("cross-tenant get: %s", other.raw)
		}
		own := d.do(t, e.beta, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}, "").checkout(t)
		if totals(own)["subtotal"] != 6990 {
			t.Fatalf("beta price: %v", totals(own))
		}
		return []outcome{other}
	}},
}

// TestOneBehaviourTwoBindings runs every case over MCP and over REST and
// requires equal payloads (ids and timestamps aside) for equal inputs.
func TestOneBehaviourTwoBindings(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost", "beta.localhost")
	e := &bindingEnv{s: s, alfa: "alfa.localhost", beta: "beta.localhost",
		readyAddress: map[string]any{"street_address": "Avenida Paulista, 1000", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01310-100", "address_country": "BR"}}
	unreachableProfile := "http://127.0.0.1:1/agent.json"
	mcpD := mcpDriver{agents: map[string]*agent{}}
	restD := restDriver{addr: s.r.PublicAddr, v: s.v, clients: map[string]*http.Client{}}
	for _, h := range []string{e.alfa, e.beta} {
		mcpD.agents[h] = s.agents[h]
		restD.clients[h] = restClient(t, s, h, s.profile)
	}
	e.unreachable = map[string]driver{
		"mcp":  mcpDriver{agents: map[string]*agent{e.alfa: {t: t, s: agentSession(t, s.r, e.alfa, unreachableProfile), profile: unreachableProfile, v: s.v}}},
		"rest": restDriver{addr: s.r.PublicAddr, v: s.v, clients: map[string]*http.Client{e.alfa: restClient(t, s, e.alfa, unreachableProfile)}},
	}
	for _, c := range bindingCases {
		results := map[string][]any{}
		for _, d := range []driver{mcpD, restD} {
			t.Run(c.name+"/"+d.name(), func(t *testing.T) {
				for _, o := range c.run(t, e, d) {
					var v any
					if err := json.Unmarshal(o.raw, &v); err != nil {
						t.Fatal(err)
					}
					results[d.name()] = append(results[d.name()], normalize(v))
				}
			})
		}
		if !reflect.DeepEqual(results["mcp"], results["rest"]) {
			a, _ := json.Marshal(results["mcp"])
			b, _ := json.Marshal(results["rest"])
			t.Errorf("%s: MCP and REST payloads differ\nmcp:  %s\nrest: %s", c.name, a, b)
		}
	}
}

// restClient is an HTTP client acting for profile at host with a fresh API
// key bound to it.
func restClient(t *testing.T, s *shopper, host, profile string) *http.Client {
	t.Helper()
	key, err := s.r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "e2e-rest"}))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: host}}
}

// Protocol errors only REST has (HTTP-level): authentication, headers,
// routing; and the REST/MCP idempotency scopes.
func TestRESTProtocolErrors(t *testing.T) {
	s := newShopper(t, 0, "gama.localhost")
	host := "gama.localhost"
	base := "http://" + s.r.PublicAddr + "/bcp/rest"
	create := []byte(`{"line_items":[{"item":{"id":"var_can"},"quantity":1}]}`)
	key, err := s.r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: host, AgentProfileUrl: s.profile}))
	if err != nil {
		t.Fatal(err)
	}
	agentHdr := `profile="` + s.profile + `"`
	send := func(method, path string, body []byte, hdr map[string]string) outcome {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Host = host
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return restSend(t, http.DefaultClient, s.v, "create_checkout", req)
	}
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   []byte
		hdr    map[string]string
		status int
		code   string
	}{
		{"no credentials", "POST", "/checkout-sessions", create, map[string]string{"BCP-Agent": agentHdr}, 401, "unauthenticated"},
		{"bad API key", "POST", "/checkout-sessions", create, map[string]string{"BCP-Agent": agentHdr, "X-API-Key": "nope"}, 401, "invalid_api_key"},
		{"profile mismatch", "POST", "/checkout-sessions", create, map[string]string{"BCP-Agent": `profile="https://other.example/agent.json"`, "X-API-Key": key.Msg.GetSecret()}, 403, "profile_mismatch"},
		{"malformed BCP-Agent", "POST", "/checkout-sessions", create, map[string]string{"BCP-Agent": `profile=unquoted url`, "X-API-Key": key.Msg.GetSecret()}, 400, "invalid_profile_url"},
		{"no BCP-Agent", "POST", "/checkout-sessions", create, map[string]string{"X-API-Key": key.Msg.GetSecret()}, 400, "invalid_profile_url"},
		{"body not JSON", "POST", "/checkout-sessions", []byte(`{"line_items":`), map[string]string{"BCP-Agent": agentHdr, "X-API-Key": key.Msg.GetSecret()}, 400, "invalid_params"},
		{"unknown operation", "POST", "/wishlists", create, map[string]string{"BCP-Agent": agentHdr, "X-API-Key": key.Msg.GetSecret()}, 404, "not_found"},
		{"unsigned at a signing tenant is covered by agentauth tests; bearer works", "POST", "/checkout-sessions", create, map[string]string{"UCP-Agent": agentHdr, "Authorization": "Bearer " + key.Msg.GetSecret()}, 201, ""},
	} {
		o := send(tc.method, tc.path, tc.body, tc.hdr)
		if o.httpStatus != tc.status || o.errCode != tc.code {
			t.Errorf("%s: HTTP %d %q, want %d %q (%s)", tc.name, o.httpStatus, o.errCode, tc.status, tc.code, o.raw)
		}
		if tc.status == 401 && o.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
	// Request-Id is echoed.
	o := send("POST", "/checkout-sessions", create, map[string]string{"BCP-Agent": agentHdr, "X-API-Key": key.Msg.GetSecret(), "Request-Id": "1f0c6a9e-2f43-4c1b-9d7e-0d9b5c2b7a11"})
	if o.header.Get("Request-Id") != "1f0c6a9e-2f43-4c1b-9d7e-0d9b5c2b7a11" {
		t.Errorf("Request-Id not echoed: %v", o.header)
	}
	// A malformed agent profile: 422.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ucp": "not a profile"}`))
	}))
	t.Cleanup(bad.Close)
	badClient := restClient(t, s, host, bad.URL+"/agent.json")
	req, _ := http.NewRequest("POST", base+"/checkout-sessions", bytes.NewReader(create))
	if o := restSend(t, badClient, s.v, "create_checkout", req); o.httpStatus != 422 || o.errCode != "profile_malformed" {
		t.Errorf("malformed profile: HTTP %d %s", o.httpStatus, o.raw)
	}
	// The OpenAPI document is public.
	doc := get(t, s.r, "GET", host, "/bcp/rest/openapi.json", nil)
	if doc.status != 200 || !strings.Contains(string(doc.body), `"/checkout-sessions/{id}/complete"`) || !strings.Contains(string(doc.body), "BCP-Agent") {
		t.Errorf("openapi.json: %d %.200s", doc.status, doc.body)
	}

	// Idempotency keys are scoped per binding: one key used over MCP and
	// over REST runs two requests, never a replay or a conflict.
	a := s.agents[host]
	restD := restDriver{addr: s.r.PublicAddr, v: s.v, clients: map[string]*http.Client{host: restClient(t, s, host, s.profile)}}
	mcpD := mcpDriver{agents: map[string]*agent{host: a}}
	shared := uuid.NewString()
	var ids []string
	for _, d := range []driver{mcpD, restD} {
		c := d.do(t, host, "create_checkout", "", map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}, "").checkout(t)
		canceled := d.do(t, host, "cancel_checkout", c.ID, nil, shared).checkout(t)
		if canceled.ID != c.ID || canceled.Status != bcp.StatusCanceled {
			t.Fatalf("%s: cancel with a key used by the other binding: %s %s", d.name(), canceled.ID, canceled.Status)
		}
		ids = append(ids, c.ID)
	}
	if ids[0] == ids[1] {
		t.Fatal("two checkouts expected")
	}
}

// freshToken is a delegated card token the sandbox approves; tokens are
// single use, so every complete gets its own.
func freshToken() string { return "tok_" + strings.ReplaceAll(uuid.NewString(), "-", "") + "4242" }
