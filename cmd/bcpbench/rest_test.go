package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bcpdev/bcp/platform/loadkit"
)

// sameJSON fails unless got is the JSON document want.
func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\ngot  %s\nwant %s", what, got, want)
	}
}

const address = `{"street_address":"Rua Augusta, 500","address_locality":"São Paulo","address_region":"SP","postal_code":"01305-000","address_country":"BR"}`

// The platform's REST requests: the routes under /bcp/rest, the
// idempotency key on complete only, and the bodies the MCP tools take as
// their checkout argument.
func TestRESTRequestsPlatform(t *testing.T) {
	tg := restTarget{base: "http://127.0.0.1:8080/bcp/rest"}
	ctx := context.Background()

	req, err := tg.request(ctx, "create_checkout", "", tg.createBody("a@example.com"), "")
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || req.URL.String() != "http://127.0.0.1:8080/bcp/rest/checkout-sessions" ||
		req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Idempotency-Key") != "" {
		t.Fatalf("create: %s %s %v", req.Method, req.URL, req.Header)
	}
	body, _ := io.ReadAll(req.Body)
	sameJSON(t, "create body", body, `{"line_items":[{"item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"a@example.com"},
		"fulfillment":{"methods":[{"type":"shipping","destinations":[`+address+`]}]}}`)

	var c loadkit.CheckoutView
	if err := json.Unmarshal([]byte(`{"id":"chk_1","status":"incomplete","line_items":[{"id":"li_1"}],
		"fulfillment":{"methods":[{"id":"fm_1","selected_destination_id":"dst_1","groups":[{"id":"fg_1"}]}]}}`), &c); err != nil {
		t.Fatal(err)
	}
	upd, ok := optionBody(&c, "rate_pac", "a@example.com", true)
	if !ok {
		t.Fatal("no option body")
	}
	req, _ = tg.request(ctx, "update_checkout", "chk_1", upd, "")
	if req.Method != "PUT" || req.URL.Path != "/bcp/rest/checkout-sessions/chk_1" {
		t.Fatalf("update: %s %s", req.Method, req.URL)
	}
	sameJSON(t, "update body", upd, `{"line_items":[{"id":"li_1","item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"a@example.com"},
		"fulfillment":{"methods":[{"id":"fm_1","type":"shipping","line_item_ids":["li_1"],"selected_destination_id":"dst_1",
			"groups":[{"id":"fg_1","selected_option_id":"rate_pac"}]}]},
		"discounts":{"codes":["BEMVINDO10"]}}`)
	if _, ok := optionBody(&loadkit.CheckoutView{ID: "chk_1"}, "rate_pac", "a@example.com", true); ok {
		t.Fatal("an option body for a checkout without options")
	}

	pay := tg.completeBody("tok_x_4242")
	req, _ = tg.request(ctx, "complete_checkout", "chk_1", pay, "key-1")
	if req.Method != "POST" || req.URL.Path != "/bcp/rest/checkout-sessions/chk_1/complete" || req.Header.Get("Idempotency-Key") != "key-1" {
		t.Fatalf("complete: %s %s %v", req.Method, req.URL, req.Header)
	}
	sameJSON(t, "complete body", pay, `{"payment":{"instruments":[{"id":"pi_card","handler_id":"card","type":"card",
		"display":{"brand":"visa","last_digits":"4242"},"credential":{"type":"token","token":"tok_x_4242"}}]}}`)

	req, _ = tg.request(ctx, "get_order", "ord_1", nil, "")
	if req.Method != "GET" || req.URL.Path != "/bcp/rest/orders/ord_1" || req.Body != http.NoBody || req.Header.Get("Content-Type") != "" {
		t.Fatalf("get_order: %s %s %v", req.Method, req.URL, req.Header)
	}
	if _, err := tg.request(ctx, "cancel_checkout", "chk_1", nil, ""); err == nil {
		t.Fatal("a request for an operation the flow does not use")
	}
}

