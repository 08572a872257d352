package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/services/merchantio"
)

const ap2Cap = "br.dev.bcp.shopping.ap2_mandate"

// ap2World is two AP2 merchants and one without, three agent profiles (AP2
// with a wallet key in signing_keys, AP2 without keys, no AP2) and a
// driver per binding and profile.
type ap2World struct {
	t       *testing.T
	r       *platform.Running
	db      *testdb.DB
	wallet  *ap2.Wallet
	profile map[string]string // "ap2" | "nokey" | "plain" → URL
	merch   map[string]merchant
}

func newAP2World(t *testing.T, hosts ...string) *ap2World {
	t.Helper()
	d := testdb.New(t)
	r := startPlatform(t, platform.DevServices, d.AppURL, nil) // buys through the PSP simulator
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w := &ap2World{t: t, r: r, db: d, wallet: &ap2.Wallet{Issuer: key, IssuerKID: "wallet-1"}, profile: map[string]string{}, merch: map[string]merchant{}}
	pub, err := ap2.PublicJWK(key, "wallet-1")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for name, caps := range map[string][]string{
		"ap2":   {"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", ap2Cap},
		"nokey": {"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", ap2Cap},
		"plain": {"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount"},
	} {
		doc := agentProfile(caps...)
		doc = strings.Replace(doc, `"payment_handlers":{`, `"payment_handlers":{"com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}],`, 1)
		if name == "ap2" {
			doc = strings.TrimSuffix(doc, "}") + `,"signing_keys":[` + string(pub) + `]}`
		}
		docs["/"+name+".json"] = doc
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		doc, ok := docs[req.URL.Path]
		if !ok {
			http.NotFound(rw, req)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	for _, n := range []string{"ap2", "nokey", "plain"} {
		w.profile[n] = srv.URL + "/" + n + ".json"
	}
	w.wallet.IssuerID = w.profile["ap2"]
	ops := r.ClientsWithToken(operatorToken).Tenants
	for i, h := range hosts {
		w.merch[h] = setupMerchant(t, r, "Loja "+h, h, int64(i)*1000)
		if _, err := ops.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: h,
			Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
				AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *ap2World) setAP2(host string, on bool) {
	w.t.Helper()
	r, err := w.r.ClientsWithToken(operatorToken).Tenants.SetAP2Mandates(context.Background(), connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: host, Enabled: on}))
	if err != nil || r.Msg.GetTenant() == nil {
		w.t.Fatal(err)
	}
	// The edge follows the registry's change feed; wait for the profile.
	eventually(w.t, 5*time.Second, "profile of "+host+" follows AP2", func() bool {
		_, ok := w.merchantProfile(host).UCP.Capabilities[ap2Cap]
		return ok == on
	})
}

type ap2Profile struct {
	UCP struct {
		Services     map[string][]struct{ Transport, Endpoint string } `json:"services"`
		Capabilities map[string][]struct {
			Config json.RawMessage `json:"config"`
		} `json:"capabilities"`
	} `json:"ucp"`
	SigningKeys []json.RawMessage `json:"signing_keys"`
}

func (w *ap2World) merchantProfile(host string) ap2Profile {
	w.t.Helper()
	resp := get(w.t, w.r, http.MethodGet, host, "/.well-known/bcp", nil)
	var p ap2Profile
	if err := json.Unmarshal(resp.body, &p); err != nil {
		w.t.Fatalf("profile of %s: %v", host, err)
	}
	return p
}

// origin is the merchant's origin as its profile names it (the MCP
// endpoint without /bcp/mcp): the key binding's aud.
func (w *ap2World) origin(host string) string {
	for _, s := range w.merchantProfile(host).UCP.Services["br.dev.bcp.shopping"] {
		if s.Transport == "mcp" {
			return strings.TrimSuffix(s.Endpoint, "/bcp/mcp")
		}
	}
	w.t.Fatalf("no mcp endpoint for %s", host)
	return ""
}

// ap2Driver runs checkout operations over one binding for one profile and
// returns the business payload as received.
type ap2Driver struct {
	w       *ap2World
	binding string
	profile string
	host    string
	mcp     *mcp.ClientSession
	rest    *http.Client
}

func (w *ap2World) driver(binding, profile, host string) *ap2Driver {
	d := &ap2Driver{w: w, binding: binding, profile: w.profile[profile], host: host}
	if binding == "mcp" {
		d.mcp = agentSession(w.t, w.r, host, d.profile)
	} else {
		d.rest = restClientFor(w.t, w.r, host, d.profile)
	}
	return d
}

func (d *ap2Driver) do(op, id string, checkout map[string]any) json.RawMessage {
	t := d.w.t
	t.Helper()
	key := ""
	if op == "complete_checkout" || op == "cancel_checkout" {
		key = uuid.NewString()
	}
	if d.binding == "mcp" {
		meta := map[string]any{"ucp-agent": map[string]any{"profile": d.profile}}
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
		res, err := d.mcp.CallTool(context.Background(), &mcp.CallToolParams{Name: op, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s over MCP at %s: %v %v", op, d.host, err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		return raw
	}
	route := map[string][2]string{
		"create_checkout": {"POST", "/checkout-sessions"}, "get_checkout": {"GET", "/checkout-sessions/" + id},
		"update_checkout": {"PUT", "/checkout-sessions/" + id}, "complete_checkout": {"POST", "/checkout-sessions/" + id + "/complete"},
		"cancel_checkout": {"POST", "/checkout-sessions/" + id + "/cancel"},
	}[op]
	method, path := route[0], route[1]
	var body io.Reader
	if checkout != nil {
		b, _ := json.Marshal(checkout)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+d.w.r.PublicAddr+"/bcp/rest"+path, body)
	if checkout != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := d.rest.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("%s over REST at %s: %d %s", op, d.host, resp.StatusCode, raw)
	}
	return raw
}

// ap2Checkout is what the tests read of a response.
type ap2Checkout struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Messages []struct {
		Type, Code, Path, Severity, Content string
	} `json:"messages"`
	LineItems []struct {
		ID string `json:"id"`
	} `json:"line_items"`
	Fulfillment struct {
		Methods []struct {
			ID                    string `json:"id"`
			SelectedDestinationID string `json:"selected_destination_id"`
			Groups                []struct {
				ID string `json:"id"`
			} `json:"groups"`
		} `json:"methods"`
	} `json:"fulfillment"`
	Order *struct {
		ID string `json:"id"`
	} `json:"order"`
	AP2 *struct {
		MerchantAuthorization string `json:"merchant_authorization"`
	} `json:"ap2"`
}

func decodeAP2(t *testing.T, raw json.RawMessage) ap2Checkout {
	t.Helper()
	var c ap2Checkout
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return c
}

// verified checks that raw carries a merchant_authorization that verifies
// against the signing_keys of host's profile, and returns its kid.
func (w *ap2World) verified(host string, raw json.RawMessage) string {
	w.t.Helper()
	c := decodeAP2(w.t, raw)
	if c.AP2 == nil || c.AP2.MerchantAuthorization == "" {
		w.t.Fatalf("no ap2.merchant_authorization in %s", raw)
	}
	kid, err := ap2.VerifyAuthorization(raw, c.AP2.MerchantAuthorization, w.merchantProfile(host).SigningKeys)
	if err != nil {
		w.t.Fatalf("merchant_authorization of %s does not verify with its profile: %v", host, err)
	}
	return kid
}

// ready creates a checkout (1 shirt, PAC) and takes it to
// ready_for_complete, returning each response.
func (d *ap2Driver) ready(rates map[string]string) []json.RawMessage {
	t := d.w.t
	t.Helper()
	address := map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01305-000", "address_country": "BR"}
	created := d.do("create_checkout", "", map[string]any{
		"line_items":  []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":       map[string]any{"email": "ana@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{address}}}},
	})
	c := decodeAP2(t, created)
	m := c.Fulfillment.Methods[0]
	updated := d.do("update_checkout", c.ID, map[string]any{
		"line_items": []any{map[string]any{"id": c.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": "ana@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": m.ID, "type": "shipping", "line_item_ids": []any{c.LineItems[0].ID},
			"selected_destination_id": m.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": m.Groups[0].ID, "selected_option_id": rates["PAC"]}}}}},
	})
	if u := decodeAP2(t, updated); u.Status != "ready_for_complete" {
		t.Fatalf("not ready: %s", updated)
	}
	return []json.RawMessage{created, updated}
}

func (d *ap2Driver) complete(id, mandate, token string) json.RawMessage {
	body := map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(token)}}}
	if mandate != "" {
		body["ap2"] = map[string]any{"checkout_mandate": mandate}
	}
	return d.do("complete_checkout", id, body)
}

