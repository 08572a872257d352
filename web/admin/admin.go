// Package admin is the merchant admin web: server-rendered pages under
// /admin on the merchant's own host, embedded in bcpd, no JavaScript.
//
// The handlers run behind the edge's Host → tenant routing: the tenant is
// tenancy.From(r.Context()), and every read or write goes through the
// services' connect APIs with that tenant in the context, so another
// merchant's ids are simply not found. Merchant users, passwords
// (argon2id) and sessions live in the tenants service; the browser holds
// only the random session token (cookie bcp_admin, HttpOnly,
// SameSite=Strict, Secure outside plain-http development).
//
// Every POST carries a CSRF token: HMAC(key, tenant, session token) for
// signed-in forms, HMAC(key, tenant, nonce cookie) for the sign-in form;
// net/http's CrossOriginProtection refuses cross-site posts first.
package admin

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/saopaulo"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/web/internal/pages"
	"github.com/bcpdev/bcp/web/internal/pagesec"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options are the services the admin calls and how browsers reach it.
type Options struct {
	Tenants  tenantsv1connect.TenantServiceClient
	Catalog  catalogv1connect.CatalogServiceClient
	Checkout checkoutv1connect.CheckoutServiceClient
	Orders   ordersv1connect.OrdersServiceClient
	Pricing  pricingv1connect.PricingServiceClient
	// Payments feeds the dashboard's Pix chart; nil leaves it out.
	Payments paymentsv1connect.PaymentsServiceClient
	Logger   *slog.Logger
	// CSRFKey keys the form tokens; every edge process of a deployment
	// needs the same key. Empty: random per process.
	CSRFKey []byte
	// PublicScheme "http" (local development) drops the Secure flag.
	PublicScheme string
}

// Admin holds the parsed templates and hashed static files.
type Admin struct {
	opts   Options
	log    *slog.Logger
	pages  map[string]*template.Template
	assets *pages.Assets
	key    []byte
}

// Cookie names. Both are scoped to /admin.
const (
	sessionCookie = "bcp_admin"
	loginCookie   = "bcp_admin_login"
)

// New parses the embedded templates (a parse failure is a programming
// error and panics; the tests parse them).
func New(opts Options) *Admin {
	a := &Admin{opts: opts, log: opts.Logger, key: pagesec.Key(opts.CSRFKey)}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.assets = pages.LoadAssets(staticFS, "static", "/admin/static/")
	funcs := template.FuncMap{
		"asset": a.assets.URL,
		"brl":   money.FormatBRL,
		"unix": func(s int64) string {
			return time.Unix(s, 0).In(saoPaulo).Format("02/01/2006 15:04")
		},
		"when":      func(t time.Time) string { return t.In(saoPaulo).Format("02/01/2006 15:04") },
		"statusPT":  statusPT,
		"paymentPT": paymentLabel,
		"brand":     brandName,
		"cep":       fmtCEP,
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"pct": func(bp int64) string { return formatPercent(bp) + " %" },
	}
	a.pages = map[string]*template.Template{}
	for _, p := range append([]string{"login", "products", "product", "orders", "order", "slip", "checkouts", "checkout", "shipping", "rate", "discounts", "discount", "users", "apikeys", "settings", "error", "dashboard"}, merchantPages...) {
		t := template.New("layout.html").Funcs(funcs)
		a.pages[p] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/field.html", "templates/"+p+".html"))
	}
	return a
}

// saoPaulo is the zone every admin time is shown in (internal/saopaulo).
var saoPaulo = saopaulo.Location

