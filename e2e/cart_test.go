package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// cartProfile is an agent profile with checkout, discount and, when cart
// is set, the cart capability (a root: no extends).
func cartProfile(cart bool) string {
	doc := agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.discount")
	if !cart {
		return doc
	}
	return strings.Replace(doc, `"capabilities":{`, `"capabilities":{"br.dev.bcp.shopping.cart":[{"version":"2026-07-28",`+
		`"spec":"https://bcp.dev.br/draft/specification/cart","schema":"https://bcp.dev.br/draft/schemas/shopping/cart.json"}],`, 1)
}

// cartClient drives the cart tools and create_checkout for one agent
// profile over one binding, on every merchant host; every business payload
// is validated against the BCP schemas.
type cartClient struct {
	binding  string
	profile  string
	addr     string
	sessions map[string]*mcp.ClientSession
	clients  map[string]*http.Client
	v        *bcpschema.ToolValidator
	cv       *bcpschema.Validator
}

var cartRoutes = map[string]struct{ method, path string }{
	"create_cart":     {"POST", "/carts"},
	"get_cart":        {"GET", "/carts/{id}"},
	"update_cart":     {"PUT", "/carts/{id}"},
	"cancel_cart":     {"POST", "/carts/{id}/cancel"},
	"create_checkout": {"POST", "/checkout-sessions"},
}

// do runs op; payload is the cart (or, for create_checkout, the checkout).
func (c cartClient) do(t *testing.T, host, op, id string, payload map[string]any, key string) outcome {
	t.Helper()
	var o outcome
	if c.binding == "mcp" {
		meta := map[string]any{"ucp-agent": map[string]any{"profile": c.profile}}
		if key != "" {
			meta["idempotency-key"] = key
		}
		args := map[string]any{"meta": meta}
		if id != "" {
			args["id"] = id
		}
		if payload != nil {
			args[map[bool]string{true: "checkout", false: "cart"}[op == "create_checkout"]] = payload
		}
		res, err := c.sessions[host].CallTool(context.Background(), &mcp.CallToolParams{Name: op, Arguments: args})
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
		if res.IsError {
			t.Fatalf("%s: tool error %v", op, res.Content)
		}
		o.raw, _ = json.Marshal(res.StructuredContent)
	} else {
		route := cartRoutes[op]
		var body io.Reader
		if payload != nil {
			b, _ := json.Marshal(payload)
			body = bytes.NewReader(b)
		}
		req, err := http.NewRequest(route.method, "http://"+c.addr+"/bcp/rest"+strings.Replace(route.path, "{id}", id, 1), body)
		if err != nil {
			t.Fatal(err)
		}
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := c.clients[host].Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		o.raw, _ = io.ReadAll(resp.Body)
		o.httpStatus = resp.StatusCode
		if resp.StatusCode >= 300 {
			var flat struct {
				Code    string   `json:"code"`
				Content string   `json:"content"`
				Paths   []string `json:"paths"`
			}
			if err := json.Unmarshal(o.raw, &flat); err != nil || flat.Code == "" || flat.Content == "" {
				t.Fatalf("%s: HTTP %d with body %s", op, resp.StatusCode, o.raw)
			}
			o.errCode, o.errPaths = flat.Code, flat.Paths
			return o
		}
	}
	if err := json.Unmarshal(o.raw, &o.body); err != nil {
		t.Fatalf("%s: not a JSON object: %s", op, o.raw)
	}
	isErr := o.body["ucp"].(map[string]any)["status"] == "error"
	switch {
	case isErr:
		if err := c.cv.ValidateErrorResponse(o.raw); err != nil {
			t.Fatalf("%s: error_response fails the schema: %v\n%s", op, err, o.raw)
		}
	case op == "create_checkout":
		if err := c.cv.ValidateCheckoutResponse(bcpschema.OpCreate, o.raw); err != nil {
			t.Fatalf("create_checkout: response fails the checkout schema: %v\n%s", err, o.raw)
		}
	default:
		if err := c.v.ValidateResult(op, o.raw); err != nil {
			t.Fatalf("%s: result fails the BCP cart schema: %v\n%s", op, err, o.raw)
		}
	}
	if c.binding == "rest" && !isErr {
		want := http.StatusOK
		if op == "create_cart" || op == "create_checkout" {
			want = http.StatusCreated
		}
		if o.httpStatus != want {
			t.Fatalf("%s: HTTP %d, want %d", op, o.httpStatus, want)
		}
	}
	return o
}

