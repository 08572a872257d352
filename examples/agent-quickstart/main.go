// Command agent-quickstart is a complete purchase by a shopping agent over
// BCP's MCP binding, written with the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk): search the catalog, fill a cart
// with a discount code, turn the cart into a checkout, choose the cheapest
// shipping, pay by Pix and wait for the order.
//
// Against `make run` (the demo merchant, the demo agent's profile and API key):
//
//	go run ./examples/agent-quickstart --host loja-demo.localhost http://127.0.0.1:8080/bcp/mcp
//
// --host names the merchant when the URL names another address (here:
// *.localhost does not resolve everywhere); every request, the checkout
// page too, then goes to the URL's address with that Host.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	host := flag.String("host", "", "the merchant's host name, when the URL names another address")
	profile := flag.String("profile", "http://127.0.0.1:9090/dev/demo-agent.json", "the agent's profile URL")
	keyFile := flag.String("api-key-file", ".bcp/demo-api-key", "the agent's API key at this merchant")
	email := flag.String("email", "", "the buyer's e-mail (default: a new one, so the welcome code applies)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: agent-quickstart [--host HOST] [--profile URL] [--api-key-file FILE] <merchant MCP URL>")
		os.Exit(2)
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil {
		fail(err)
	}
	if *email == "" {
		*email = "quickstart-" + newUUID()[:8] + "@example.com"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := connect(ctx, flag.Arg(0), *host, strings.TrimSpace(string(key)), *profile)
	if err != nil {
		fail(err)
	}
	defer a.session.Close()
	c, err := a.buy(ctx, "caneca", *email)
	if err != nil {
		fail(err)
	}
	fmt.Printf("completed: checkout %s order %s total %d\n", c.ID, c.Order.ID, c.total("total"))
}

// newUUID is a random (version 4) UUID: idempotency keys are UUIDs.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agent-quickstart:", err)
	os.Exit(1)
}

// agent is one MCP session with a merchant, as one agent.
type agent struct {
	session *mcp.ClientSession
	profile string       // sent in every call's meta["ucp-agent"]
	web     *http.Client // the checkout page (sandbox payment only)
}

// connect opens the MCP session. The API key goes in X-API-Key on every
// request; with host set, requests go to the URL's address with that Host.
func connect(ctx context.Context, endpoint, host, apiKey, profile string) (*agent, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if host != "" {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, err
		}
		addr := u.Host
		base.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		if _, _, err := net.SplitHostPort(host); err != nil && u.Port() != "" {
			host = net.JoinHostPort(host, u.Port())
		}
		u.Host = host
		endpoint = u.String()
	}
	jar, _ := cookiejar.New(nil)
	a := &agent{profile: profile, web: &http.Client{Transport: base, Jar: jar}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-quickstart", Version: "1.0"}, nil)
	var err error
	a.session, err = client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: withAPIKey{apiKey, base}},
	}, nil)
	return a, err
}

type withAPIKey struct {
	key  string
	base http.RoundTripper
}

func (t withAPIKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", t.key)
	return t.base.RoundTrip(r)
}

// call runs a tool and decodes its structuredContent into out. A business
// outcome the tool answers as an error (ucp.status "error": not found,
// nothing in stock, ...) is an error here too.
func (a *agent) call(ctx context.Context, tool string, args map[string]any, out any) error {
	if args["meta"] == nil {
		args["meta"] = map[string]any{"ucp-agent": map[string]any{"profile": a.profile}}
	}
	res, err := a.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err) // invalid arguments, credentials, rate limit
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	var env struct {
		UCP struct {
			Status string `json:"status"`
		} `json:"ucp"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || res.IsError || env.UCP.Status == "error" {
		return fmt.Errorf("%s: %s", tool, raw)
	}
	return json.Unmarshal(raw, out)
}

// checkout is what this agent reads of a checkout (and of a cart).
type checkout struct {
	UCP struct {
		PaymentHandlers map[string][]struct {
			ID string `json:"id"`
		} `json:"payment_handlers"`
	} `json:"ucp"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	LineItems []struct {
		ID   string `json:"id"`
		Item struct {
			ID string `json:"id"`
		} `json:"item"`
		Quantity int `json:"quantity"`
	} `json:"line_items"`
	Totals   []total `json:"totals"`
	Messages []struct {
		Code    string `json:"code"`
		Path    string `json:"path"`
		Content string `json:"content"`
	} `json:"messages"`
	ContinueURL string `json:"continue_url"`
	Fulfillment struct {
		Methods []struct {
			ID                    string   `json:"id"`
			LineItemIDs           []string `json:"line_item_ids"`
			SelectedDestinationID string   `json:"selected_destination_id"`
			Groups                []struct {
				ID      string `json:"id"`
				Options []struct {
					ID     string  `json:"id"`
					Title  string  `json:"title"`
					Totals []total `json:"totals"`
				} `json:"options"`
			} `json:"groups"`
		} `json:"methods"`
	} `json:"fulfillment"`
	Discounts struct {
		Codes []string `json:"codes"`
	} `json:"discounts"`
	Payment struct {
		Instruments []struct {
			Display struct {
				Pix struct {
					AttemptID  string `json:"attempt_id"`
					CopiaECola string `json:"copia_e_cola"`
				} `json:"pix"`
			} `json:"display"`
		} `json:"instruments"`
	} `json:"payment"`
	Order *struct {
		ID string `json:"id"`
	} `json:"order"`
}

