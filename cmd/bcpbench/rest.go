package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/platform/loadkit"
)

// The REST flow (--protocol rest): the purchase an agent makes over the
// UCP REST binding, the same against the platform's REST edge
// (/bcp/rest on each merchant's host) and against a peer (--peer
// ucp-node: the UCP Node.js sample, github.com/Universal-Commerce-Protocol/
// samples rest/nodejs, at its root):
//
//	POST /checkout-sessions              line items, buyer, shipping address (201)
//	PUT  /checkout-sessions/{id}         the shipping option and a discount code
//	POST /checkout-sessions/{id}/complete  a card token, Idempotency-Key
//	GET  /orders/{id}                    the order the completion created
//
// Each call is timed and counted under its operation's MCP tool name
// (create_checkout, update_checkout, complete_checkout, get_order), and a
// whole purchase under purchase_card, as over MCP (whose purchase reads
// no order, and sends the address in an update of its own unless
// --updates 1: per purchase, the two bindings' figures differ by those
// calls). The bodies differ only
// where the two servers do: the sample's catalogue (its product
// bouquet_roses, its shipping option exp-ship-intl for an address outside
// the US, its code 10OFF), its required members (currency, payment) and
// its completion body (payment_data with its mock_payment_handler's
// success_token, where the platform takes payment.instruments with a
// delegated card token).

// peerUCPNode is --peer's one value: the UCP Node.js sample.
const peerUCPNode = "ucp-node"

// The UCP Node sample's catalogue and mock payment handler.
const (
	nodeProduct  = "bouquet_roses"
	nodeOption   = "exp-ship-intl" // its one option for an address outside the US
	nodeDiscount = "10OFF"
	nodeHandler  = "mock_payment_handler"
	nodeToken    = "success_token"
)

// restTarget is where the REST flow goes and how its bodies look.
type restTarget struct {
	// base is the binding's root: http://host:port/bcp/rest for the
	// platform, http://host:port for the sample.
	base string
	// peer is "" (the platform) or peerUCPNode.
	peer string
}

// restPaths are the REST routes of the flow's operations.
var restPaths = map[string]struct{ method, path string }{
	"create_checkout":   {http.MethodPost, "/checkout-sessions"},
	"update_checkout":   {http.MethodPut, "/checkout-sessions/{id}"},
	"complete_checkout": {http.MethodPost, "/checkout-sessions/{id}/complete"},
	"get_order":         {http.MethodGet, "/orders/{id}"},
}

// request builds op's request on resource id (none for create) with body
// (nil for none) and the idempotency key (none when "").
func (t restTarget) request(ctx context.Context, op, id string, body []byte, key string) (*http.Request, error) {
	route, ok := restPaths[op]
	if !ok {
		return nil, fmt.Errorf("no REST route for %s", op)
	}
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, route.method, t.base+strings.Replace(route.path, "{id}", id, 1), r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req, nil
}

// createBody is the create request: one item, the buyer and the shipping
// address.
func (t restTarget) createBody(email string) []byte {
	if t.peer == peerUCPNode {
		return mustJSON(map[string]any{
			"currency":    "BRL",
			"line_items":  []any{map[string]any{"item": map[string]any{"id": nodeProduct}, "quantity": 1}},
			"buyer":       map[string]any{"email": email},
			"payment":     map[string]any{},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{loadkit.Address}}}},
		})
	}
	return mustJSON(loadkit.CreateShippedArgs(email)["checkout"])
}

// optionBody is the platform's update that picks the shipping option
// rate (and, with discount, applies the code BEMVINDO10), built from the
// created checkout c; ok is false when c shows no option to pick.
func optionBody(c *loadkit.CheckoutView, rate, email string, discount bool) ([]byte, bool) {
	args, ok := loadkit.OptionArgs(c, rate, email, discount)
	if !ok {
		return nil, false
	}
	return mustJSON(args["checkout"]), true
}

// nodeOptionBody is the sample's: it computes its options once a
// destination is selected, so the update names the created destination
// and the line item, and picks the option (and the code 10OFF).
func nodeOptionBody(c *nodeView, email string, discount bool) ([]byte, bool) {
	if len(c.LineItems) != 1 || len(c.Fulfillment.Methods) == 0 || len(c.Fulfillment.Methods[0].Destinations) == 0 {
		return nil, false
	}
	li := c.LineItems[0].ID
	body := map[string]any{
		"id":         c.ID,
		"currency":   "BRL",
		"line_items": []any{map[string]any{"id": li, "item": map[string]any{"id": nodeProduct}, "quantity": 1}},
		"buyer":      map[string]any{"email": email},
		"payment":    map[string]any{},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "line_item_ids": []any{li},
			"selected_destination_id": c.Fulfillment.Methods[0].Destinations[0].ID,
			"groups":                  []any{map[string]any{"selected_option_id": nodeOption}}}}},
	}
	if discount {
		body["discounts"] = map[string]any{"codes": []any{nodeDiscount}}
	}
	return mustJSON(body), true
}

