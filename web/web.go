// Package web serves the buyer-facing hosted checkout page (the checkout's
// continue_url), its live status endpoint, the sandbox "simular pagamento"
// action and a simple order page. Pages are server-rendered with
// html/template and embedded in the binary; the only script is one small
// static file, so the Content-Security-Policy forbids inline code.
//
// Handlers run behind the edge's Host routing: the tenant is already in
// the request context (tenancy.From), and the connect clients forward it,
// so another merchant's ids simply come back not found.
package web

import (
	"embed"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/web/internal/pages"
	"github.com/bcpdev/bcp/web/internal/pagesec"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Environments for Options.Environment.
const (
	// EnvironmentSandbox offers "Simular pagamento" on every Pix in
	// progress (the payments service still refuses production handlers).
	EnvironmentSandbox = "sandbox"
	// EnvironmentProduction never offers or accepts a simulated payment,
	// whatever the merchant's handler says.
	EnvironmentProduction = "production"
)

// Options are the services the pages read and how they are reached.
type Options struct {
	Checkout checkoutv1connect.CheckoutServiceClient
	Payments paymentsv1connect.PaymentsServiceClient
	Tenants  tenantsv1connect.TenantServiceClient
	// Orders is optional: without it (or while GetOrder is unimplemented)
	// /orders/{id} answers 404.
	Orders ordersv1connect.OrdersServiceClient
	Logger *slog.Logger

	// Environment is "" (decide per Pix: sandbox when the merchant's
	// payment handler is configured with environment "sandbox"),
	// EnvironmentSandbox or EnvironmentProduction.
	Environment string
	// CSRFKey keys the simulate-payment form tokens. Empty: a random key
	// per process, which is enough for one process; several edge
	// processes behind one host need the same key.
	CSRFKey []byte
	// PublicScheme is how browsers reach the merchant ("https" by
	// default); with "http" (local development) cookies are not Secure.
	PublicScheme string
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Web holds the parsed templates and the hashed static assets.
type Web struct {
	opts    Options
	log     *slog.Logger
	pages   map[string]*template.Template
	assets  *pages.Assets
	csrfKey []byte
	now     func() time.Time
}

// New parses the embedded templates and indexes the static files. The
// templates are part of the binary, so a parse failure is a programming
// error and panics (the package tests parse them).
func New(opts Options) *Web {
	w := &Web{opts: opts, log: opts.Logger, now: opts.Now, csrfKey: pagesec.Key(opts.CSRFKey)}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.assets = pages.LoadAssets(staticFS, "static", "/static/")
	funcs := template.FuncMap{
		"asset": w.assets.URL,
		"brl":   money.FormatBRL,
	}
	w.pages = map[string]*template.Template{}
	for _, page := range []string{"checkout", "order", "error", "policy"} {
		t := template.New("layout.html").Funcs(funcs)
		w.pages[page] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	return w
}

// Routes returns the handlers by Go 1.22 ServeMux pattern, to be mounted
// on the public mux behind Host routing.
func (w *Web) Routes() map[string]http.Handler {
	// The token is the first CSRF guard; Sec-Fetch-Site/Origin checking
	// (net/http's CrossOriginProtection) refuses cross-site posts before
	// any service is called.
	simulate := http.NewCrossOriginProtection().Handler(http.HandlerFunc(w.simulatePayment))
	return map[string]http.Handler{
		"GET /checkout/{id}":                   secure(http.HandlerFunc(w.checkoutPage)),
		"GET /checkout/{id}/status":            secure(http.HandlerFunc(w.checkoutStatus)),
		"POST /checkout/{id}/simulate-payment": secure(simulate),
		"GET /orders/{id}":                     secure(http.HandlerFunc(w.orderPage)),
		"GET /politicas/{page}":                secure(http.HandlerFunc(w.policyPage)),
		"GET /static/{file}":                   secure(http.HandlerFunc(w.static)),
	}
}

// csp allows only our own script, style and images (the Pix QR is served
// by the platform on the merchant's host or inlined as a data: URL).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// secure sets the headers every response carries; static assets override
// no-store.
var secure = pagesec.Headers{CSP: csp}.Wrap

func (w *Web) static(rw http.ResponseWriter, r *http.Request) {
	if !w.assets.Serve(rw, r, r.PathValue("file")) {
		w.notFound(rw, r)
	}
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (w *Web) render(rw http.ResponseWriter, r *http.Request, status int, page string, data any) {
	if err := pages.Render(rw, w.pages[page], status, data); err != nil {
		w.log.ErrorContext(r.Context(), "web: render", "page", page, "err", err)
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusInternalServerError)
		_, _ = rw.Write([]byte("Erro interno.\n"))
	}
}

// errorView is the data of the error page.
type errorView struct {
	Status int
	Kind   string // not_found | forbidden | unavailable | internal
}

func (w *Web) notFound(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusNotFound, "error", errorView{Status: http.StatusNotFound, Kind: "not_found"})
}

func (w *Web) errorPage(rw http.ResponseWriter, r *http.Request, status int) {
	kind := "internal"
	switch status {
	case http.StatusNotFound:
		kind = "not_found"
	case http.StatusForbidden:
		kind = "forbidden"
	case http.StatusServiceUnavailable:
		kind = "unavailable"
		rw.Header().Set("Retry-After", "2")
	}
	w.render(rw, r, status, "error", errorView{Status: status, Kind: kind})
}

// writeJSON writes v; errors use the platform's flat body
// {"code": "...", "content": "..."}.
func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		rw.Header().Set("Retry-After", "2")
	}
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// policies are the pages a merchant's links may point to until it
// publishes its own (the demo merchant's do): the platform's default
// privacy policy and terms, under the merchant's name.
var policies = map[string]string{"privacidade": "Política de privacidade", "termos": "Termos de uso"}

type policyView struct{ Kind, Title, Merchant string }

func (w *Web) policyPage(rw http.ResponseWriter, r *http.Request) {
	tenant, ok := w.tenantOf(r)
	title, known := policies[r.PathValue("page")]
	if !ok || !known {
		w.notFound(rw, r)
		return
	}
	m := w.merchant(r.Context(), tenant)
	w.render(rw, r, http.StatusOK, "policy", policyView{Kind: r.PathValue("page"), Title: title, Merchant: m.name})
}
