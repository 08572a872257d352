package web

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/saopaulo"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/web/internal/pages"
)

// Page states: what the buyer sees, derived from the checkout status (and,
// for Pix, the instrument's display data) by classify alone, so the page
// and the status endpoint can never disagree.
const (
	stateOpen          = "open"            // the agent is still building the order
	stateAction        = "action_required" // requires_escalation: the buyer must act
	statePixPending    = "pix_pending"     // complete_in_progress with a Pix to pay
	stateProcessing    = "processing"      // complete_in_progress without Pix data
	statePaid          = "paid"            // completed
	statePixExpired    = "pix_expired"     // back to ready_for_complete: the Pix ran out
	statePaymentFailed = "payment_failed"  // back with payment_failed otherwise
	stateCanceled      = "canceled"
)

// brasilia renders times for the buyer: America/Sao_Paulo, as every page
// and message of the platform (internal/saopaulo), and the pages say so.
var brasilia = saopaulo.Location

var errNotFound = apperr.NotFound("not_found", "not found")

// pixDisplay is the instrument's display.pix (the attempt's display_json).
// AttemptID and Environment are what this page needs beyond the protocol
// fields: the attempt to simulate and whether it is a sandbox charge.
type pixDisplay struct {
	CopiaECola  string `json:"copia_e_cola"`
	QRPNGURL    string `json:"qr_png_url"`
	QRSVGURL    string `json:"qr_svg_url"`
	TxID        string `json:"txid"`
	Amount      string `json:"amount"`
	ExpiresAt   string `json:"expires_at"`
	AttemptID   string `json:"attempt_id"`
	Environment string `json:"environment"`
}

// pixInfo is the Pix instrument of a checkout.
type pixInfo struct {
	handlerID string
	data      pixDisplay
	expiresAt time.Time // zero when absent or malformed
}

// tenantOf returns the request's tenant, set by the edge's Host routing.
// Without one nothing is served (fail closed).
func (w *Web) tenantOf(r *http.Request) (uuid.UUID, bool) {
	id, err := tenancy.From(r.Context())
	if err != nil {
		w.log.ErrorContext(r.Context(), "web: request without a tenant; mount the routes behind the edge's Host routing")
		return uuid.Nil, false
	}
	return id, true
}

// loadCheckout reads a checkout of the context tenant. Ids that cannot be
// checkout ids are not sent to the service at all.
func (w *Web) loadCheckout(ctx context.Context, id string) (*bcp.Checkout, error) {
	if !ids.HasPrefix(id, "chk") {
		return nil, errNotFound
	}
	resp, err := w.opts.Checkout.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: id}))
	if err != nil {
		return nil, err
	}
	res := resp.Msg.GetResult()
	if res.GetErrorResponse() {
		return nil, errNotFound
	}
	c := &bcp.Checkout{}
	if err := json.Unmarshal(res.GetCheckoutJson(), c); err != nil {
		return nil, err
	}
	return c, nil
}

// findPix returns the checkout's Pix instrument with display data,
// preferring the selected one; nil when there is none.
func findPix(c *bcp.Checkout) *pixInfo {
	if c.Payment == nil {
		return nil
	}
	var found *pixInfo
	for _, in := range c.Payment.Instruments {
		if len(in.Display) == 0 {
			continue
		}
		var d struct {
			Pix *pixDisplay `json:"pix"`
		}
		if json.Unmarshal(in.Display, &d) != nil || d.Pix == nil {
			continue
		}
		p := &pixInfo{handlerID: in.HandlerID, data: *d.Pix}
		p.expiresAt, _ = time.Parse(time.RFC3339, p.data.ExpiresAt)
		if found == nil || (in.Selected != nil && *in.Selected) {
			found = p
		}
	}
	return found
}