// completeBody pays with a card: a delegated token for the platform (the
// simulated processor approves tokens ending in 4242; single use), the
// mock handler's approving token for the sample.
func (t restTarget) completeBody(token string) []byte {
	if t.peer == peerUCPNode {
		return mustJSON(map[string]any{"payment_data": map[string]any{"id": "pi_card", "handler_id": nodeHandler, "type": "card",
			"brand": "visa", "last_digits": "4242", "credential": map[string]any{"type": "token", "token": nodeToken}}})
	}
	return mustJSON(loadkit.CompleteArgs("", "", loadkit.CardInstrument(token))["checkout"])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// nodeView is what the flow reads of the sample's checkout.
type nodeView struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	LineItems []struct {
		ID string `json:"id"`
	} `json:"line_items"`
	Fulfillment struct {
		Methods []struct {
			Destinations []struct {
				ID string `json:"id"`
			} `json:"destinations"`
		} `json:"methods"`
	} `json:"fulfillment"`
	Totals []struct {
		Type   string `json:"type"`
		Amount int64  `json:"amount"`
	} `json:"totals"`
	OrderID string `json:"order_id"`
}

// total is the checkout's total of type typ (0 when it has none).
func (v *nodeView) total(typ string) int64 {
	for _, t := range v.Totals {
		if t.Type == typ {
			return t.Amount
		}
	}
	return 0
}

// orderView is what the flow reads of an order.
type orderView struct {
	ID         string `json:"id"`
	CheckoutID string `json:"checkout_id"`
}

// newRESTAgents are the agents of the REST flow at t: through the
// platform's edge, one client per merchant carrying the agent's identity
// and credentials (BCP-Agent with the agent profile, the API key or an
// RFC 9421 signature, the merchant's Host), as newAgents' MCP clients
// do; to the peer, one plain client (the sample checks no credentials,
// and is not sent UCP-Agent: with an http profile URL it would fetch the
// profile on every create and update).
func newRESTAgents(t restTarget, e *env, signed bool, base http.RoundTripper) *agents {
	a := &agents{endpoint: t.base, base: base, rest: t}
	if t.peer != "" {
		a.http = []*http.Client{{Transport: base, Timeout: 30 * time.Second}}
		return a
	}
	for _, m := range e.merchants {
		tr := &agentclient.Transport{Base: base, ProfileURL: e.profile, Host: m.Host}
		if signed {
			tr.Key = e.key
		} else {
			tr.APIKey = m.APIKey
		}
		// The timeout as a context deadline (over a wrapped transport,
		// http.Client's Timeout costs a goroutine and a timer per request).
		a.http = append(a.http, &http.Client{Transport: &httpdeadline.Transport{Next: tr, Timeout: 30 * time.Second}})
	}
	return a
}

// restCall sends op on resource id with body and key (restTarget.request)
// to merchant, decodes a successful answer into v and records its latency
// under op. Every failure is counted under op:code, as over MCP:
// "transport", "http_<status>[:code]" (the platform's protocol errors
// carry a code), "bad_result", and the platform's business errors
// (200 with ucp.status "error") "bcp_error[:<first error message code>]".
func (a *agents) restCall(ctx context.Context, merchant int, op, id string, body []byte, key string, v any) error {
	req, err := a.rest.request(ctx, op, id, body, key)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := a.http[merchant].Do(req)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	d := time.Since(start)
	fail := func(code string) error {
		a.rec.error(op + ":" + code)
		if debug {
			logf("%s: %s: %s", op, code, raw)
		}
		return &callError{code}
	}
	switch {
	case err != nil:
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return ctx.Err() // the phase ended mid-call: not an error of the server
		}
		return fail("transport")
	case resp.StatusCode >= 300:
		code := "http_" + strconv.Itoa(resp.StatusCode)
		var flat struct {
			Code string `json:"code"`
		}
		if segjson.Unmarshal(raw, &flat) == nil && flat.Code != "" {
			code += ":" + flat.Code
		}
		return fail(code)
	}
	if v != nil {
		if segjson.Unmarshal(raw, v) != nil {
			return fail("bad_result")
		}
		if c, ok := v.(*loadkit.CheckoutView); ok && c.UCP.Status == "error" {
			code := "bcp_error"
			for _, m := range c.Messages {
				if m.Type == "error" {
					code += ":" + m.Code
					break
				}
			}
			return fail(code)
		}
	}
	a.rec.observe(op, d)
	return nil
}

const benchEmail = "bench@example.com"