// Routes returns the handlers by ServeMux pattern, to be mounted on the
// public mux behind Host routing.
func (a *Admin) Routes() map[string]http.Handler {
	cop := http.NewCrossOriginProtection()
	get := func(h http.HandlerFunc) http.Handler { return secure(a.signedIn(h)) }
	post := func(h http.HandlerFunc) http.Handler { return secure(cop.Handler(a.signedIn(a.checkCSRF(h)))) }
	routes := a.merchantRoutes(get, post, cop)
	for pattern, h := range map[string]http.Handler{
		"GET /admin":                           secure(http.RedirectHandler("/admin/", http.StatusSeeOther)),
		"GET /admin/{$}":                       get(a.dashboard),
		"GET /admin/entrar":                    secure(http.HandlerFunc(a.loginPage)),
		"POST /admin/entrar":                   secure(cop.Handler(http.HandlerFunc(a.login))),
		"POST /admin/sair":                     post(a.logout),
		"GET /admin/produtos":                  get(a.products),
		"GET /admin/produtos/novo":             get(a.newProduct),
		"POST /admin/produtos/novo":            post(a.createProduct),
		"GET /admin/produtos/{id}":             get(a.editProduct),
		"POST /admin/produtos/{id}":            post(a.updateProduct),
		"GET /admin/pedidos":                   get(a.orders),
		"GET /admin/pedidos/{id}":              get(a.order),
		"GET /admin/pedidos.csv":               get(a.ordersCSV),
		"GET /admin/pedidos/{id}/separacao":    get(a.packingSlip),
		"POST /admin/pedidos/{id}/reembolso":   post(a.refund),
		"POST /admin/pedidos/{id}/fulfillment": post(a.fulfillment),
		"GET /admin/checkouts":                 get(a.checkouts),
		"GET /admin/checkouts/{id}":            get(a.checkout),
		"GET /admin/frete":                     get(a.shipping),
		"GET /admin/frete/nova":                get(a.rateEdit),
		"POST /admin/frete/nova":               post(a.rateSave),
		"GET /admin/frete/{id}":                get(a.rateEdit),
		"POST /admin/frete/{id}":               post(a.rateSave),
		"GET /admin/descontos":                 get(a.discounts),
		"GET /admin/descontos/novo":            get(a.discountEdit),
		"POST /admin/descontos/novo":           post(a.discountSave),
		"GET /admin/descontos/{id}":            get(a.discountEdit),
		"POST /admin/descontos/{id}":           post(a.discountSave),
		"GET /admin/usuarios":                  get(a.users),
		"POST /admin/usuarios":                 post(a.invite),
		"GET /admin/agentes":                   get(a.apiKeys),
		"POST /admin/agentes":                  post(a.createAPIKey),
		"POST /admin/agentes/{id}/revogar":     post(a.revokeAPIKey),
		"GET /admin/configuracoes":             get(a.settings),
		"POST /admin/configuracoes":            post(a.saveSettings),
		"GET /admin/static/{file}":             http.HandlerFunc(a.static),
	} {
		routes[pattern] = h
	}
	return routes
}

const csp = "default-src 'none'; style-src 'self'; img-src 'self' data: https:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

var secure = pagesec.Headers{CSP: csp, FrameDeny: true}.Wrap

func (a *Admin) static(rw http.ResponseWriter, r *http.Request) {
	if !a.assets.Serve(rw, r, r.PathValue("file")) {
		http.NotFound(rw, r)
	}
}