type total struct {
	Type   string `json:"type"`
	Amount int64  `json:"amount"` // centavos
}

func (c *checkout) total(typ string) int64 { return amount(c.Totals, typ) }

func amount(totals []total, typ string) int64 {
	for _, t := range totals {
		if t.Type == typ {
			return t.Amount
		}
	}
	return 0
}

// buy is the purchase: search → cart → checkout → shipping → Pix → order.
func (a *agent) buy(ctx context.Context, query, email string) (*checkout, error) {
	// 1. Search the catalog; a variant's id is the item.id of a cart or checkout.
	var found struct {
		Products []struct {
			Title    string `json:"title"`
			Variants []struct {
				ID string `json:"id"`
			} `json:"variants"`
		} `json:"products"`
	}
	if err := a.call(ctx, "search_catalog", map[string]any{"catalog": map[string]any{
		"query": query, "filters": map[string]any{"price": map[string]any{"max": 5000}}}}, &found); err != nil {
		return nil, err
	}
	if len(found.Products) == 0 || len(found.Products[0].Variants) == 0 {
		return nil, fmt.Errorf("nothing found for %q", query)
	}
	item := found.Products[0].Variants[0].ID
	fmt.Printf("search_catalog %q: %s (%s)\n", query, found.Products[0].Title, item)

	// 2. A cart: two of them, the buyer and a discount code.
	var cart checkout
	if err := a.call(ctx, "create_cart", map[string]any{"cart": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": item}, "quantity": 2}},
		"buyer":      map[string]any{"email": email},
		"discounts":  map[string]any{"codes": []any{"BEMVINDO10"}},
	}}, &cart); err != nil {
		return nil, err
	}
	fmt.Printf("create_cart %s: subtotal %d, discount %d, total %d\n", cart.ID, cart.total("subtotal"), cart.total("items_discount"), cart.total("total"))

	// 3. The cart becomes a checkout: its lines, buyer and code carry
	// over; the agent adds what a cart has not, the shipping address.
	var c checkout
	if err := a.call(ctx, "create_checkout", map[string]any{"checkout": map[string]any{
		"cart_id": cart.ID,
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{map[string]any{
			"street_address": "Av. Paulista, 1000", "address_locality": "São Paulo", "address_region": "SP",
			"postal_code": "01310-100", "address_country": "BR"}}}}},
	}}, &c); err != nil {
		return nil, err
	}
	fmt.Printf("create_checkout %s from %s: %s\n", c.ID, cart.ID, c.Status)

	// 4. Choose the cheapest shipping option. update_checkout replaces the
	// whole checkout: send the lines, buyer, method and code again.
	if len(c.Fulfillment.Methods) == 0 || len(c.Fulfillment.Methods[0].Groups) == 0 {
		return nil, fmt.Errorf("checkout %s offers no shipping", c.ID)
	}
	m, g := c.Fulfillment.Methods[0], c.Fulfillment.Methods[0].Groups[0]
	best := 0
	for i, o := range g.Options {
		if amount(o.Totals, "total") < amount(g.Options[best].Totals, "total") {
			best = i
		}
	}
	var lines []any
	for _, l := range c.LineItems {
		lines = append(lines, map[string]any{"id": l.ID, "item": map[string]any{"id": l.Item.ID}, "quantity": l.Quantity})
	}
	if err := a.call(ctx, "update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items": lines,
		"buyer":      map[string]any{"email": email},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": m.ID, "type": "shipping", "line_item_ids": m.LineItemIDs,
			"selected_destination_id": m.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": g.ID, "selected_option_id": g.Options[best].ID}}}}},
		"discounts": map[string]any{"codes": c.Discounts.Codes},
	}}, &c); err != nil {
		return nil, err
	}
	fmt.Printf("update_checkout %s: shipping %s, %s, total %d\n", c.ID, g.Options[best].Title, c.Status, c.total("total"))
	if c.Status != "ready_for_complete" {
		return nil, fmt.Errorf("checkout %s is %s: %+v", c.ID, c.Status, c.Messages)
	}

	// 5. Pay by Pix, with an idempotency key (resend the same one to retry).
	pix := c.UCP.PaymentHandlers["br.dev.bcp.pix"]
	if len(pix) == 0 {
		return nil, errors.New("the merchant takes no Pix from this agent")
	}
	if err := a.call(ctx, "complete_checkout", map[string]any{
		"meta": map[string]any{"ucp-agent": map[string]any{"profile": a.profile}, "idempotency-key": newUUID()},
		"id":   c.ID,
		"checkout": map[string]any{"payment": map[string]any{"instruments": []any{
			map[string]any{"id": "pi_1", "handler_id": pix[0].ID, "type": "pix"}}}},
	}, &c); err != nil {
		return nil, err
	}
	if c.Status != "complete_in_progress" || len(c.Payment.Instruments) == 0 {
		return nil, fmt.Errorf("complete_checkout: %s %+v", c.Status, c.Messages)
	}
	p := c.Payment.Instruments[0].Display.Pix
	fmt.Printf("complete_checkout %s: %s; Pix copia e cola %s\n", c.ID, c.Status, p.CopiaECola)

	// 6. The buyer pays (here: the sandbox's button); the agent waits.
	if err := a.payInSandbox(ctx, c.ContinueURL, p.AttemptID); err != nil {
		return nil, err
	}
	for c.Status != "completed" {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("checkout %s still %s: %w", c.ID, c.Status, ctx.Err())
		case <-time.After(time.Second):
		}
		if err := a.call(ctx, "get_checkout", map[string]any{"id": c.ID}, &c); err != nil {
			return nil, err
		}
	}
	fmt.Printf("get_checkout %s: %s, order %s\n", c.ID, c.Status, c.Order.ID)
	return &c, nil
}