// cartTotals is a payload's totals by type.
func cartTotals(t *testing.T, o outcome) map[string]int64 {
	t.Helper()
	if o.body == nil {
		t.Fatalf("want a payload, got protocol error %s %v", o.errCode, o.errPaths)
	}
	out := map[string]int64{}
	for _, x := range o.body["totals"].([]any) {
		m := x.(map[string]any)
		out[m["type"].(string)] = int64(m["amount"].(float64))
	}
	return out
}

// cartLines is a payload's lines as "item.id×quantity".
func cartLines(o outcome) []string {
	var out []string
	for _, x := range o.body["line_items"].([]any) {
		m := x.(map[string]any)
		out = append(out, fmt.Sprintf("%s×%v", m["item"].(map[string]any)["id"], m["quantity"]))
	}
	return out
}

func wantNotFound(t *testing.T, o outcome, what string) {
	t.Helper()
	if o.body == nil || o.body["ucp"].(map[string]any)["status"] != "error" {
		t.Fatalf("%s: want an error_response not_found, got %s %s", what, o.errCode, o.raw)
	}
	m := o.body["messages"].([]any)[0].(map[string]any)
	if m["code"] != "not_found" || m["path"] != "$.id" {
		t.Fatalf("%s: message %v, want not_found at $.id", what, m)
	}
}