func (w *ap2World) mandate(host string, checkout json.RawMessage, o ap2.MandateOptions) string {
	w.t.Helper()
	m, err := w.wallet.Mandate(checkout, w.origin(host), o)
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

func (w *ap2World) rates(host string) map[string]string { return w.merch[host].rates }

func (w *ap2World) count(query string, args ...any) int {
	w.t.Helper()
	conn, err := pgx.Connect(context.Background(), w.db.SuperURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestAP2PurchaseOverMCPAndREST: on two AP2 merchants, over both bindings,
// every checkout response carries a merchant_authorization that verifies
// with the merchant's profile key, and a purchase by card with the
// wallet's mandate ends completed with one order that records the mandate.
func TestAP2PurchaseOverMCPAndREST(t *testing.T) {
	hosts := []string{"ap2-a.localhost", "ap2-b.localhost"}
	w := newAP2World(t, hosts...)
	for _, h := range hosts {
		if _, ok := w.merchantProfile(h).UCP.Capabilities[ap2Cap]; ok {
			t.Fatalf("%s advertises AP2 before opting in", h)
		}
		w.setAP2(h, true)
		cfg := w.merchantProfile(h).UCP.Capabilities[ap2Cap][0].Config
		if string(cfg) != `{"vp_formats_supported":{"dc+sd-jwt":{}}}` {
			t.Fatalf("AP2 config of %s: %s", h, cfg)
		}
	}
	ops := w.r.ClientsWithToken(operatorToken)
	digests := map[string][]string{}
	for _, binding := range []string{"mcp", "rest"} {
		for _, h := range hosts {
			d := w.driver(binding, "ap2", h)
			steps := d.ready(w.rates(h))
			for _, raw := range steps {
				w.verified(h, raw)
			}
			id := decodeAP2(t, steps[1]).ID
			got := d.do("get_checkout", id, nil)
			w.verified(h, got)
			m := w.mandate(h, got, ap2.MandateOptions{})
			done := d.complete(id, m, freshToken())
			c := decodeAP2(t, done)
			if c.Status != "completed" || c.Order == nil {
				t.Fatalf("%s %s: complete with a mandate: %s", binding, h, done)
			}
			w.verified(h, done)
			if n := w.count(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, id); n != 1 {
				t.Fatalf("%s %s: %d orders", binding, h, n)
			}
			// The order keeps the mandate's digest and claims.
			tid := uuid.MustParse(w.tenantID(h))
			o, err := ops.Orders.GetOrder(tenancy.With(context.Background(), tid), connect.NewRequest(&ordersv1.GetOrderRequest{Id: c.Order.ID}))
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			_ = json.Unmarshal(o.Msg.GetAp2MandateJson(), &raw)
			sum := sha256.Sum256([]byte(m))
			if raw["digest"] != hex.EncodeToString(sum[:]) || raw["issuer_kid"] != "wallet-1" || raw["checkout_id"] != id || raw["nonce"] != id || raw["aud"] != w.origin(h) {
				t.Fatalf("%s %s: mandate record %s", binding, h, o.Msg.GetAp2MandateJson())
			}
			if bytes.Contains(o.Msg.GetAp2MandateJson(), []byte(strings.Split(m, "~")[0])) {
				t.Fatal("the order stores the mandate itself")
			}
			// Cancel answers are authorized too.
			other := d.ready(w.rates(h))
			canceled := d.do("cancel_checkout", decodeAP2(t, other[1]).ID, nil)
			if decodeAP2(t, canceled).Status != "canceled" {
				t.Fatalf("cancel: %s", canceled)
			}
			w.verified(h, canceled)
			digests[h] = append(digests[h], hex.EncodeToString(sum[:]))
		}
	}
	// The merchant's export lists its AP2 orders' mandates and the opt-in;
	// the document still imports (the list is export only).
	for _, h := range hosts {
		doc, err := merchantio.Export(context.Background(), merchantio.Clients{Tenants: ops.Tenants, Catalog: ops.Catalog, Pricing: ops.Pricing, Orders: ops.Orders}, uuid.MustParse(w.tenantID(h)))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range doc.AP2Mandates {
			var rec struct {
				Digest       string `json:"digest"`
				VCT          string `json:"vct"`
				CheckoutHash string `json:"checkout_hash"`
			}
			_ = json.Unmarshal(m.Mandate, &rec)
			if rec.VCT != "mandate.checkout.1" || len(rec.CheckoutHash) != 43 {
				t.Fatalf("%s export: mandate without vct or checkout_hash: %s", h, m.Mandate)
			}
			got = append(got, rec.Digest)
		}
		slices.Sort(got)
		slices.Sort(digests[h])
		if doc.Settings.AP2Mandates == nil || !*doc.Settings.AP2Mandates || !slices.Equal(got, digests[h]) {
			t.Fatalf("%s export: ap2 %v, mandates %v, want %v", h, doc.Settings.AP2Mandates, got, digests[h])
		}
		raw, _ := merchantio.Marshal(doc)
		if _, problems := merchantio.Decode(raw); problems != nil {
			t.Fatalf("the export does not decode: %v", problems)
		}
	}
}

func (w *ap2World) tenantID(host string) string {
	w.t.Helper()
	r, err := w.r.ClientsWithToken(operatorToken).Tenants.GetTenant(context.Background(), connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: host}))
	if err != nil {
		w.t.Fatal(err)
	}
	return r.Msg.GetTenant().GetId()
}

// TestAP2MandateFailures builds each bad mandate and checks the code the
// extension names, at $.ap2.checkout_mandate, with the checkout unchanged
// (still ready, no payment attempt); then a good mandate completes it.
func TestAP2MandateFailures(t *testing.T) {
	const host = "ap2-erros.localhost"
	w := newAP2World(t, host)
	w.setAP2(host, true)
	for _, binding := range []string{"mcp", "rest"} {
		t.Run(binding, func(t *testing.T) {
			d := w.driver(binding, "ap2", host)
			steps := d.ready(w.rates(host))
			ready := steps[1]
			id := decodeAP2(t, ready).ID
			otherReady := d.ready(w.rates(host))[1]

			otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			forger := &ap2.Wallet{Issuer: otherKey, IssuerKID: "wallet-1"}
			forged, err := forger.Mandate(ready, w.origin(host), ap2.MandateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var tampered map[string]any
			_ = json.Unmarshal(ready, &tampered)
			for _, tot := range tampered["totals"].([]any) {
				if tm := tot.(map[string]any); tm["type"] == "total" {
					tm["amount"] = 1.0
				}
			}
			tamperedRaw, _ := json.Marshal(tampered)
			// (A mandate without checkout_jwt: TestAP2LayoutRefusals.)
			// Another checkout's authorization, presented for this one (the
			// key binding's nonce is this checkout's id).
			anotherCheckout := w.mandate(host, otherReady, ap2.MandateOptions{Nonce: id})

			cases := []struct{ name, mandate, code string }{
				{"no mandate", "", ap2.CodeMandateRequired},
				{"wrong issuer key", forged, ap2.CodeMandateInvalidSignature},
				{"expired", w.mandate(host, ready, ap2.MandateOptions{Lifetime: -time.Minute}), ap2.CodeMandateExpired},
				{"missing key binding", w.mandate(host, ready, ap2.MandateOptions{NoKeyBinding: true}), ap2.CodeMandateInvalidSignature},
				{"tampered total", w.mandate(host, tamperedRaw, ap2.MandateOptions{}), ap2.CodeMerchantAuthorizationInvalid},
				{"another checkout's authorization", anotherCheckout, ap2.CodeMandateScopeMismatch},
				{"garbage", "a.b.c~d", ap2.CodeMandateInvalidSignature},
			}
			for _, c := range cases {
				got := decodeAP2(t, d.complete(id, c.mandate, freshToken()))
				if got.Status != "ready_for_complete" || len(got.Messages) == 0 || got.Messages[0].Type != "error" ||
					got.Messages[0].Code != c.code || got.Messages[0].Path != "$.ap2.checkout_mandate" || got.Messages[0].Severity != "recoverable" {
					t.Fatalf("%s: %+v, want %s at $.ap2.checkout_mandate", c.name, got, c.code)
				}
			}
			// The agent without a key in its profile.
			nokey := w.driver(binding, "nokey", host)
			nk := nokey.ready(w.rates(host))[1]
			// A mandate that is not a string (the schema leaves ap2 to the
			// checkout service).
			odd := decodeAP2(t, d.do("complete_checkout", id, map[string]any{"payment": map[string]any{"instruments": []any{cardInstrument(freshToken())}},
				"ap2": map[string]any{"checkout_mandate": 42}}))
			if odd.Status != "ready_for_complete" || odd.Messages[0].Code != ap2.CodeMandateInvalidSignature || odd.Messages[0].Path != "$.ap2.checkout_mandate" {
				t.Fatalf("a number for a mandate: %+v", odd)
			}
			got := decodeAP2(t, nokey.complete(decodeAP2(t, nk).ID, w.mandate(host, nk, ap2.MandateOptions{}), freshToken()))
			if got.Status != "ready_for_complete" || got.Messages[0].Code != ap2.CodeAgentMissingKey || got.Messages[0].Path != "$.ap2.checkout_mandate" {
				t.Fatalf("agent without keys: %+v", got)
			}
			if n := w.count(`SELECT count(*) FROM payments.attempts WHERE checkout_id = ANY($1)`, []string{id, decodeAP2(t, nk).ID}); n != 0 {
				t.Fatalf("%d payment attempts after refused mandates", n)
			}
			after := d.do("get_checkout", id, nil)
			if decodeAP2(t, after).Status != "ready_for_complete" {
				t.Fatalf("checkout changed: %s", after)
			}
			if done := decodeAP2(t, d.complete(id, w.mandate(host, after, ap2.MandateOptions{}), freshToken())); done.Status != "completed" {
				t.Fatalf("a good mandate after the bad ones: %+v", done)
			}
		})
	}
}

// TestAP2KeyRotationAndRevocation: a checkout authorized by the old key
// still completes after a rotation; once the old key is revoked, a mandate
// over a checkout it authorized is merchant_authorization_invalid.
func TestAP2KeyRotationAndRevocation(t *testing.T) {
	const host = "ap2-chaves.localhost"
	w := newAP2World(t, host)
	w.setAP2(host, true)
	d := w.driver("mcp", "ap2", host)
	first := d.ready(w.rates(host))[1]
	second := d.ready(w.rates(host))[1]
	oldKid := w.verified(host, first)
	ops := w.r.ClientsWithToken(operatorToken).Tenants
	if _, err := ops.RotateSigningKey(context.Background(), connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: host, Delay: durationpb.New(0)})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "new key signs", func() bool {
		return w.verified(host, d.do("get_checkout", decodeAP2(t, second).ID, nil)) != oldKid
	})
	done := decodeAP2(t, d.complete(decodeAP2(t, first).ID, w.mandate(host, first, ap2.MandateOptions{}), freshToken()))
	if done.Status != "completed" {
		t.Fatalf("old key's authorization after rotation: %+v", done)
	}
	if _, err := ops.RevokeSigningKey(context.Background(), connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: host, Kid: oldKid})); err != nil {
		t.Fatal(err)
	}
	got := decodeAP2(t, d.complete(decodeAP2(t, second).ID, w.mandate(host, second, ap2.MandateOptions{}), freshToken()))
	if got.Status != "ready_for_complete" || got.Messages[0].Code != ap2.CodeMerchantAuthorizationInvalid || got.Messages[0].Path != "$.ap2.checkout_mandate" {
		t.Fatalf("revoked key: %+v", got)
	}
}