// fillFromAttempt completes a Pix display that names its attempt but lacks
// the code (the checkout may store only the attempt id) from the payments
// service. Best effort: the page works without it.
func (w *Web) fillFromAttempt(ctx context.Context, c *bcp.Checkout, p *pixInfo) {
	if p == nil || p.data.CopiaECola != "" || p.data.AttemptID == "" || c.Status != bcp.StatusCompleteInProgress || w.opts.Payments == nil {
		return
	}
	resp, err := w.opts.Payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: p.data.AttemptID}))
	if err != nil {
		w.log.DebugContext(ctx, "web: get payment", "attempt_id", p.data.AttemptID, "err", err)
		return
	}
	var d struct {
		Pix *pixDisplay `json:"pix"`
	}
	if json.Unmarshal([]byte(resp.Msg.GetAttempt().GetDisplayJson()), &d) != nil || d.Pix == nil {
		return
	}
	attempt := p.data.AttemptID
	p.data = *d.Pix
	p.data.AttemptID = attempt
	p.expiresAt, _ = time.Parse(time.RFC3339, p.data.ExpiresAt)
}

// paymentFailed returns the checkout's payment_failed message, if any.
func paymentFailed(c *bcp.Checkout) (bcp.Message, bool) {
	for _, m := range c.Messages {
		if m.Type == bcp.MessageError && m.Code == bcp.CodePaymentFailed {
			return m, true
		}
	}
	return bcp.Message{}, false
}

func classify(c *bcp.Checkout, p *pixInfo, now time.Time) string {
	switch c.Status {
	case bcp.StatusCompleted:
		return statePaid
	case bcp.StatusCanceled:
		return stateCanceled
	case bcp.StatusCompleteInProgress:
		if p != nil && p.data.CopiaECola != "" {
			return statePixPending
		}
		return stateProcessing
	case bcp.StatusRequiresEscalation:
		return stateAction
	}
	if m, ok := paymentFailed(c); ok {
		// With the Pix still on the checkout, its expiry decides. The
		// completion flow drops the instrument when it reopens the
		// checkout, and payment_failed has no machine-readable reason, so
		// then the message text is all there is.
		if p != nil {
			if p.expiresAt.IsZero() || !now.Before(p.expiresAt) {
				return statePixExpired
			}
			return statePaymentFailed
		}
		if strings.Contains(strings.ToLower(m.Content), "expir") {
			return statePixExpired
		}
		return statePaymentFailed
	}
	return stateOpen
}

// merchantInfo is what the registry says about the tenant for the page.
type merchantInfo struct {
	name     string
	handlers []*tenantsv1.PaymentHandler
}

// merchant reads the tenant's name and payment handlers. A failure only
// costs the name (logged) and turns sandbox detection off.
func (w *Web) merchant(ctx context.Context, tenant uuid.UUID) merchantInfo {
	resp, err := w.opts.Tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenant.String()}))
	if err != nil {
		w.log.WarnContext(ctx, "web: tenant discovery", "tenant_id", tenant, "err", err)
		return merchantInfo{}
	}
	return merchantInfo{name: resp.Msg.GetTenant().GetName(), handlers: resp.Msg.GetPaymentHandlers()}
}

// sandbox says whether this Pix may be paid with "Simular pagamento": the
// process setting wins, then the merchant's handler configuration, then
// (for a handler removed since) what the attempt says about itself.
func (w *Web) sandbox(p *pixInfo, m merchantInfo) bool {
	switch w.opts.Environment {
	case EnvironmentProduction:
		return false
	case EnvironmentSandbox:
		return true
	}
	if p == nil {
		return false
	}
	for _, h := range m.handlers {
		if h.GetId() == p.handlerID {
			return h.GetEnvironment() == EnvironmentSandbox
		}
	}
	return p.data.Environment == EnvironmentSandbox
}

// httpStatus maps a failed service call to the status the buyer gets.
// Not found and malformed ids look the same, so nothing about other
// merchants' ids leaks.
func (w *Web) httpStatus(r *http.Request, err error) int {
	if apperr.IsKind(err, apperr.KindInvalidArgument) {
		return http.StatusNotFound // a malformed id: not found, like another merchant's
	}
	status := pages.ServiceErrorStatus(err)
	if status == http.StatusInternalServerError {
		w.log.ErrorContext(r.Context(), "web: service call failed", "path", r.URL.Path, "err", err)
	}
	return status
}

// ---- page ----

type checkoutView struct {
	ID           string
	Merchant     string
	State        string
	Status       string
	Expired      bool // canceled because it expired
	Items        []itemView
	Totals       []totalView
	Delivery     []deliveryView
	Alerts       []bcp.Message // need the buyer (requires_escalation)
	Notes        []bcp.Message // everything else worth showing
	Pix          *pixView
	Order        *orderRef
	Links        []linkView
	ExpiresLocal string       // the checkout's own expiry, while open
	ContinueURL  template.URL // requires_escalation elsewhere (e.g. the bank's 3DS page)
	StatusURL    string
	Poll         bool
	Simulated    bool // just back from "Simular pagamento"
}