// The UCP Node sample's requests: its routes at the root, its product,
// option and code, its required currency and payment, and its
// completion's payment_data for its mock handler.
func TestRESTRequestsUCPNode(t *testing.T) {
	tg := restTarget{base: "http://127.0.0.1:3000", peer: peerUCPNode}
	req, _ := tg.request(context.Background(), "create_checkout", "", tg.createBody("a@example.com"), "")
	if req.URL.String() != "http://127.0.0.1:3000/checkout-sessions" {
		t.Fatalf("create: %s", req.URL)
	}
	body, _ := io.ReadAll(req.Body)
	sameJSON(t, "create body", body, `{"currency":"BRL","line_items":[{"item":{"id":"bouquet_roses"},"quantity":1}],
		"buyer":{"email":"a@example.com"},"payment":{},"fulfillment":{"methods":[{"type":"shipping","destinations":[`+address+`]}]}}`)

	// The sample's answer to that create (as it sent it, abridged).
	var c nodeView
	if err := json.Unmarshal([]byte(`{"currency":"BRL","id":"21d55cf8","status":"incomplete",
		"line_items":[{"id":"line_1","quantity":1,"item":{"id":"bouquet_roses","price":3500}}],
		"fulfillment":{"methods":[{"id":"method_7823","type":"shipping","line_item_ids":["line_1"],
			"destinations":[{"street_address":"Rua Augusta, 500","address_country":"BR","id":"dest_391f"}],"groups":[]}]},
		"totals":[{"type":"subtotal","amount":3500},{"type":"total","amount":3500}]}`), &c); err != nil {
		t.Fatal(err)
	}
	upd, ok := nodeOptionBody(&c, "a@example.com", true)
	if !ok {
		t.Fatal("no option body")
	}
	sameJSON(t, "update body", upd, `{"id":"21d55cf8","currency":"BRL","line_items":[{"id":"line_1","item":{"id":"bouquet_roses"},"quantity":1}],
		"buyer":{"email":"a@example.com"},"payment":{},"discounts":{"codes":["10OFF"]},
		"fulfillment":{"methods":[{"type":"shipping","line_item_ids":["line_1"],"selected_destination_id":"dest_391f",
			"groups":[{"selected_option_id":"exp-ship-intl"}]}]}}`)
	if c.total("total") != 3500 || c.total("fulfillment") != 0 {
		t.Fatalf("totals %+v", c.Totals)
	}
	sameJSON(t, "complete body", tg.completeBody(""), `{"payment_data":{"id":"pi_card","handler_id":"mock_payment_handler","type":"card",
		"brand":"visa","last_digits":"4242","credential":{"type":"token","token":"success_token"}}}`)
}