// TestAP2NotNegotiated: an agent without AP2 at an AP2 merchant, and an AP2
// agent at a merchant without it, buy as before: no ap2 member, no
// mandate needed.
func TestAP2NotNegotiated(t *testing.T) {
	const on, off = "ap2-sim.localhost", "ap2-nao.localhost"
	w := newAP2World(t, on, off)
	w.setAP2(on, true)
	for _, c := range []struct{ host, profile, binding string }{{on, "plain", "mcp"}, {on, "plain", "rest"}, {off, "ap2", "mcp"}, {off, "ap2", "rest"}} {
		d := w.driver(c.binding, c.profile, c.host)
		steps := d.ready(w.rates(c.host))
		for _, raw := range steps {
			if bytes.Contains(raw, []byte(`"ap2"`)) || bytes.Contains(raw, []byte(ap2Cap)) {
				t.Fatalf("%+v: AP2 in a response: %s", c, raw)
			}
		}
		done := decodeAP2(t, d.complete(decodeAP2(t, steps[1]).ID, "", freshToken()))
		if done.Status != "completed" || done.AP2 != nil {
			t.Fatalf("%+v: %+v", c, done)
		}
	}
}

// TestAP2Admin: the merchant switches AP2 on in the admin settings (an
// older form without the section keeps it), and the order page of an AP2
// purchase shows the mandate's digest, never the mandate.
func TestAP2Admin(t *testing.T) {
	const host = "ap2-admin.localhost"
	w := newAP2World(t, host)
	b := newBrowser(t, w.r, host)
	if p := b.signIn("dona@ap2.com.br", invite(t, w.r, host, "dona@ap2.com.br")); p.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", p.status)
	}
	st := b.do("GET", "/admin/configuracoes", nil)
	if !strings.Contains(st.body, `name="ap2_mandates">`) || strings.Contains(st.body, `name="ap2_mandates" checked`) {
		t.Fatalf("settings page without an unchecked AP2 box:\n%s", st.body)
	}
	form := url.Values{"_csrf": {csrfOf(t, st)}, "name": {"Loja " + host}, "ttl_hours": {"6"}, "ap2_section": {"1"}, "ap2_mandates": {"on"}}
	if p := b.do("POST", "/admin/configuracoes", form); p.status != http.StatusSeeOther {
		t.Fatalf("save AP2 on: %d\n%s", p.status, p.body)
	}
	eventually(t, 5*time.Second, "profile advertises AP2", func() bool {
		_, ok := w.merchantProfile(host).UCP.Capabilities[ap2Cap]
		return ok
	})
	if p := b.do("POST", "/admin/configuracoes", url.Values{"_csrf": form["_csrf"], "name": {"Loja " + host}, "ttl_hours": {"6"}}); p.status != http.StatusSeeOther {
		t.Fatalf("older form: %d", p.status)
	}
	if !strings.Contains(b.do("GET", "/admin/configuracoes", nil).body, `name="ap2_mandates" checked`) {
		t.Fatal("a form without the AP2 section switched it off")
	}

	d := w.driver("mcp", "ap2", host)
	ready := d.ready(w.rates(host))[1]
	m := w.mandate(host, ready, ap2.MandateOptions{})
	done := decodeAP2(t, d.complete(decodeAP2(t, ready).ID, m, freshToken()))
	if done.Order == nil {
		t.Fatalf("not completed: %+v", done)
	}
	p := b.do("GET", "/admin/pedidos/"+done.Order.ID, nil)
	sum := sha256.Sum256([]byte(m))
	if p.status != http.StatusOK || !strings.Contains(p.body, `<code data-field="mandate_digest">`+hex.EncodeToString(sum[:])+`</code>`) || !strings.Contains(p.body, "wallet-1") {
		t.Fatalf("order page: %d\n%s", p.status, p.body)
	}
	if strings.Contains(p.body, strings.Split(m, "~")[0]) {
		t.Fatal("the order page shows the mandate")
	}
	// AP2's layout: the mandate type and the checkout_hash (sha-256 of the
	// checkout_jwt: the merchant authorization with its payload).
	jwt := checkoutJWT(t, ready)
	jsum := sha256.Sum256([]byte(jwt))
	if !strings.Contains(p.body, `<code data-field="mandate_vct">mandate.checkout.1</code>`) ||
		!strings.Contains(p.body, `<code data-field="mandate_checkout_hash">`+base64.RawURLEncoding.EncodeToString(jsum[:])+`</code>`) {
		t.Fatalf("order page without the mandate's vct and checkout_hash:\n%s", p.body)
	}

	form.Del("ap2_mandates")
	if p := b.do("POST", "/admin/configuracoes", form); p.status != http.StatusSeeOther {
		t.Fatalf("save AP2 off: %d", p.status)
	}
	eventually(t, 5*time.Second, "profile drops AP2", func() bool {
		_, ok := w.merchantProfile(host).UCP.Capabilities[ap2Cap]
		return !ok
	})
}

