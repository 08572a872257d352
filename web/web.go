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
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
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
	assets  map[string]asset  // by served name ("app.1a2b3c4d5e.css")
	assetOf map[string]string // logical name → served URL path
	csrfKey []byte
	now     func() time.Time
}

type asset struct {
	body        []byte
	contentType string
}

// New parses the embedded templates and indexes the static files. The
// templates are part of the binary, so a parse failure is a programming
// error and panics (the package tests parse them).
func New(opts Options) *Web {
	w := &Web{opts: opts, log: opts.Logger, now: opts.Now, csrfKey: opts.CSRFKey}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.now == nil {
		w.now = time.Now
	}
	if len(w.csrfKey) == 0 {
		w.csrfKey = make([]byte, 32)
		_, _ = rand.Read(w.csrfKey) // never fails (crypto/rand panics instead)
	}
	w.loadAssets()
	funcs := template.FuncMap{
		"asset": func(name string) string { return w.assetOf[name] },
		"brl":   formatBRL,
	}
	w.pages = map[string]*template.Template{}
	for _, page := range []string{"checkout", "order", "error"} {
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
		"GET /static/{file}":                   secure(http.HandlerFunc(w.static)),
	}
}

// csp allows only our own script, style and images (the Pix QR is served
// by the platform on the merchant's host or inlined as a data: URL).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// secure sets the headers every response carries. Pages hold personal
// data (address, order), so no-store is the default; static assets
// override it.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hd := rw.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(rw, r)
	})
}

// loadAssets names every static file by a hash of its content, so pages
// can let browsers cache them forever and a new binary busts the cache.
func (w *Web) loadAssets() {
	w.assets = map[string]asset{}
	w.assetOf = map[string]string{}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := staticFS.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(e.Name())
		served := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:5]) + ext
		ctype := mime.TypeByExtension(ext)
		switch ext { // the system MIME table may lack or differ on these
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		}
		w.assets[served] = asset{body: body, contentType: ctype}
		w.assetOf[e.Name()] = "/static/" + served
	}
}

func (w *Web) static(rw http.ResponseWriter, r *http.Request) {
	a, ok := w.assets[r.PathValue("file")]
	if !ok {
		w.notFound(rw, r)
		return
	}
	rw.Header().Set("Content-Type", a.contentType)
	rw.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(rw, r, "", time.Time{}, bytes.NewReader(a.body))
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (w *Web) render(rw http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var buf bytes.Buffer
	if err := w.pages[page].Execute(&buf, data); err != nil {
		w.log.ErrorContext(r.Context(), "web: render", "page", page, "err", err)
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusInternalServerError)
		_, _ = rw.Write([]byte("Erro interno.\n"))
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(status)
	_, _ = buf.WriteTo(rw)
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