// session is the signed-in user of a request.
type session struct {
	tenant uuid.UUID
	token  string
	user   *tenantsv1.MerchantUser
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// signedIn resolves the session cookie in the request's tenant; without
// a live session GETs go to the sign-in page and POSTs are refused.
func (a *Admin) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		tid, err := tenancy.From(r.Context())
		if err != nil {
			a.errorPage(rw, r, http.StatusNotFound)
			return
		}
		c, err := r.Cookie(sessionCookie)
		if err == nil && c.Value != "" {
			resp, err := a.opts.Tenants.GetMerchantSession(r.Context(), connect.NewRequest(&tenantsv1.GetMerchantSessionRequest{TenantId: tid.String(), SessionToken: c.Value}))
			if err == nil {
				s := &session{tenant: tid, token: c.Value, user: resp.Msg.GetUser()}
				h(rw, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
				return
			}
			if !isKind(err, apperr.KindNotFound) {
				a.serviceError(rw, r, err)
				return
			}
		}
		if r.Method != http.MethodGet {
			a.errorPage(rw, r, http.StatusForbidden)
			return
		}
		http.Redirect(rw, r, "/admin/entrar?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
	}
}

func (a *Admin) mac(parts ...string) string { return pagesec.MAC(a.key, "bcp-admin/csrf", parts...) }

// csrfToken is the form token of the signed-in session.
func (a *Admin) csrfToken(s *session) string { return a.mac("session", s.tenant.String(), s.token) }

// checkCSRF refuses a signed-in POST whose _csrf field does not match.
func (a *Admin) checkCSRF(h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(rw, r.Body, 1<<20)
		s := sessionFrom(r.Context())
		if s == nil || !pagesec.Equal(r.PostFormValue("_csrf"), a.csrfToken(s)) {
			a.errorPage(rw, r, http.StatusForbidden)
			return
		}
		h(rw, r)
	}
}

func (a *Admin) secureCookies(r *http.Request) bool {
	return a.opts.PublicScheme != "http" || r.TLS != nil
}

// page is what every page template receives.
type page struct {
	Title  string
	Nav    string
	User   *tenantsv1.MerchantUser
	CSRF   string
	Notice string
	Data   any
}

func (a *Admin) newPage(r *http.Request, title, nav string, data any) page {
	p := page{Title: title, Nav: nav, Data: data, Notice: noticeText[r.URL.Query().Get("ok")]}
	if s := sessionFrom(r.Context()); s != nil {
		p.User, p.CSRF = s.user, a.csrfToken(s)
	}
	return p
}

var noticeText = map[string]string{
	"criado":     "Produto criado.",
	"salvo":      "Alterações salvas.",
	"reembolso":  "Reembolso solicitado.",
	"fulfilment": "Evento de entrega registrado.",
	"revogada":   "Chave revogada.",
}

func (a *Admin) render(rw http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if err := pages.Render(rw, a.pages[name], status, p); err != nil {
		a.log.ErrorContext(r.Context(), "admin: render", "page", name, "err", err)
		http.Error(rw, "Erro interno.", http.StatusInternalServerError)
	}
}

func (a *Admin) errorPage(rw http.ResponseWriter, r *http.Request, status int) {
	a.render(rw, r, status, "error", a.newPage(r, "Erro", "", pages.Error(rw, status)))
}

// serviceError maps a connect error to a page (pages.ServiceErrorStatus).
func (a *Admin) serviceError(rw http.ResponseWriter, r *http.Request, err error) {
	status := pages.ServiceErrorStatus(err)
	if status == http.StatusInternalServerError {
		a.log.ErrorContext(r.Context(), "admin: service call", "err", err)
	}
	a.errorPage(rw, r, status)
}

func appErr(err error) *apperr.Error { return pages.AppErr(err) }

func isKind(err error, k apperr.Kind) bool { return appErr(err).Kind == k }

func statusPT(s string) string {
	if t, ok := statusText[s]; ok {
		return t
	}
	return s
}

var statusText = map[string]string{
	bcp.StatusIncomplete: "Incompleto", bcp.StatusRequiresEscalation: "Requer comprador", bcp.StatusReadyForComplete: "Pronto para concluir",
	bcp.StatusCompleteInProgress: "Concluindo", bcp.StatusCompleted: "Concluído", bcp.StatusCanceled: "Cancelado",
	"processing": "Em processamento", "partial": "Parcial", "fulfilled": "Entregue", "removed": "Removido",
	"pending": "Pendente", "failed": "Falhou", "refund": "Reembolso",
	"shipped": "Enviado", "in_transit": "Em trânsito", "delivered": "Entregue", "failed_attempt": "Tentativa falhou",
	"undeliverable": "Não entregável", "returned_to_sender": "Devolvido ao remetente",
	"open": "Aberto", "paid": "Pago",
}
