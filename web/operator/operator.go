// Package operator is the operator console: server-rendered pages, no
// JavaScript, where the platform operator onboards and watches merchants
// (tenants): list and search, create, suspend and resume, domains, and the
// last 30 days of usage.
//
// It is served on the public listener for one operator-chosen host
// (--operator-host), matched before Host → tenant routing, so that host
// never resolves to a merchant; merchant hosts never reach it. Every read
// and write goes through the services' connect APIs with the operator
// token, which is also what signs in: the browser gets a stateless
// HMAC-signed session cookie (12 h, HttpOnly, SameSite=Strict, Secure
// unless the public scheme is http). Every POST carries a CSRF token and
// passes net/http's CrossOriginProtection; failed sign-ins back off per
// client IP.
package operator

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/web/internal/pages"
	"github.com/bcpdev/bcp/web/internal/pagesec"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options are the clients the console uses (authenticated with the
// operator token) and how browsers reach it.
type Options struct {
	Tenants  tenantsv1connect.TenantServiceClient
	Checkout checkoutv1connect.CheckoutServiceClient
	Orders   ordersv1connect.OrdersServiceClient
	// OperatorToken is what operators type to sign in; the session and
	// CSRF keys derive from it.
	OperatorToken string
	// PublicScheme "http" (local development) drops the Secure flag.
	PublicScheme string
	Logger       *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Console is the operator console's HTTP handler.
type Console struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	keys    keys
	limit   *limiter
	pages   map[string]*template.Template
	assets  *pages.Assets
	handler http.Handler // the routes behind the security headers
}

// New parses the embedded templates (a parse failure is a programming
// error and panics; the tests parse them).
func New(opts Options) *Console {
	c := &Console{opts: opts, log: opts.Logger, now: opts.Now, keys: deriveKeys(opts.OperatorToken)}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.limit = newLimiter(c.now)
	c.assets = pages.LoadAssets(staticFS, "static", "/static/")
	funcs := template.FuncMap{
		"asset": c.assets.URL,
		"brl":   money.FormatBRL,
		"when":  func(t time.Time) string { return t.In(saoPaulo).Format("02/01/2006 15:04") },
		"day":   formatDay,
		"pct":   errorRate,
		"int":   formatInt,
	}
	c.pages = map[string]*template.Template{}
	for _, p := range []string{"login", "tenants", "new", "tenant", "error"} {
		t := template.New("layout.html").Funcs(funcs)
		c.pages[p] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html"))
	}
	c.handler = pagesec.Headers{CSP: csp, FrameDeny: true}.Wrap(c.routes())
	return c
}

var saoPaulo = func() *time.Location {
	if l, err := time.LoadLocation("America/Sao_Paulo"); err == nil {
		return l
	}
	return time.FixedZone("BRT", -3*3600)
}()

func (c *Console) routes() *http.ServeMux {
	cop := http.NewCrossOriginProtection()
	get := func(h http.HandlerFunc) http.Handler { return c.signedIn(h) }
	post := func(h http.HandlerFunc) http.Handler { return cop.Handler(c.signedIn(c.checkCSRF(h))) }
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", get(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/lojas", http.StatusSeeOther) }))
	mux.HandleFunc("GET /entrar", c.loginPage)
	mux.Handle("POST /entrar", cop.Handler(http.HandlerFunc(c.login)))
	mux.Handle("POST /sair", post(c.logout))
	mux.Handle("GET /lojas", get(c.tenants))
	mux.Handle("GET /lojas/nova", get(c.newTenant))
	mux.Handle("POST /lojas/nova", post(c.createTenant))
	mux.Handle("GET /lojas/{id}", get(c.tenant))
	mux.Handle("POST /lojas/{id}/status", post(c.setStatus))
	mux.Handle("POST /lojas/{id}/dominios", post(c.addDomain))
	mux.Handle("POST /lojas/{id}/dominios/remover", post(c.removeDomain))
	mux.HandleFunc("GET /static/{file}", c.static)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { c.errorPage(w, r, http.StatusNotFound) })
	return mux
}

const csp = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// ServeHTTP serves the console with its security headers (no-store
// except for the hashed static files) and keeps it out of search engines.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Robots-Tag", "noindex, nofollow")
	c.handler.ServeHTTP(w, r)
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	if !c.assets.Serve(w, r, r.PathValue("file")) {
		c.errorPage(w, r, http.StatusNotFound)
	}
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) (session, bool) {
	s, ok := ctx.Value(sessionKey{}).(session)
	return s, ok
}

// signedIn lets signed-in requests through; GETs without a session go to
// the sign-in page, other methods are refused.
func (c *Console) signedIn(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ck, err := r.Cookie(sessionCookie); err == nil {
			if s, ok := c.keys.parseSession(ck.Value, c.now()); ok {
				h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
				return
			}
		}
		if r.Method != http.MethodGet {
			c.errorPage(w, r, http.StatusForbidden)
			return
		}
		http.Redirect(w, r, "/entrar", http.StatusSeeOther)
	})
}

// checkCSRF refuses a signed-in POST whose _csrf field does not match.
func (c *Console) checkCSRF(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		s, ok := sessionFrom(r.Context())
		if !ok || !pagesec.Equal(r.PostFormValue("_csrf"), c.keys.csrfToken(s)) {
			c.errorPage(w, r, http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

func (c *Console) secureCookies(r *http.Request) bool {
	return c.opts.PublicScheme != "http" || r.TLS != nil
}

// page is what every template receives.
type page struct {
	Title    string
	Nav      string // the highlighted section
	SignedIn bool
	CSRF     string
	Notice   string
	Data     any
}

func (c *Console) newPage(r *http.Request, title string, data any) page {
	p := page{Title: title, Data: data, Notice: notices[r.URL.Query().Get("ok")]}
	if s, ok := sessionFrom(r.Context()); ok {
		p.SignedIn, p.CSRF = true, c.keys.csrfToken(s)
	}
	return p
}

var notices = map[string]string{
	"criada":    "Loja criada.",
	"suspensa":  "Loja suspensa: agentes e compradores recebem 403 até ela ser reativada.",
	"reativada": "Loja reativada.",
	"dominio":   "Domínio adicionado.",
	"removido":  "Domínio removido.",
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if err := pages.Render(w, c.pages[name], status, p); err != nil {
		c.log.ErrorContext(r.Context(), "operator console: render", "page", name, "err", err)
		http.Error(w, "Erro interno.", http.StatusInternalServerError)
	}
}

func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int) {
	c.render(w, r, status, "error", c.newPage(r, "Erro", pages.Error(w, status)))
}

// serviceError maps a connect error to a page (pages.ServiceErrorStatus).
func (c *Console) serviceError(w http.ResponseWriter, r *http.Request, err error) {
	status := pages.ServiceErrorStatus(err)
	if status == http.StatusInternalServerError {
		c.log.ErrorContext(r.Context(), "operator console: service call", "err", err)
	}
	c.errorPage(w, r, status)
}

func appErr(err error) *apperr.Error { return pages.AppErr(err) }