// Carts over MCP and REST on two merchants: create, get, update (full
// replacement) and cancel with exact totals and a discount code; another
// agent and another merchant never see a cart; conversion to a checkout
// carries line items, buyer, codes and totals and is idempotent; canceled
// and converted carts are not found; a cart reserves no stock.
func TestCartOverMCPAndREST(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost", 1000)
	ops := r.ClientsWithToken(operatorToken)

	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(cartProfile(req.URL.Path != "/nocart.json")))
	}))
	t.Cleanup(profiles.Close)
	v, err := edge.NewToolValidator()
	if err != nil {
		t.Fatal(err)
	}
	cv, err := bcpschema.NewValidator(bcpschema.CapCheckout, bcpschema.CapDiscount)
	if err != nil {
		t.Fatal(err)
	}
	client := func(binding, profile string) cartClient {
		c := cartClient{binding: binding, profile: profile, addr: r.PublicAddr, v: v, cv: cv, sessions: map[string]*mcp.ClientSession{}, clients: map[string]*http.Client{}}
		for _, h := range []string{alfa.host, beta.host} {
			if binding == "mcp" {
				c.sessions[h] = agentSession(t, r, h, profile)
				continue
			}
			key, err := ops.Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: h, AgentProfileUrl: profile, Label: "e2e-cart"}))
			if err != nil {
				t.Fatal(err)
			}
			c.clients[h] = &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: h}}
		}
		return c
	}

	// The merchant profile advertises the cart capability (a root).
	preq, _ := http.NewRequest(http.MethodGet, "http://"+r.PublicAddr+"/.well-known/bcp", nil)
	preq.Host = alfa.host
	presp, err := http.DefaultClient.Do(preq)
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		UCP struct {
			Capabilities map[string][]map[string]any `json:"capabilities"`
		} `json:"ucp"`
	}
	if err := json.NewDecoder(presp.Body).Decode(&prof); err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if e := prof.UCP.Capabilities["br.dev.bcp.shopping.cart"]; len(e) != 1 || e[0]["schema"] != "https://bcp.dev.br/draft/schemas/shopping/cart.json" || e[0]["extends"] != nil {
		t.Fatalf("profile capability br.dev.bcp.shopping.cart = %v", e)
	}
	// Discount codes work on carts: the discount extends both.
	if e := prof.UCP.Capabilities["br.dev.bcp.shopping.discount"]; len(e) != 1 || fmt.Sprint(e[0]["extends"]) != "[br.dev.bcp.shopping.checkout br.dev.bcp.shopping.cart]" {
		t.Fatalf("profile capability br.dev.bcp.shopping.discount = %v", e)
	}

	// Prices per merchant: Camiseta M 5990 (beta 6990), Caneca 3990;
	// BEMVINDO10 takes 10% off the items.
	want := map[string]struct{ subtotal, discount, total, updTotal int64 }{
		alfa.host: {2*5990 + 3990, 1597, 15970 - 1597, 3990},
		beta.host: {2*6990 + 3990, 1797, 17970 - 1797, 3990},
	}
	reservations := func() int {
		var n int
		if err := d.Pool.QueryRow(context.Background(), `SELECT count(*) FROM catalog.stock_reservations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, binding := range []string{"mcp", "rest"} {
		t.Run(binding, func(t *testing.T) {
			me := client(binding, profiles.URL+"/agent-"+binding+".json")
			other := client(binding, profiles.URL+"/other-"+binding+".json")
			noCart := client(binding, profiles.URL+"/nocart.json")
			for _, host := range []string{alfa.host, beta.host} {
				w := want[host]
				cart := map[string]any{
					"line_items": []any{
						map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2},
						map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1},
					},
					"buyer":     map[string]any{"email": "ana@example.com"},
					"discounts": map[string]any{"codes": []any{"BEMVINDO10"}},
				}
				created := me.do(t, host, "create_cart", "", cart, uuid.NewString())
				tot := cartTotals(t, created)
				if tot["subtotal"] != w.subtotal || tot["total"] != w.total {
					t.Fatalf("%s: create_cart totals %v, want subtotal %d total %d\n%s", host, tot, w.subtotal, w.total, created.raw)
				}
				id, _ := created.body["id"].(string)
				if !strings.HasPrefix(id, "cart_") || created.body["currency"] != "BRL" {
					t.Fatalf("%s: cart id %q currency %v", host, id, created.body["currency"])
				}
				for _, k := range []string{"status", "payment", "fulfillment"} {
					if _, ok := created.body[k]; ok {
						t.Errorf("%s: a cart has no %s: %s", host, k, created.raw)
					}
				}
				applied, _ := created.body["discounts"].(map[string]any)["applied"].([]any)
				if len(applied) != 1 || int64(applied[0].(map[string]any)["amount"].(float64)) != w.discount {
					t.Fatalf("%s: discounts.applied = %v, want one of %d", host, applied, w.discount)
				}
				if caps := created.body["ucp"].(map[string]any)["capabilities"].(map[string]any); caps["br.dev.bcp.shopping.cart"] == nil || caps["br.dev.bcp.shopping.discount"] == nil {
					t.Errorf("%s: response capabilities %v lack the cart or the discount", host, caps)
				}
				if n := reservations(); n != 0 {
					t.Fatalf("a cart reserved stock: %d reservations", n)
				}

				got := me.do(t, host, "get_cart", id, nil, "")
				if !jsonEqual(string(got.raw), string(created.raw)) {
					t.Errorf("%s: get_cart differs from create_cart:\n%s\n%s", host, got.raw, created.raw)
				}
				// Another agent of the same merchant, and the same agent on the
				// other merchant, learn nothing of it.
				wantNotFound(t, other.do(t, host, "get_cart", id, nil, ""), "another agent's get_cart")
				otherHost := map[string]string{alfa.host: beta.host, beta.host: alfa.host}[host]
				wantNotFound(t, me.do(t, otherHost, "get_cart", id, nil, ""), "another merchant's get_cart")
				wantNotFound(t, other.do(t, host, "update_cart", id, cart, ""), "another agent's update_cart")
				// Without the cart negotiated there is no cart.
				nc := noCart.do(t, host, "get_cart", id, nil, "")
				if m := nc.body["messages"].([]any)[0].(map[string]any); m["code"] != "capabilities_incompatible" {
					t.Fatalf("%s: get_cart without the cart capability: %s", host, nc.raw)
				}

				// Full replacement: one Caneca, no code; the key replays.
				upd := map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}}}
				key := uuid.NewString()
				u := me.do(t, host, "update_cart", id, upd, key)
				if tot := cartTotals(t, u); tot["total"] != w.updTotal || tot["subtotal"] != w.updTotal {
					t.Fatalf("%s: update_cart totals %v, want %d", host, tot, w.updTotal)
				}
				if _, ok := u.body["buyer"]; ok {
					t.Errorf("%s: update_cart kept the buyer it was not sent", host)
				}
				if again := me.do(t, host, "update_cart", id, upd, key); !jsonEqual(string(again.raw), string(u.raw)) {
					t.Errorf("%s: update_cart replay differs", host)
				}
				if c := me.do(t, host, "update_cart", id, cart, key); c.errCode != "idempotency_conflict" {
					t.Errorf("%s: same key, other cart: %s %s", host, c.errCode, c.raw)
				}
				// Schema violations are precise.
				bad := me.do(t, host, "update_cart", id, map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 0}}}, "")
				if bad.errCode != "invalid_params" || len(bad.errPaths) == 0 || bad.errPaths[0] != "$.cart.line_items[0].quantity" || (binding == "mcp" && bad.rpcCode != -32602) || (binding == "rest" && bad.httpStatus != 400) {
					t.Errorf("%s: quantity 0: %s %v rpc %d http %d", host, bad.errCode, bad.errPaths, bad.rpcCode, bad.httpStatus)
				}

				// Cancel: returns the cart, then it is not found.
				if c := me.do(t, host, "cancel_cart", id, nil, ""); c.errCode != "invalid_params" {
					t.Errorf("%s: cancel_cart without a key: %s", host, c.errCode)
				}
				cancelKey := uuid.NewString()
				if c := me.do(t, host, "cancel_cart", id, nil, cancelKey); c.body["id"] != id {
					t.Fatalf("%s: cancel_cart: %s", host, c.raw)
				}
				wantNotFound(t, me.do(t, host, "get_cart", id, nil, ""), "a canceled cart")
				wantNotFound(t, me.do(t, host, "update_cart", id, upd, ""), "update of a canceled cart")

				// Conversion: the cart's lines, buyer and codes win over the
				// request's; converting twice returns the same checkout.
				c2 := me.do(t, host, "create_cart", "", cart, "")
				cartID := c2.body["id"].(string)
				conv := map[string]any{
					"cart_id":    cartID,
					"line_items": []any{map[string]any{"item": map[string]any{"id": "var_out"}, "quantity": 5}},
					"buyer":      map[string]any{"email": "outro@example.com"},
				}
				if o := other.do(t, host, "create_checkout", "", conv, ""); o.body == nil || o.body["ucp"].(map[string]any)["status"] != "error" {
					t.Fatalf("%s: another agent converted the cart: %s", host, o.raw)
				}
				chk := me.do(t, host, "create_checkout", "", conv, "")
				if got, wantLines := cartLines(chk), []string{"var_cam×2", "var_can×1"}; fmt.Sprint(got) != fmt.Sprint(wantLines) {
					t.Fatalf("%s: converted checkout lines %v, want %v", host, got, wantLines)
				}
				if tot := cartTotals(t, chk); tot["subtotal"] != w.subtotal || tot["total"] != w.total {
					t.Fatalf("%s: converted checkout totals %v, want subtotal %d total %d", host, tot, w.subtotal, w.total)
				}
				if b := chk.body["buyer"].(map[string]any); b["email"] != "ana@example.com" {
					t.Errorf("%s: converted checkout buyer %v", host, b)
				}
				if codes := chk.body["discounts"].(map[string]any)["codes"].([]any); len(codes) != 1 || codes[0] != "BEMVINDO10" {
					t.Errorf("%s: converted checkout codes %v", host, codes)
				}
				chkID := chk.body["id"].(string)
				if again := me.do(t, host, "create_checkout", "", conv, ""); again.body["id"] != chkID {
					t.Fatalf("%s: second conversion opened %v, want %s: %s %s", host, again.body["id"], chkID, again.errCode, again.raw)
				}
				wantNotFound(t, me.do(t, host, "get_cart", cartID, nil, ""), "a converted cart")
				if n := reservations(); n != 0 {
					t.Fatalf("conversion reserved stock before completion: %d reservations", n)
				}

				// {"cart_id"} alone converts (what UCP's conformance suite
				// sends): the cart's lines, buyer and code, with the code's
				// discount.
				c3 := me.do(t, host, "create_cart", "", cart, "")
				alone := me.do(t, host, "create_checkout", "", map[string]any{"cart_id": c3.body["id"]}, "")
				if alone.errCode != "" || alone.body["ucp"].(map[string]any)["status"] == "error" {
					t.Fatalf("%s: create_checkout with cart_id alone: %s %v %s", host, alone.errCode, alone.errPaths, alone.raw)
				}
				if got, wantLines := cartLines(alone), []string{"var_cam×2", "var_can×1"}; fmt.Sprint(got) != fmt.Sprint(wantLines) {
					t.Fatalf("%s: checkout from cart_id alone: lines %v, want %v", host, got, wantLines)
				}
				if tot := cartTotals(t, alone); tot["subtotal"] != w.subtotal || tot["items_discount"] != -w.discount || tot["total"] != w.total {
					t.Fatalf("%s: checkout from cart_id alone: totals %v, want subtotal %d items_discount %d total %d", host, tot, w.subtotal, -w.discount, w.total)
				}
				ds := alone.body["discounts"].(map[string]any)
				applied, _ = ds["applied"].([]any)
				if fmt.Sprint(ds["codes"]) != "[BEMVINDO10]" || len(applied) != 1 || applied[0].(map[string]any)["code"] != "BEMVINDO10" ||
					int64(applied[0].(map[string]any)["amount"].(float64)) != w.discount || alone.body["buyer"].(map[string]any)["email"] != "ana@example.com" {
					t.Fatalf("%s: checkout from cart_id alone: discounts %v, buyer %v", host, ds, alone.body["buyer"])
				}
				wantNotFound(t, me.do(t, host, "get_cart", c3.body["id"].(string), nil, ""), "a cart converted by cart_id alone")
			}
		})
	}
}