// TestAP2PaymentMandate: the payment mandate in credential.token reaches
// the delegated handler, which verifies it with the agent profile's key
// (bound to this checkout and amount): one for this checkout pays, one for
// another checkout is refused by the handler (payment_failed), after the
// checkout mandate was accepted.
func TestAP2PaymentMandate(t *testing.T) {
	const host = "ap2-pagamento.localhost"
	w := newAP2World(t, host)
	w.setAP2(host, true)
	d := w.driver("mcp", "ap2", host)
	ready := d.ready(w.rates(host))[1]
	c := decodeAP2(t, ready)
	var totals struct {
		Totals []struct {
			Type   string
			Amount int64
		}
	}
	_ = json.Unmarshal(ready, &totals)
	var total int64
	for _, tt := range totals.Totals {
		if tt.Type == "total" {
			total = tt.Amount
		}
	}
	paymentMandate := func(checkoutID string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: w.wallet.Issuer, KeyID: "wallet-1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		claims, _ := json.Marshal(map[string]any{"aud": "card", "iss": w.profile["ap2"], "exp": time.Now().Add(5 * time.Minute).Unix(),
			"checkout_id": checkoutID, "max_amount": total, "currency": "BRL", "jti": uuid.NewString(), "brand": "visa", "last_digits": "4242"})
		obj, err := signer.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := obj.CompactSerialize()
		return s
	}
	pay := func(token string) ap2Checkout {
		body := map[string]any{"payment": map[string]any{"instruments": []any{map[string]any{"id": "pi_card", "handler_id": "card", "type": "card",
			"credential": map[string]any{"type": "token", "token": token}}}},
			"ap2": map[string]any{"checkout_mandate": w.mandate(host, d.do("get_checkout", c.ID, nil), ap2.MandateOptions{})}}
		return decodeAP2(t, d.do("complete_checkout", c.ID, body))
	}
	if got := pay(paymentMandate("chk_outro")); got.Status != "ready_for_complete" || len(got.Messages) == 0 || got.Messages[0].Code != "payment_failed" {
		t.Fatalf("a payment mandate for another checkout: %+v", got)
	}
	if got := pay(paymentMandate(c.ID)); got.Status != "completed" || got.Order == nil {
		t.Fatalf("the payment mandate for this checkout: %+v", got)
	}
}