var csrfToken = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// payInSandbox does what a buyer does on the checkout page (continue_url)
// of a sandbox merchant: press "Simular pagamento", which pays the Pix at
// the PSP simulator, the sandbox's bank. A real buyer pays the copia e
// cola (or the QR code) in a bank app instead; the agent only waits.
func (a *agent) payInSandbox(ctx context.Context, continueURL, attemptID string) error {
	page, _, err := a.fetch(ctx, continueURL, nil) // sets the form's cookie
	if err != nil {
		return err
	}
	m := csrfToken.FindStringSubmatch(page)
	if m == nil {
		return fmt.Errorf("no \"Simular pagamento\" form at %s: is the Pix handler a sandbox one?", continueURL)
	}
	_, landed, err := a.fetch(ctx, continueURL+"/simulate-payment", url.Values{"csrf_token": {m[1]}, "attempt_id": {attemptID}})
	if err != nil {
		return err
	}
	if landed.Query().Get("simulado") != "1" {
		return fmt.Errorf("the sandbox did not pay the Pix (back at %s)", landed)
	}
	fmt.Println("the buyer paid the Pix (sandbox)")
	return nil
}

// fetch GETs u, or POSTs form to it, following redirects; it returns the
// page and where it was.
func (a *agent) fetch(ctx context.Context, u string, form url.Values) (string, *url.URL, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if form != nil {
		method, body = http.MethodPost, strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return "", nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := a.web.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: HTTP %d", method, resp.Request.URL, resp.StatusCode)
	}
	return string(b), resp.Request.URL, err
}