// restPurchase is the REST flow's purchase (see the top of this file) at
// a random merchant of the platform, or at the peer.
func (b *bench) restPurchase(ctx context.Context, rng *rand.Rand) error {
	a := b.platformAgents
	if a.rest.peer == peerUCPNode {
		return b.nodePurchase(ctx, rng)
	}
	mi := rng.IntN(len(b.env.merchants))
	m := b.env.merchants[mi]
	start := time.Now()
	var c loadkit.CheckoutView
	if err := a.restCall(ctx, mi, "create_checkout", "", a.rest.createBody(benchEmail), "", &c); err != nil {
		return err
	}
	id := c.ID
	body, ok := optionBody(&c, m.PacRate, benchEmail, b.cfg.discount)
	if !ok {
		return b.unexpected("create_checkout", "no_shipping_options")
	}
	c = loadkit.CheckoutView{}
	if err := a.restCall(ctx, mi, "update_checkout", id, body, "", &c); err != nil {
		return err
	}
	if c.Status != "ready_for_complete" {
		return b.unexpected("update_checkout", "not_ready:"+c.Status)
	}
	c = loadkit.CheckoutView{}
	pay := a.rest.completeBody(fmt.Sprintf("tok_bench_%016x_4242", rng.Uint64()))
	if err := a.restCall(ctx, mi, "complete_checkout", id, pay, agentclient.NewIdempotencyKey(), &c); err != nil {
		return err
	}
	if c.Status != "completed" || c.Order == nil || c.Order.ID == "" {
		return b.unexpected("complete_checkout", "card_not_completed:"+c.Status)
	}
	var o orderView
	if err := a.restCall(ctx, mi, "get_order", c.Order.ID, nil, "", &o); err != nil {
		return err
	}
	if o.ID != c.Order.ID || o.CheckoutID != id {
		return b.unexpected("get_order", "other_order")
	}
	a.rec.observe("purchase_card", time.Since(start))
	a.rec.done.Add(1)
	return nil
}

// nodePurchase is the same purchase at the UCP Node sample.
func (b *bench) nodePurchase(ctx context.Context, _ *rand.Rand) error {
	a := b.platformAgents
	start := time.Now()
	var c nodeView
	if err := a.restCall(ctx, 0, "create_checkout", "", a.rest.createBody(benchEmail), "", &c); err != nil {
		return err
	}
	id := c.ID
	body, ok := nodeOptionBody(&c, benchEmail, b.cfg.discount)
	if !ok {
		return b.unexpected("create_checkout", "no_destination")
	}
	c = nodeView{}
	if err := a.restCall(ctx, 0, "update_checkout", id, body, "", &c); err != nil {
		return err
	}
	if c.total("fulfillment") == 0 {
		return b.unexpected("update_checkout", "no_option_selected")
	}
	c = nodeView{}
	if err := a.restCall(ctx, 0, "complete_checkout", id, a.rest.completeBody(""), agentclient.NewIdempotencyKey(), &c); err != nil {
		return err
	}
	if c.Status != "completed" || c.OrderID == "" {
		return b.unexpected("complete_checkout", "card_not_completed:"+c.Status)
	}
	var o orderView
	if err := a.restCall(ctx, 0, "get_order", c.OrderID, nil, "", &o); err != nil {
		return err
	}
	if o.ID != c.OrderID || o.CheckoutID != id {
		return b.unexpected("get_order", "other_order")
	}
	a.rec.observe("purchase_card", time.Since(start))
	a.rec.done.Add(1)
	return nil
}

// restCreateOnly is the create_checkout phase over REST: the purchase's
// create.
func (b *bench) restCreateOnly(ctx context.Context, rng *rand.Rand) error {
	a := b.platformAgents
	mi := rng.IntN(len(b.env.merchants))
	var v any
	if a.rest.peer == "" {
		v = &loadkit.CheckoutView{}
	}
	if err := a.restCall(ctx, mi, "create_checkout", "", a.rest.createBody(benchEmail), "", v); err != nil {
		return err
	}
	a.rec.done.Add(1)
	return nil
}

// startPeerEnv is the environment of --peer: the peer at target (its
// discovery document must answer), one pseudo-merchant (the sample is one
// store) and the peer's processes, whose CPU the figures count. Nothing
// is seeded: the sample comes with its catalogue.
func startPeerEnv(ctx context.Context, target, pids string) (*env, error) {
	e := &env{publicAddr: target, merchants: []*loadkit.Merchant{{Host: target}}}
	if pids != "" {
		e.targetPIDs = strings.Split(pids, ",")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/.well-known/ucp", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("--peer at %s: %w", target, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--peer at %s: GET /.well-known/ucp answered %s", target, resp.Status)
	}
	logf("peer %s at %s (CPU of pids %q)", peerUCPNode, target, pids)
	return e, nil
}
