package devenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// DemoHistory is what SeedDemoHistory bought for the demo merchant.
type DemoHistory struct {
	Skipped    bool // the merchant already had checkouts: nothing was done
	Checkouts  int
	Orders     int
	GMV        int64 // sum of the orders' totals, centavos
	PixPending int
	Canceled   int
	Incomplete int
	Shipped    int
	Refunded   int64 // centavos
}

// String is the banner line.
func (h *DemoHistory) String() string {
	if h.Skipped {
		return "demo history: kept (the demo merchant already has checkouts)"
	}
	return fmt.Sprintf("demo history: %d orders (%s), %d checkouts (%d Pix pending, %d canceled, %d incomplete), %d shipped, %s refunded",
		h.Orders, money.FormatBRL(h.GMV), h.Checkouts, h.PixPending, h.Canceled, h.Incomplete, h.Shipped, money.FormatBRL(h.Refunded))
}

// What a demo purchase ends as.
const (
	endCard       = "card"        // card approved, completed
	endPix        = "pix"         // Pix paid at the PSP simulator, completed
	endPixPending = "pix_pending" // Pix charge issued, never paid
	endCanceled   = "canceled"    // ready, then canceled by the agent
	endIncomplete = "incomplete"  // created only
)

type demoLine struct {
	variant string
	qty     int64
}

type demoPurchase struct {
	first, last, email string
	lines              []demoLine
	shipping           string // option title: PAC or SEDEX
	discount           bool   // BEMVINDO10
	end                string
	ship               bool  // a shipped fulfillment event afterwards
	refund             int64 // a partial refund afterwards, centavos
	reason             string
}

// demoPurchases is the demo merchant's first day: nine checkouts by the
// demo agent (distinct buyers: BEMVINDO10 is once per buyer).
var demoPurchases = []demoPurchase{
	{first: "Ana", last: "Souza", email: "ana.souza@example.com", lines: []demoLine{{"var_camiseta_m", 2}, {"var_caneca_350", 1}},
		shipping: "PAC", discount: true, end: endCard, ship: true},
	{first: "Bruno", last: "Lima", email: "bruno.lima@example.com", lines: []demoLine{{"var_cafe_250", 2}}, shipping: "SEDEX", end: endCard},
	{first: "Carla", last: "Mendes", email: "carla.mendes@example.com", lines: []demoLine{{"var_camiseta_p", 1}, {"var_caneca_350", 1}},
		shipping: "PAC", end: endCard, refund: 3990, reason: "Caneca chegou quebrada"},
	{first: "Diego", last: "Alves", email: "diego.alves@example.com", lines: []demoLine{{"var_camiseta_g", 1}}, shipping: "SEDEX", end: endCard},
	{first: "Elisa", last: "Rocha", email: "elisa.rocha@example.com", lines: []demoLine{{"var_cafe_250", 1}, {"var_caneca_350", 1}},
		shipping: "PAC", discount: true, end: endPix},
	{first: "Fábio", last: "Costa", email: "fabio.costa@example.com", lines: []demoLine{{"var_camiseta_p", 3}}, shipping: "PAC", end: endPix},
	{first: "Gabriela", last: "Nunes", email: "gabriela.nunes@example.com", lines: []demoLine{{"var_caneca_350", 2}}, shipping: "PAC", end: endPixPending},
	{first: "Henrique", last: "Dias", email: "henrique.dias@example.com", lines: []demoLine{{"var_cafe_250", 1}}, shipping: "SEDEX", end: endCanceled},
	{first: "Isabela", last: "Ferreira", email: "isabela.ferreira@example.com", lines: []demoLine{{"var_camiseta_m", 1}}, end: endIncomplete},
}

var demoAddress = map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP",
	"postal_code": "01305-000", "address_country": "BR"}

