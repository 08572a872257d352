package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/edge"
)

// An operator onboards a merchant with bcpctl alone (issue 34): a new
// production tenant's checklist shows every item missing (AP2 once it is
// on), each item turns done after the command the checklist names, and
// the tenant is then ready to sell; shipping and pickup commands, handler
// presets, tenant update with its consequences, and an invitation link
// that sets the password once and never twice (through the admin's real
// page on the platform's public listener).
func TestOnboardingCommands(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: append(append([]string{}, platform.AllServices...), platform.PSPSim), DatabaseURL: d.AppURL,
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", InternalToken: "int", OperatorToken: "op",
		MasterKey: bytes.Repeat([]byte{5}, 32), Edge: edge.Config{PublicScheme: "http"}, DevPKIDir: filepath.Join(t.TempDir(), "pki"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	dataDir := t.TempDir() // no dev.json: links use https://<primary domain>
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op", "--data-dir", dataDir}, args...), &out)
		return out.String(), err
	}
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("bcpctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	wantOut := func(want string, args ...string) {
		t.Helper()
		if got := mustOK(args...); got != want {
			t.Fatalf("bcpctl %v:\n%s\nwant:\n%s", args, got, want)
		}
	}
	wantErr := func(code int, msg string, args ...string) {
		t.Helper()
		_, err := ctl(args...)
		if err == nil || exitCode(err) != code || !strings.Contains(errorMessage(err), msg) {
			t.Fatalf("bcpctl %v: %v (exit %d); want exit %d with %q", args, err, exitCode(err), code, msg)
		}
	}
	status := func() statusJSON {
		t.Helper()
		var s statusJSON
		out := mustOK("--json", "tenant", "status", "loja-nova")
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("tenant status --json: %v\n%s", err, out)
		}
		return s
	}
	item := func(s statusJSON, key string) statusItem {
		t.Helper()
		for _, it := range s.Items {
			if it.Key == key {
				return it
			}
		}
		t.Fatalf("no item %s in %+v", key, s)
		return statusItem{}
	}
	wantItem := func(key, state, detail, command string) {
		t.Helper()
		s := status()
		got := item(s, key)
		got.Label, got.AdminPath, got.DoneTime = "", "", ""
		if want := (statusItem{Key: key, State: state, Detail: detail, Command: command}); got != want {
			t.Fatalf("item %s:\n got %+v\nwant %+v", key, got, want)
		}
	}

	mustOK("tenant", "create", "--name", "Loja Nova", "--domain", "nova.localhost")

	// A new production merchant lacks everything (AP2 is off: not
	// required).
	s := status()
	want := statusJSON{Tenant: "loja-nova", TenantID: s.TenantID, Ready: false, Done: 0, Required: 5, Items: []statusItem{
		{Key: "domain", State: "missing", Label: "Store domain", Detail: "nova.localhost only resolves on the operator's machine: a production store needs a public domain.",
			Command: "bcpctl domain add loja-nova <domain> --primary"},
		{Key: "payment_handler", State: "missing", Label: "Payment handler with a passing connection test", Detail: "No payment handler.",
			Command: "bcpctl handler set loja-nova --preset pix-sandbox", AdminPath: "/admin/pagamentos"},
		{Key: "product", State: "missing", Label: "Active product in stock", Detail: "No active product in the catalog.",
			Command: "bcpctl catalog import loja-nova <file.json|file.csv>", AdminPath: "/admin/produtos"},
		{Key: "shipping", State: "missing", Label: "Shipping rates or pickup", Detail: "No active shipping rate or pickup point: an agent cannot choose a delivery.",
			Command: "bcpctl shipping rate add loja-nova --title PAC --price 19,90", AdminPath: "/admin/frete"},
		{Key: "agent_access", State: "missing", Label: "Agent access (API key or signatures)", Detail: "No agent API key (and the auth policy is not signature).",
			Command: "bcpctl apikey create loja-nova --agent-profile https://<agent>/profile.json", AdminPath: "/admin/agentes"},
		{Key: "ap2", State: "n/a", Label: "AP2 mandates", Detail: "Off (optional): `bcpctl ap2 on loja-nova` turns them on.", AdminPath: "/admin/configuracoes"},
	}}
	if len(s.TenantID) != 36 || !reflect.DeepEqual(s, want) {
		t.Fatalf("new tenant's checklist:\n got %+v\nwant %+v", s, want)
	}
	// The human table: a summary line, then one row per item with the
	// command that fixes it.
	table := mustOK("tenant", "status", "nova.localhost")
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 8 || lines[0] != "tenant loja-nova: 0/5 ready" || !regexp.MustCompile(`^STATE\s+ITEM\s+DETAIL\s+FIX$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^missing\s+Payment handler with a passing connection test\s+No payment handler\.\s+bcpctl handler set loja-nova --preset pix-sandbox$`).MatchString(lines[3]) ||
		!regexp.MustCompile("^n/a\\s+AP2 mandates\\s+Off \\(optional\\): `bcpctl ap2 on loja-nova` turns them on\\.$").MatchString(lines[7]) {
		t.Fatalf("tenant status:\n%s", table)
	}

	// AP2 on with no usable signing key: missing too.
	mustOK("ap2", "on", "loja-nova")
	keys := mustOK("--json", "keys", "list", "loja-nova")
	kid := regexp.MustCompile(`"kid":\s*"([^"]+)"`).FindStringSubmatch(keys)
	if kid == nil {
		t.Fatalf("keys list: %s", keys)
	}
	mustOK("keys", "revoke", "loja-nova", kid[1], "--force")
	wantItem("ap2", "missing", "On, but the store has no usable signing key for its merchant authorizations.", "bcpctl keys rotate loja-nova --delay 0")
	if s := status(); s.Done != 0 || s.Required != 6 {
		t.Fatalf("with AP2 on: %d/%d", s.Done, s.Required)
	}

	// Each item, fixed by the command the checklist names.
	mustOK("domain", "add", "loja-nova", "loja-nova.com.br", "--primary")
	wantItem("domain", "done", "loja-nova.com.br", "")

	wantOut("handler pix (br.dev.bcp.pix) set: instruments [{\"type\":\"pix\"}], config {\"environment\":\"sandbox\"}, environment sandbox, secrets stored: false\nnext: bcpctl handler test loja-nova pix\n",
		"handler", "set", "loja-nova", "--preset", "pix-sandbox")
	wantItem("payment_handler", "missing", "pix: connection not tested since it was last set.", "bcpctl handler test loja-nova pix")
	if out := mustOK("handler", "test", "loja-nova", "pix"); !strings.HasPrefix(out, "ok: Conexão com o PSP verificada") {
		t.Fatalf("handler test: %s", out)
	}
	hi := item(status(), "payment_handler")
	if hi.State != "done" || hi.DoneTime == "" || hi.Detail != "pix (sandbox: test payments only): connection test passed at "+hi.DoneTime+"." || hi.AdminPath != "/admin/pagamentos/pix" {
		t.Fatalf("payment handler after its test: %+v", hi)
	}

	catalog := filepath.Join(t.TempDir(), "catalogo.json")
	writeCatalog := func(stock int) {
		b := `{"products":[{"id":"prd_caneca","title":"Caneca Azul","variants":[{"sku":"CAN-AZ","title":"Caneca Azul","price":3990,"stock":` + strconv.Itoa(stock) + `}]}]}`
		if err := os.WriteFile(catalog, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCatalog(0)
	mustOK("catalog", "import", "loja-nova", catalog)
	wantItem("product", "missing", "1 active product(s), none in stock.", "bcpctl catalog import loja-nova <file.json|file.csv>")
	writeCatalog(12)
	mustOK("catalog", "import", "loja-nova", catalog)
	wantItem("product", "done", "“Caneca Azul” is active and in stock.", "")

	wantErr(2, `--price "18.90": use whole centavos (1890) or reais with a decimal comma (18,90)`, "shipping", "rate", "add", "loja-nova", "--title", "PAC", "--price", "18.90")
	wantErr(2, "shipping rate add needs --title and --price", "shipping", "rate", "add", "loja-nova", "--title", "PAC")
	wantErr(2, "unknown command shipping rate edit", "shipping", "rate", "edit", "loja-nova")
	out := mustOK("shipping", "rate", "add", "loja-nova", "--title", "PAC", "--price", "18,90", "--carrier", "Correios", "--min-days", "5", "--max-days", "9", "--free-above", "199,00")
	pac := regexp.MustCompile(`^shipping rate (\S+) added: PAC, R\$ 18,90, all of Brazil, 5-9 business days, free from R\$ 199,00\n$`).FindStringSubmatch(out)
	if pac == nil {
		t.Fatalf("shipping rate add: %q", out)
	}
	out = mustOK("shipping", "rate", "add", "loja-nova", "--title", "SEDEX", "--price", "3490", "--regions", "sp,rj", "--cep", "01000-000:09999-999", "--min-days", "1", "--max-days", "3", "--position", "1")
	sedex := regexp.MustCompile(`^shipping rate (\S+) added: SEDEX, R\$ 34,90, SP,RJ CEP 01000000-09999999, 1-3 business days\n$`).FindStringSubmatch(out)
	if sedex == nil {
		t.Fatalf("shipping rate add: %q", out)
	}
	list := mustOK("shipping", "rate", "list", "loja-nova")
	rows := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(rows) != 3 || !regexp.MustCompile(`^ID\s+TITLE\s+PRICE\s+FREE ABOVE\s+DAYS\s+WHERE\s+ACTIVE$`).MatchString(rows[0]) ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(pac[1])+`\s+PAC\s+R\$ 18,90\s+R\$ 199,00\s+5-9 business days\s+all of Brazil\s+yes$`).MatchString(rows[1]) ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(sedex[1])+`\s+SEDEX\s+R\$ 34,90\s+-\s+1-3 business days\s+SP,RJ CEP 01000000-09999999\s+yes$`).MatchString(rows[2]) {
		t.Fatalf("shipping rate list:\n%s", list)
	}
	out = mustOK("pickup", "add", "loja-nova", "--name", "Loja Nova Centro", "--street", "Rua Augusta, 100", "--city", "São Paulo", "--region", "sp",
		"--cep", "01305-000", "--hours", "Seg. a sex., 9h às 18h")
	pick := regexp.MustCompile(`^pickup point (\S+) added: Loja Nova Centro, Rua Augusta, 100, São Paulo/SP, CEP 01305000, R\$ 0,00\n$`).FindStringSubmatch(out)
	if pick == nil {
		t.Fatalf("pickup add: %q", out)
	}
	wantErr(2, "pickup add needs --name, --street, --city, --region and --cep", "pickup", "add", "loja-nova", "--name", "X")
	plist := mustOK("pickup", "list", "loja-nova")
	if prow := strings.Split(strings.TrimSuffix(plist, "\n"), "\n"); len(prow) != 2 ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(pick[1])+`\s+Loja Nova Centro\s+Rua Augusta, 100, São Paulo/SP 01305000\s+R\$ 0,00\s+Seg\. a sex\., 9h às 18h\s+yes$`).MatchString(prow[1]) {
		t.Fatalf("pickup list:\n%s", plist)
	}
	wantItem("shipping", "done", "2 shipping rates and 1 pickup point active.", "")
	wantOut("removed pickup point "+pick[1]+"\n", "pickup", "remove", "loja-nova", pick[1])
	wantOut("removed shipping rate "+sedex[1]+"\n", "shipping", "rate", "remove", "loja-nova", sedex[1])
	wantItem("shipping", "done", "1 shipping rate and 0 pickup points active.", "")
	if out := mustOK("pickup", "list", "loja-nova"); out != "ID  NAME  ADDRESS  PRICE  HOURS  ACTIVE\n" {
		t.Fatalf("empty pickup list: %q", out)
	}

	mustOK("apikey", "create", "loja-nova", "--agent-profile", "https://agente.example/profile.json")
	wantItem("agent_access", "done", "1 live agent API key.", "")

	mustOK("keys", "rotate", "loja-nova", "--delay", "0")
	wantItem("ap2", "done", "On: checkout answers carry the merchant authorization; agents must send checkout mandates.", "")

	if s := status(); !s.Ready || s.Done != 6 || s.Required != 6 {
		t.Fatalf("after every fix: %+v", s)
	}
	if out := mustOK("tenant", "status", "loja-nova"); !strings.HasPrefix(out, "tenant loja-nova: ready to sell (6/6)\n") {
		t.Fatalf("tenant status: %s", out)
	}

	// tenant update: the name, and the environment with what it means.
	if out := mustOK("tenant", "update", "loja-nova", "--name", "Loja Nova Ltda"); !strings.HasPrefix(out, "tenant Loja Nova Ltda (loja-nova)\n") || strings.Contains(out, "environment production:") {
		t.Fatalf("tenant update --name: %s", out)
	}
	out = mustOK("tenant", "update", "loja-nova", "--environment", "development")
	if !strings.HasSuffix(out, "  environment  development\n  domains      loja-nova.com.br, nova.localhost (primary loja-nova.com.br)\n"+
		"  capabilities br.dev.bcp.shopping.checkout, br.dev.bcp.shopping.order, br.dev.bcp.shopping.fulfillment, br.dev.bcp.shopping.discount, br.dev.bcp.shopping.buyer_consent, br.dev.bcp.shopping.catalog.search, br.dev.bcp.shopping.catalog.lookup, br.dev.bcp.shopping.cart, br.dev.bcp.shopping.ap2_mandate\n"+
		"environment development:\n"+
		"  - agent profiles (API key bindings, profile fetches) and order webhooks may now use http and loopback or private addresses: agents on this machine can buy; never use it for a public store\n") {
		t.Fatalf("tenant update --environment development:\n%s", out)
	}
	mustOK("apikey", "create", "loja-nova", "--agent-profile", "http://127.0.0.1:9/agent.json")
	out = mustOK("tenant", "update", "loja-nova", "--environment", "production")
	if i := strings.Index(out, "environment production:\n"); i < 0 || out[i:] != "environment production:\n"+
		"  - agent profiles and order webhooks must use https on public addresses: http, loopback and private ones are refused\n"+
		"  - 1 live API key is bound to an http agent profile: agents using them are refused; revoke them (bcpctl apikey revoke) and create keys for https profiles\n"+
		"  - 1 payment handler is in sandbox: payments there are test money at the PSP simulator, never real; set production ones (bcpctl handler set --preset pix-psp or stripe-card)\n" {
		t.Fatalf("tenant update --environment production:\n%s", out)
	}
	if out := mustOK("tenant", "update", "loja-nova", "--environment", "production"); !strings.Contains(out, "  - the store was already in production: nothing changed\n") {
		t.Fatalf("same environment:\n%s", out)
	}
	var upd struct {
		Tenant       map[string]any `json:"tenant"`
		Consequences []string       `json:"consequences"`
	}
	if err := json.Unmarshal([]byte(mustOK("--json", "tenant", "update", "loja-nova", "--environment", "sandbox")), &upd); err != nil ||
		upd.Tenant["environment"] != float64(2) || len(upd.Consequences) != 2 || !strings.HasPrefix(upd.Consequences[1], "1 live API key is bound to an http agent profile") {
		t.Fatalf("tenant update --json: %+v %v", upd, err)
	}
	wantErr(2, "--environment must be production, sandbox or development", "tenant", "update", "loja-nova", "--environment", "staging")
	wantErr(2, "tenant update needs --name and/or --environment", "tenant", "update", "loja-nova")
	wantErr(2, "tenant_not_found", "tenant", "update", "nope", "--name", "X")
	mustOK("tenant", "update", "loja-nova", "--environment", "production")
	wantItem("agent_access", "done", "1 live agent API key.", "") // the https one still works

	// Presets: the names and config an operator need not guess.
	t.Setenv("BCP_STRIPE_SECRET_KEY", "")
	wantErr(2, "unknown --preset nope; one of card-sandbox, pix-psp, pix-sandbox, stripe-card", "handler", "set", "loja-nova", "--preset", "nope")
	wantErr(2, "this preset needs --pix-key, --psp-base-url, --psp-token-url, --psp-client-id, --psp-cert, --psp-webhook-ca: --pix-key KEY --psp-base-url URL",
		"handler", "set", "loja-nova", "--preset", "pix-psp", "--id", "pix_banco")
	wantErr(2, "this preset needs --stripe-key-file: --stripe-key-file FILE (or $BCP_STRIPE_SECRET_KEY)", "handler", "set", "loja-nova", "--preset", "stripe-card")
	wantOut("handler cartao (com.example.vendor.delegate_payment) set: instruments [{\"type\":\"card\",\"constraints\":{\"brands\":[\"visa\",\"mastercard\"]}}], config {}, environment sandbox, secrets stored: false\n"+
		"next: bcpctl handler test loja-nova cartao\n", "handler", "set", "loja-nova", "--preset", "card-sandbox")
	psp := pspFiles(t)
	out = mustOK("handler", "set", "loja-nova", "--preset", "pix-psp", "--id", "pix_banco", "--pix-key", "pix@loja-nova.com.br",
		"--psp-base-url", "https://pix.banco.example/api/v2", "--psp-token-url", "https://pix.banco.example/oauth/token",
		"--psp-client-id", "abc", "--psp-client-secret-file", psp.secret, "--psp-cert", psp.cert, "--psp-key", psp.key, "--psp-webhook-ca", psp.ca)
	if !strings.HasPrefix(out, `handler pix_banco (br.dev.bcp.pix) set: instruments [{"type":"pix"}], config {"pix_key":"pix@loja-nova.com.br"}, environment production, secrets stored: true`+"\n"+
		"  connection: API Pix https://pix.banco.example/api/v2, client abc, certificate CN=loja-sao-joao") || !strings.HasSuffix(out, "next: bcpctl handler test loja-nova pix_banco\n") {
		t.Fatalf("handler set --preset pix-psp:\n%s", out)
	}
	stripeKey := filepath.Join(t.TempDir(), "stripe-key")
	if err := os.WriteFile(stripeKey, []byte("sk_test_51NovaLojaChaveDeTeste0000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustOK("handler", "set", "loja-nova", "--preset", "stripe-card", "--id", "cartao_stripe", "--stripe-key-file", stripeKey)
	if !strings.HasPrefix(out, `handler cartao_stripe (com.example.vendor.delegate_payment) set: instruments [{"type":"card","constraints":{"brands":["visa","mastercard"]}}], config {}, environment production, secrets stored: true`+"\n  connection: Stripe, key ") ||
		strings.Contains(out, "sk_test_51NovaLojaChaveDeTeste0000") {
		t.Fatalf("handler set --preset stripe-card:\n%s", out)
	}
	if s := status(); !s.Ready { // pix's passing test still stands
		t.Fatalf("after the presets: %+v", s)
	}
	mustOK("handler", "set", "loja-nova", "--preset", "pix-sandbox") // set again: its test is forgotten
	wantItem("payment_handler", "missing", "pix: connection not tested since it was last set.", "bcpctl handler test loja-nova pix")
	mustOK("handler", "test", "loja-nova", "pix")

	// An invitation: a link to choose the password, which works once.
	invite := regexp.MustCompile(`^user dona@loja-nova\.com\.br \(admin\) invited, id usr_\S+\nlink to set the password \(works once, until (\S+); send it to the user\): https://loja-nova\.com\.br/admin/senha\?token=([A-Za-z0-9_-]{43})\n$`)
	first := invite.FindStringSubmatch(mustOK("user", "invite", "loja-nova", "Dona@Loja-Nova.com.br"))
	if first == nil {
		t.Fatal("user invite output")
	}
	out = mustOK("user", "invite", "loja-nova", "dona@loja-nova.com.br", "--base-url", "http://loja-nova.com.br:8080/")
	if !strings.Contains(out, ": http://loja-nova.com.br:8080/admin/senha?token=") {
		t.Fatalf("user invite --base-url: %s", out)
	}
	second := regexp.MustCompile(`token=([A-Za-z0-9_-]{43})\n$`).FindStringSubmatch(out)
	secondExp := regexp.MustCompile(`works once, until (\S+);`).FindStringSubmatch(out)
	// user list marks the pending invitation with the newest link's expiry.
	wantInvitation := func(want string) {
		t.Helper()
		users := mustOK("user", "list", "loja-nova")
		lines := strings.Split(strings.TrimSpace(users), "\n")
		if len(lines) != 2 || !regexp.MustCompile(`^EMAIL\s+ROLE\s+LAST LOGIN\s+INVITATION\s+CREATED\s+ID$`).MatchString(lines[0]) {
			t.Fatalf("user list:\n%s", users)
		}
		if m := regexp.MustCompile(`^dona@loja-nova\.com\.br\s+admin\s+(\S+)\s+(.+?)\s+\d{4}-\d\d-\d\dT\S+Z\s+usr_\S+$`).FindStringSubmatch(lines[1]); m == nil || m[2] != want {
			t.Fatalf("user list, want invitation %q:\n%s", want, users)
		}
	}
	if secondExp == nil {
		t.Fatalf("user invite expiry: %s", out)
	}
	wantInvitation("pending until " + secondExp[1])
	b := newPageClient(t, r.PublicAddr, "loja-nova.com.br")
	if p := b.get("/admin/senha?token=" + first[2]); p.status != 404 || !strings.Contains(p.body, `id="link-invalid"`) {
		t.Fatalf("the first link after a second invitation: %d\n%s", p.status, p.body)
	}
	p := b.get("/admin/senha?token=" + second[1])
	if p.status != 200 || !strings.Contains(p.body, `<strong id="link-email">dona@loja-nova.com.br</strong>`) {
		t.Fatalf("set-password page: %d\n%s", p.status, p.body)
	}
	csrf := csrfIn(t, p.body)
	form := func(pw, again string) url.Values {
		return url.Values{"_csrf": {csrf}, "token": {second[1]}, "email": {"dona@loja-nova.com.br"}, "password": {pw}, "password_again": {again}}
	}
	if p := b.post("/admin/senha", form("curta", "curta")); p.status != 422 || !strings.Contains(p.body, "Use ao menos 10 caracteres.") {
		t.Fatalf("short password: %d", p.status)
	}
	if p := b.post("/admin/senha", form("senha-da-dona-1", "senha-da-dona-2")); p.status != 422 || !strings.Contains(p.body, "As duas senhas não são iguais.") {
		t.Fatalf("different passwords: %d", p.status)
	}
	if p := b.post("/admin/senha", url.Values{"_csrf": {"forged"}, "token": {second[1]}, "password": {"senha-da-dona-1"}, "password_again": {"senha-da-dona-1"}}); p.status != 403 {
		t.Fatalf("forged CSRF token: %d", p.status)
	}
	if p := b.post("/admin/senha", form("senha-da-dona-1", "senha-da-dona-1")); p.status != 303 || p.location != "/admin/entrar?ok=senha" {
		t.Fatalf("set password: %d %s", p.status, p.location)
	}
	wantInvitation("-")
	if p := b.post("/admin/senha", form("outra-senha-qualquer", "outra-senha-qualquer")); p.status != 404 || !strings.Contains(p.body, `id="link-invalid"`) {
		t.Fatalf("the link used a second time: %d\n%s", p.status, p.body)
	}
	if p := b.get("/admin/senha?token=" + second[1]); p.status != 404 {
		t.Fatalf("the used link's page: %d", p.status)
	}
	login := b.get("/admin/entrar?ok=senha")
	if !strings.Contains(login.body, "Senha definida. Entre com seu e-mail e a nova senha.") {
		t.Fatalf("sign-in page after the password: %s", login.body)
	}
	if p := b.post("/admin/entrar", url.Values{"_csrf": {csrfIn(t, login.body)}, "email": {"dona@loja-nova.com.br"}, "password": {"outra-senha-qualquer"}}); p.status != 401 {
		t.Fatalf("sign-in with the refused password: %d", p.status)
	}
	if p := b.post("/admin/entrar", url.Values{"_csrf": {csrfIn(t, login.body)}, "email": {"dona@loja-nova.com.br"}, "password": {"senha-da-dona-1"}}); p.status != 303 || p.location != "/admin/" {
		t.Fatalf("sign-in with the chosen password: %d %s", p.status, p.location)
	}
	if p := b.get("/admin/"); p.status != 200 || !strings.Contains(p.body, `data-section="primeiros-passos"`) || !strings.Contains(p.body, `data-checklist="pronto"`) {
		t.Fatalf("dashboard: %d\n%s", p.status, p.body)
	}
	wantErr(2, "duplicate_user", "user", "invite", "loja-nova", "dona@loja-nova.com.br")
}

// pageClient is a cookie-keeping HTTP client of one merchant host on the
// platform's public listener.
type pageClient struct {
	t          *testing.T
	addr, host string
	c          *http.Client
}

type pageResp struct {
	status         int
	location, body string
}

func newPageClient(t *testing.T, addr, host string) *pageClient {
	jar, _ := cookiejar.New(nil)
	return &pageClient{t: t, addr: addr, host: host, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *pageClient) do(method, path string, form url.Values) pageResp {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+b.addr+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Host = b.host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return pageResp{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(raw)}
}

func (b *pageClient) get(path string) pageResp                { return b.do("GET", path, nil) }
func (b *pageClient) post(path string, f url.Values) pageResp { return b.do("POST", path, f) }

func csrfIn(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in:\n%s", body)
	}
	return m[1]
}