type itemView struct {
	Title     string
	Quantity  int64
	UnitPrice int64
	LineTotal int64
}

type totalView struct {
	Label   string
	Amount  int64
	IsTotal bool
}

type deliveryView struct {
	Pickup      bool
	Name        string
	Lines       []string
	Option      string
	Carrier     string
	Description string
	Amount      int64
	HasAmount   bool
}

type pixView struct {
	CopiaECola       string
	QRURL            template.URL // "" when no safe image is available
	TxID             string
	Amount           int64
	HasAmount        bool
	ExpiresISO       string
	ExpiresLocal     string
	RemainingSeconds int64
	Remaining        string
	AttemptID        string
	Sandbox          bool
	CSRFToken        string
}

type orderRef struct {
	ID        string       `json:"id"`
	Label     string       `json:"label,omitempty"`
	Permalink template.URL `json:"permalink_url,omitempty"`
}

type linkView struct {
	Label string
	URL   string
}

func (w *Web) checkoutPage(rw http.ResponseWriter, r *http.Request) {
	tenant, ok := w.tenantOf(r)
	if !ok {
		w.notFound(rw, r)
		return
	}
	ctx := r.Context()
	id := r.PathValue("id")
	c, err := w.loadCheckout(ctx, id)
	if err != nil {
		w.errorPage(rw, r, w.httpStatus(r, err))
		return
	}
	p := findPix(c)
	w.fillFromAttempt(ctx, c, p)
	now := w.now()
	m := w.merchant(ctx, tenant)
	v := buildView(c, p, classify(c, p, now), now)
	v.Merchant = m.name
	v.ID = id
	v.StatusURL = "/checkout/" + id + "/status"
	v.Simulated = r.URL.Query().Get("simulado") == "1"
	if v.Pix != nil {
		v.Pix.QRURL = qrURL(r.Host, p.data)
		if v.Pix.AttemptID != "" && w.sandbox(p, m) {
			v.Pix.Sandbox = true
			v.Pix.CSRFToken = w.csrfToken(rw, r, tenant, id)
		}
	}
	w.render(rw, r, http.StatusOK, "checkout", v)
}

// ---- status ----

// statusBody is the polling answer: only what the page itself shows, never
// buyer data. ExpiresAt is the deadline of what the page waits for: the
// Pix while one is pending, otherwise the checkout.
type statusBody struct {
	Status    string     `json:"status"`
	State     string     `json:"state"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Order     *orderRef  `json:"order,omitempty"`
}

func (w *Web) checkoutStatus(rw http.ResponseWriter, r *http.Request) {
	if _, ok := w.tenantOf(r); !ok {
		writeJSON(rw, http.StatusNotFound, map[string]string{"code": "not_found", "content": "not found"})
		return
	}
	c, err := w.loadCheckout(r.Context(), r.PathValue("id"))
	if err != nil {
		st := w.httpStatus(r, err)
		code := "internal_error"
		switch st {
		case http.StatusNotFound:
			code = "not_found"
		case http.StatusForbidden:
			code = "forbidden"
		case http.StatusServiceUnavailable:
			code = "unavailable"
		}
		writeJSON(rw, st, map[string]string{"code": code, "content": http.StatusText(st)})
		return
	}
	p := findPix(c)
	w.fillFromAttempt(r.Context(), c, p)
	b := statusBody{Status: c.Status, State: classify(c, p, w.now())}
	switch {
	case b.State == statePixPending && !p.expiresAt.IsZero():
		t := p.expiresAt.UTC()
		b.ExpiresAt = &t
	case b.State != statePaid && b.State != stateCanceled && c.ExpiresAt != nil:
		t := c.ExpiresAt.UTC()
		b.ExpiresAt = &t
	}
	if c.Order != nil {
		b.Order = &orderRef{ID: c.Order.ID, Label: c.Order.Label, Permalink: safeLink(c.Order.PermalinkURL)}
	}
	writeJSON(rw, http.StatusOK, b)
}