// SeedDemoHistory gives a demo merchant without checkouts a day of
// history, bought by the demo agent over MCP on the public listener
// (publicAddr) with its API key, as any agent would: card and Pix
// purchases (Pix paid at the PSP simulator), a Pix left pending, a
// canceled and an incomplete checkout; then the merchant ships one order
// and partly refunds another through the orders service. Nothing is
// backdated: it all happens now.
func SeedDemoHistory(ctx context.Context, c *platform.Clients, tenantID, publicAddr, apiKey, agentProfile string) (*DemoHistory, error) {
	tid, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, err
	}
	tctx := tenancy.With(ctx, tid)
	existing, err := c.Checkout.ListCheckouts(tctx, connect.NewRequest(&checkoutv1.ListCheckoutsRequest{PageSize: 1}))
	if err != nil {
		return nil, fmt.Errorf("list checkouts: %w", err)
	}
	if len(existing.Msg.GetCheckouts()) > 0 {
		return &DemoHistory{Skipped: true}, nil
	}
	_, port, err := net.SplitHostPort(publicAddr)
	if err != nil {
		return nil, err
	}
	a := &demoAgent{c: c, tctx: tctx, client: &agentclient.Client{
		Endpoint:  "http://" + net.JoinHostPort("127.0.0.1", port) + "/bcp/mcp",
		Transport: &agentclient.Transport{Base: http.DefaultTransport, ProfileURL: agentProfile, Host: DemoDomain, APIKey: apiKey},
		Timeout:   10 * time.Second,
	}}
	h := &DemoHistory{}
	for _, p := range demoPurchases {
		if err := a.buy(ctx, p, h); err != nil {
			return h, fmt.Errorf("%s: %w", p.email, err)
		}
	}
	return h, nil
}

type demoAgent struct {
	c      *platform.Clients
	tctx   context.Context
	client *agentclient.Client
}

// call runs one tool and decodes the checkout; protocol errors and
// error answers are errors.
func (a *demoAgent) call(ctx context.Context, tool string, args map[string]any) (*bcp.Checkout, error) {
	resp, err := a.client.CallTool(ctx, tool, args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", tool, resp.Status, strings.TrimSpace(string(resp.Body)))
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %w", tool, resp.Error)
	}
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	var co bcp.Checkout
	if err := json.Unmarshal(resp.Result, &res); err != nil || json.Unmarshal(res.StructuredContent, &co) != nil {
		return nil, fmt.Errorf("%s: unreadable answer", tool)
	}
	if res.IsError || (co.UCP != nil && co.UCP.Status == "error") {
		return nil, fmt.Errorf("%s: error answer: %s", tool, messages(co.Messages))
	}
	return &co, nil
}

func messages(ms []bcp.Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Type+" "+m.Code+" "+m.Path+": "+m.Content)
	}
	return strings.Join(s, "; ")
}