// fakeNode plays the UCP Node sample on a real listener: it checks each
// step's method, path and idempotency key and answers as the sample does.
func fakeNode(t *testing.T, seen *[]string) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*seen = append(*seen, r.Method+" "+r.URL.Path+" key="+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/checkout-sessions":
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"c1","status":"incomplete","line_items":[{"id":"line_1"}],
				"fulfillment":{"methods":[{"id":"m1","destinations":[{"id":"dest_1"}]}]},"totals":[{"type":"total","amount":3500}]}`)
		case r.Method == "PUT" && r.URL.Path == "/checkout-sessions/c1":
			if !strings.Contains(string(body), `"selected_destination_id":"dest_1"`) {
				w.WriteHeader(422)
				return
			}
			io.WriteString(w, `{"id":"c1","status":"incomplete","totals":[{"type":"fulfillment","amount":3000},{"type":"total","amount":5850}]}`)
		case r.Method == "POST" && r.URL.Path == "/checkout-sessions/c1/complete":
			io.WriteString(w, `{"id":"c1","status":"completed","order_id":"ord_1"}`)
		case r.Method == "GET" && r.URL.Path == "/orders/ord_1":
			io.WriteString(w, `{"id":"ord_1","checkout_id":"c1"}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"detail":"not found"}`)
		}
	}))
}

// One purchase at the (fake) sample: four calls in order, each recorded
// under its operation, the purchase under purchase_card; a refused step
// is counted under its operation and HTTP status.
func TestNodePurchase(t *testing.T) {
	var seen []string
	srv := fakeNode(t, &seen)
	defer srv.Close()
	e := &env{publicAddr: strings.TrimPrefix(srv.URL, "http://"), merchants: []*loadkit.Merchant{{Host: "peer"}}}
	b := &bench{cfg: config{protocol: "rest", peer: peerUCPNode, discount: true}, env: e}
	b.platformAgents = newRESTAgents(restTarget{base: srv.URL, peer: peerUCPNode}, e, false, http.DefaultTransport)
	b.platformAgents.rec = newRecorder()
	rng := rand.New(rand.NewPCG(1, 2))
	if err := b.purchase(context.Background(), rng); err != nil {
		t.Fatalf("purchase: %v (errors %v)", err, b.platformAgents.rec.errs)
	}
	if len(seen) != 4 || seen[0] != "POST /checkout-sessions key=" || seen[1] != "PUT /checkout-sessions/c1 key=" ||
		!strings.HasPrefix(seen[2], "POST /checkout-sessions/c1/complete key=") || len(seen[2]) != len("POST /checkout-sessions/c1/complete key=")+36 ||
		seen[3] != "GET /orders/ord_1 key=" {
		t.Fatalf("requests %q", seen)
	}
	rec := b.platformAgents.rec
	if rec.done.Load() != 1 || len(rec.errs) != 0 {
		t.Fatalf("done %d, errors %v", rec.done.Load(), rec.errs)
	}
	for _, op := range []string{"create_checkout", "update_checkout", "complete_checkout", "get_order", "purchase_card"} {
		if len(rec.lat[op]) != 1 {
			t.Fatalf("%s recorded %d times", op, len(rec.lat[op]))
		}
	}
	// A checkout the sample does not know: 404 on the update.
	b.platformAgents.rec = newRecorder()
	b.platformAgents.rest.base = srv.URL + "/nope"
	err := b.purchase(context.Background(), rng)
	if err == nil || !reflect.DeepEqual(b.platformAgents.rec.errs, map[string]int{"create_checkout:http_404": 1}) {
		t.Fatalf("err %v, errors %v", err, b.platformAgents.rec.errs)
	}
}

// At the platform, a business error (200, ucp.status "error") is a
// failure counted with its message code, and every request carries the
// agent's profile, API key and the merchant's host.
func TestRESTPurchasePlatformBusinessError(t *testing.T) {
	var mu sync.Mutex
	var hdrs []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		hdrs = append(hdrs, h)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/bcp/rest/checkout-sessions":
			w.WriteHeader(201)
			io.WriteString(w, `{"ucp":{"status":"success"},"id":"chk_1","status":"incomplete","line_items":[{"id":"li_1"}],
				"fulfillment":{"methods":[{"id":"fm_1","selected_destination_id":"dst_1","groups":[{"id":"fg_1"}]}]}}`)
		case "/bcp/rest/checkout-sessions/chk_1":
			io.WriteString(w, `{"ucp":{"status":"success"},"id":"chk_1","status":"ready_for_complete"}`)
		case "/bcp/rest/checkout-sessions/chk_1/complete":
			io.WriteString(w, `{"ucp":{"status":"error"},"messages":[{"type":"warning","code":"x"},{"type":"error","code":"payment_declined"}]}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"code":"not_found","content":"no"}`)
		}
	}))
	defer srv.Close()
	e := &env{publicAddr: strings.TrimPrefix(srv.URL, "http://"), profile: "http://127.0.0.1:1/agent.json",
		merchants: []*loadkit.Merchant{{Host: "loja.localhost", PacRate: "rate_pac", APIKey: "bcp_sk_1"}}}
	b := &bench{cfg: config{protocol: "rest", discount: true}, env: e}
	b.platformAgents = newRESTAgents(restTarget{base: srv.URL + "/bcp/rest"}, e, false, http.DefaultTransport)
	b.platformAgents.rec = newRecorder()
	err := b.purchase(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err == nil || !reflect.DeepEqual(b.platformAgents.rec.errs, map[string]int{"complete_checkout:bcp_error:payment_declined": 1}) {
		t.Fatalf("err %v, errors %v", err, b.platformAgents.rec.errs)
	}
	if len(hdrs) != 3 {
		t.Fatalf("%d requests", len(hdrs))
	}
	for i, h := range hdrs {
		if h.Get("Bcp-Agent") != `profile="http://127.0.0.1:1/agent.json"` || h.Get("X-Api-Key") != "bcp_sk_1" || h.Get("Host") != "loja.localhost" {
			t.Fatalf("request %d headers %v", i, h)
		}
	}
	if hdrs[0].Get("Idempotency-Key") != "" || hdrs[2].Get("Idempotency-Key") == "" {
		t.Fatalf("idempotency keys: create %q, complete %q", hdrs[0].Get("Idempotency-Key"), hdrs[2].Get("Idempotency-Key"))
	}
	// An unknown route is a protocol error with its code.
	b.platformAgents.rec = newRecorder()
	b.platformAgents.rest.base = srv.URL + "/other"
	if err := b.purchase(context.Background(), rand.New(rand.NewPCG(1, 2))); err == nil ||
		!reflect.DeepEqual(b.platformAgents.rec.errs, map[string]int{"create_checkout:http_404:not_found": 1}) {
		t.Fatalf("err %v, errors %v", err, b.platformAgents.rec.errs)
	}
}

// restFlags: a peer speaks REST and needs a target; REST buys with a card
// (a --pix-share given is refused, the default dropped) in one update.
func TestRESTFlags(t *testing.T) {
	cfg := config{peer: peerUCPNode, target: "127.0.0.1:3000", protocol: "mcp", pixShare: 0.2, updates: 2}
	if err := restFlags(&cfg, map[string]bool{}); err != nil || cfg.protocol != "rest" || cfg.pixShare != 0 || cfg.updates != 1 {
		t.Fatalf("err %v, cfg %+v", err, cfg)
	}
	for _, c := range []struct {
		cfg config
		set map[string]bool
	}{
		{config{peer: peerUCPNode, protocol: "mcp"}, map[string]bool{}},                                 // no target
		{config{peer: peerUCPNode, target: "x:1", protocol: "mcp"}, map[string]bool{"protocol": true}},  // MCP asked of a peer
		{config{peer: "ucp-python", target: "x:1", protocol: "rest"}, map[string]bool{}},                // another peer
		{config{protocol: "grpc"}, map[string]bool{}},                                                   // another binding
		{config{protocol: "rest", pixShare: 0.2}, map[string]bool{"protocol": true, "pix-share": true}}, // Pix over REST
	} {
		cfg := c.cfg
		if err := restFlags(&cfg, c.set); err == nil {
			t.Errorf("%+v %v: no error", c.cfg, c.set)
		}
	}
	cfg = config{protocol: "mcp", pixShare: 0.2, updates: 2}
	if err := restFlags(&cfg, map[string]bool{}); err != nil || cfg.pixShare != 0.2 || cfg.updates != 2 {
		t.Fatalf("MCP changed: err %v, cfg %+v", err, cfg)
	}
}