func (a *demoAgent) buy(ctx context.Context, p demoPurchase, h *DemoHistory) error {
	buyer := map[string]any{"first_name": p.first, "last_name": p.last, "email": p.email}
	var lines []any
	for _, l := range p.lines {
		lines = append(lines, map[string]any{"item": map[string]any{"id": l.variant}, "quantity": l.qty})
	}
	co, err := a.call(ctx, "create_checkout", map[string]any{"checkout": map[string]any{"line_items": lines, "buyer": buyer}})
	if err != nil {
		return err
	}
	h.Checkouts++
	if p.end == endIncomplete {
		if co.Status != bcp.StatusIncomplete {
			return fmt.Errorf("created %s, want incomplete", co.Status)
		}
		h.Incomplete++
		return nil
	}
	// update_checkout replaces the checkout: every line (by id) and the
	// buyer go again each time.
	lines, ids := nil, []any{}
	for i, li := range co.LineItems {
		lines = append(lines, map[string]any{"id": li.ID, "item": map[string]any{"id": li.Item.ID}, "quantity": p.lines[i].qty})
		ids = append(ids, li.ID)
	}
	body := map[string]any{"line_items": lines, "buyer": buyer,
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": bcp.MethodShipping, "line_item_ids": ids, "destinations": []any{demoAddress}}}}}
	if co, err = a.call(ctx, "update_checkout", map[string]any{"id": co.ID, "checkout": body}); err != nil {
		return err
	}
	if co.Fulfillment == nil || len(co.Fulfillment.Methods) != 1 || len(co.Fulfillment.Methods[0].Groups) != 1 || co.Fulfillment.Methods[0].SelectedDestinationID == nil {
		return fmt.Errorf("no shipping group after the address (%s)", messages(co.Messages))
	}
	m, g := co.Fulfillment.Methods[0], co.Fulfillment.Methods[0].Groups[0]
	option := ""
	for _, o := range g.Options {
		if o.Title == p.shipping {
			option = o.ID
		}
	}
	if option == "" {
		return fmt.Errorf("no %s shipping option", p.shipping)
	}
	body["fulfillment"] = map[string]any{"methods": []any{map[string]any{"id": m.ID, "type": bcp.MethodShipping, "line_item_ids": ids,
		"selected_destination_id": *m.SelectedDestinationID, "groups": []any{map[string]any{"id": g.ID, "selected_option_id": option}}}}}
	if p.discount {
		body["discounts"] = map[string]any{"codes": []any{"BEMVINDO10"}}
	}
	if co, err = a.call(ctx, "update_checkout", map[string]any{"id": co.ID, "checkout": body}); err != nil {
		return err
	}
	if co.Status != bcp.StatusReadyForComplete {
		return fmt.Errorf("status %s after shipping, want ready_for_complete (%s)", co.Status, messages(co.Messages))
	}
	id := co.ID
	key := map[string]any{"idempotency-key": agentclient.NewIdempotencyKey()}
	var inst map[string]any
	switch p.end {
	case endCanceled:
		if co, err = a.call(ctx, "cancel_checkout", map[string]any{"id": id, "meta": key}); err != nil {
			return err
		}
		if co.Status != bcp.StatusCanceled {
			return fmt.Errorf("status %s after cancel", co.Status)
		}
		h.Canceled++
		return nil
	case endCard:
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		// The sandbox processor approves tokens ending in 4242; tokens
		// are single use.
		inst = map[string]any{"id": "pi_card", "handler_id": "cartao_demo", "type": "card",
			"display":    map[string]any{"brand": "visa", "last_digits": "4242"},
			"credential": map[string]any{"type": "token", "token": "tok_demo_" + hex.EncodeToString(b) + "_4242"}}
	default:
		inst = map[string]any{"id": "pi_pix", "handler_id": "pix_demo", "type": "pix"}
	}
	co, err = a.call(ctx, "complete_checkout", map[string]any{"id": id, "meta": key,
		"checkout": map[string]any{"payment": map[string]any{"instruments": []any{inst}}}})
	if err != nil {
		return err
	}
	if p.end != endCard {
		att := pixAttempt(co)
		if co.Status != bcp.StatusCompleteInProgress || att == "" {
			return fmt.Errorf("Pix: status %s, attempt %q", co.Status, att)
		}
		if p.end == endPixPending {
			h.PixPending++
			return nil
		}
		// The buyer pays at the (simulated) bank.
		if _, err := a.c.Payments.SimulatePixPayment(a.tctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: att})); err != nil {
			return fmt.Errorf("pay Pix: %w", err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); co.Status == bcp.StatusCompleteInProgress && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if co, err = a.call(ctx, "get_checkout", map[string]any{"id": id}); err != nil {
			return err
		}
	}
	if co.Status != bcp.StatusCompleted || co.Order == nil {
		return fmt.Errorf("status %s after payment, want completed with an order (%s)", co.Status, messages(co.Messages))
	}
	h.Orders++
	for _, t := range co.Totals {
		if t.Type == "total" {
			h.GMV += t.Amount
		}
	}
	if p.ship {
		if _, err := a.c.Orders.AddFulfillmentEvent(a.tctx, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{
			OrderId: co.Order.ID, Type: "shipped", Carrier: "Correios", TrackingNumber: "QB123456785BR",
			TrackingUrl: "https://rastreamento.correios.com.br/app/index.php", Description: "Postado na agência Pinheiros",
		})); err != nil {
			return fmt.Errorf("ship: %w", err)
		}
		h.Shipped++
	}
	if p.refund > 0 {
		r, err := a.c.Orders.RefundOrder(a.tctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: co.Order.ID, Amount: p.refund, Reason: p.reason}))
		if err != nil {
			return fmt.Errorf("refund: %w", err)
		}
		if r.Msg.GetStatus() != "completed" {
			return fmt.Errorf("refund %s: %s", r.Msg.GetStatus(), r.Msg.GetFailureMessage())
		}
		h.Refunded += r.Msg.GetAmount()
	}
	return nil
}

func pixAttempt(co *bcp.Checkout) string {
	if co.Payment == nil || len(co.Payment.Instruments) != 1 {
		return ""
	}
	return bcp.PixAttemptID(co.Payment.Instruments[0].Display)
}
