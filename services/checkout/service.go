// Package checkout is the checkout service: it owns checkout sessions and
// their status machine (incomplete, requires_escalation,
// ready_for_complete, complete_in_progress, completed, canceled), builds
// each session from the catalog (items, prices, stock), pricing (totals,
// fulfillment, discounts) and the merchant's settings (links, consent
// purposes, lifetime), runs the money path of a completion, and stores it
// all in the PostgreSQL schema "checkout".
//
// Files, top-down: service.go is the connect API (thin: decode, scope,
// call the domain); machine.go is the status machine and the money path
// through it, every transition in one table (read it first); build.go
// prices a request; complete.go, settle.go and close.go are the money
// path's transitions (claim, reserve, start; await, pay, escalate, reopen;
// cancel, expire); sweeps.go is the background work; store.go is the only
// SQL of the sessions (sqlc package checkoutdb); hooks.go lets tests stop
// a request between two steps.
//
// Calls go one way: this service calls catalog, pricing, tenants, payments
// and orders; the payments service never calls it back but announces
// what changed on its own with durable jobs (paymentevents) that
// SettleWorker works.
//
// Stock is checked, not reserved, while a checkout is open: lines for
// unavailable or sold-out items are removed with a message, quantities
// above stock are lowered with a warning. Stock is reserved at completion.
package checkout

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/lease"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/saopaulo"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/tenantcache"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Service implements checkoutv1connect.CheckoutServiceHandler.
type Service struct {
	store    store
	catalog  catalogv1connect.CatalogServiceClient
	pricing  pricingv1connect.PricingServiceClient
	tenants  tenantsv1connect.TenantServiceClient
	payments paymentsv1connect.PaymentsServiceClient
	orders   ordersv1connect.OrdersServiceClient
	hooks    *Hooks
	now      func() time.Time
	// settingsCache holds each merchant's settings, read on every create,
	// update and complete; Run keeps it in line with the registry.
	settingsCache *tenantcache.Cache[*tenantsv1.Settings]
	// seen remembers sessions as this process wrote them (seen.go).
	seen *seenSessions
	// holder names this process incarnation as the owner of the work it
	// starts (nil: no recovery; tests), working the sessions its requests
	// are working on, retry the recovery's backoff (recover.go).
	holder  *lease.Holder
	working *workingSet
	retry   *backoff
}

// New returns the service over its database and the clients of the
// services it orchestrates.
func New(pool *pgxpool.Pool, c Clients) *Service {
	return &Service{store: store{pool: pool}, catalog: c.Catalog, pricing: c.Pricing, tenants: c.Tenants, payments: c.Payments, orders: c.Orders, now: time.Now,
		settingsCache: tenantcache.New[*tenantsv1.Settings](tenantcache.Options{}), seen: newSeenSessions(),
		working: newWorkingSet(), retry: newBackoff()}
}

// Run follows the tenant registry's changes so cached merchant settings
// are dropped as soon as they change; without it they live 2 s.
func (s *Service) Run(ctx context.Context, log *slog.Logger) {
	tenantcache.Follow(ctx, s.tenants, log, s.settingsCache)
}

// Clients are the services a checkout talks to.
type Clients struct {
	Catalog  catalogv1connect.CatalogServiceClient
	Pricing  pricingv1connect.PricingServiceClient
	Tenants  tenantsv1connect.TenantServiceClient
	Payments paymentsv1connect.PaymentsServiceClient
	Orders   ordersv1connect.OrdersServiceClient
}

var _ checkoutv1connect.CheckoutServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == checkoutv1connect.CheckoutServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[checkoutv1.PingRequest]) (*connect.Response[checkoutv1.PingResponse], error) {
	return connect.NewResponse(&checkoutv1.PingResponse{Service: "checkout", DatabaseOk: s.store.pool.Ping(ctx) == nil}), nil
}

func agentFrom(a *checkoutv1.Agent) (agentInfo, error) {
	if a.GetProfileUrl() == "" {
		return agentInfo{}, apperr.Invalid("agent.profile_url", "agent_required", "the agent profile URL is required")
	}
	return agentInfo{profileURL: a.GetProfileUrl(), capabilities: a.GetCapabilities(), baseURL: strings.TrimRight(a.GetBaseUrl(), "/")}, nil
}

func decodeRequest(raw []byte) (*bcp.Checkout, error) {
	req := &bcp.Checkout{}
	if len(raw) == 0 {
		return nil, apperr.Invalid("checkout", "checkout_required", "checkout is required")
	}
	if err := bcp.DecodeCheckout(raw, req); err != nil {
		return nil, apperr.Invalid("checkout", "invalid_checkout", "checkout is not a valid BCP checkout: %v", err)
	}
	if req.ID != "" {
		return nil, apperr.Invalid("checkout.id", "id_not_allowed", "the checkout payload must not contain id")
	}
	for i, l := range req.LineItems {
		if l.Item.ID == "" || l.Quantity < 1 {
			return nil, apperr.Invalid("checkout.line_items["+itoa(i)+"]", "invalid_line_item", "each line needs item.id and a quantity of at least 1")
		}
	}
	return req, nil
}

// CreateCheckout opens a session. With every requested item unavailable it
// creates nothing and returns an error_response.
func (s *Service) CreateCheckout(ctx context.Context, r *connect.Request[checkoutv1.CreateCheckoutRequest]) (*connect.Response[checkoutv1.CreateCheckoutResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req, err := decodeRequest(r.Msg.GetCheckoutJson())
	if err != nil {
		return nil, err
	}
	// With the cart capability negotiated, cart_id converts a cart (cart.go).
	cartID, err := cartIDOf(r.Msg.GetCheckoutJson())
	if err != nil {
		return nil, err
	}
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CheckoutResult, error) {
		switch {
		case cartID != "" && agent.has(bcpnames.Cart):
			// Not keyed by the insert: a conversion is idempotent per cart
			// already, and its key is stored after it.
			return s.convertCart(ctx, tid, agent, cartID, req)
		case len(req.LineItems) == 0:
			return nil, apperr.Invalid("checkout.line_items", "line_items_required", "a checkout needs at least one line item")
		}
		return s.open(ctx, tid, agent, ids.New("chk"), req, k)
	}, newCheckoutResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CreateCheckoutResponse{Result: res}), nil
}

func newCheckoutResult() *checkoutv1.CheckoutResult { return &checkoutv1.CheckoutResult{} }

// open prices and stores a new session under id (with k's key, if any).
func (s *Service) open(ctx context.Context, tid uuid.UUID, agent agentInfo, id string, req *bcp.Checkout, k *opKey) (*checkoutv1.CheckoutResult, error) {
	b, err := s.build(ctx, agent, id, req, nil, tid.String(), false)
	if err != nil {
		return nil, err
	}
	if b.noItems {
		return errorResult(nothingToSell(b.noItemsBy), agent.baseURL+"/")
	}
	now := s.now().UTC().Truncate(time.Second)
	expires := now.Add(time.Duration(b.settings.GetCheckoutTtlSeconds()) * time.Second)
	c := b.checkout
	c.Status = statusFor(c.Messages)
	c.ExpiresAt = &expires
	c.ContinueURL = continueURL(agent.baseURL, id)
	state, reqJSON, err := encodeBoth(c, b.request)
	if err != nil {
		return nil, err
	}
	if err := move("build", "", c.Status); err != nil {
		return nil, err
	}
	// One statement (the expiry sweep closes it at expires_at).
	p := checkoutdb.InsertSessionParams{
		TenantID: tid, ID: id, Status: c.Status, Currency: c.Currency, Total: grandTotal(c), BuyerEmail: buyerEmail(c),
		AgentProfileUrl: agent.profileURL, Capabilities: nonNil(agent.capabilities), Request: reqJSON, State: state, ExpiresAt: expires,
	}
	xmin, err := s.store.insert(ctx, p, k)
	if err != nil {
		return nil, err
	}
	// The row as the insert wrote it, columns' defaults included.
	s.seen.put(session{
		TenantID: tid, ID: id, Status: p.Status, Currency: p.Currency, Total: p.Total, BuyerEmail: p.BuyerEmail,
		AgentProfileUrl: p.AgentProfileUrl, Capabilities: p.Capabilities, Request: reqJSON, State: state, Version: 1,
		ExpiresAt: expires, CreatedAt: now, UpdatedAt: now, AutomaticDiscountIds: []string{},
	}, c, b.request, xmin, s.now())
	return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}, nil
}

// GetCheckout returns the session's current state. A session past its
// expiry that nobody has closed yet is closed now.
func (s *Service) GetCheckout(ctx context.Context, r *connect.Request[checkoutv1.GetCheckoutRequest]) (*connect.Response[checkoutv1.GetCheckoutResponse], error) {
	sess, err := s.store.get(ctx, r.Msg.GetId())
	if err == nil {
		err = owned(sess, r.Msg.GetAgent().GetProfileUrl())
	}
	if err != nil {
		return nil, err
	}
	if !bcp.Terminal(sess.Status) && !s.now().Before(sess.ExpiresAt) {
		c, err := s.end(ctx, r.Msg.GetId(), endExpire, "", nil)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&checkoutv1.GetCheckoutResponse{Result: c}), nil
	}
	return connect.NewResponse(&checkoutv1.GetCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}}), nil
}

// UpdateCheckout replaces the writable members of a session (full
// replacement). A session that is paying, completed or canceled is
// returned unchanged with a recoverable error.
func (s *Service) UpdateCheckout(ctx context.Context, r *connect.Request[checkoutv1.UpdateCheckoutRequest]) (*connect.Response[checkoutv1.UpdateCheckoutResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req, err := decodeRequest(r.Msg.GetCheckoutJson())
	if err != nil {
		return nil, err
	}
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CheckoutResult, error) {
		return s.update(ctx, tid, agent, r.Msg.GetId(), req, k)
	}, newCheckoutResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.UpdateCheckoutResponse{Result: res}), nil
}

// update prices a full replacement of session id's writable members and
// stores it (with k's key, if any).
func (s *Service) update(ctx context.Context, tid uuid.UUID, agent agentInfo, id string, req *bcp.Checkout, k *opKey) (*checkoutv1.CheckoutResult, error) {
	// The session as this process last wrote it, if it is one this update
	// rewrites (seen.go); anything else is answered from a fresh read.
	if res, done, err := s.fromSeen(ctx, tid, id, func(sess session) bool {
		return sess.AgentProfileUrl == agent.profileURL && bcp.Open(sess.Status) && sess.PaymentAttemptID == nil
	}, func(sess session, prev, _ *bcp.Checkout, xmin *int64) (*checkoutv1.CheckoutResult, error) {
		return s.rewrite(ctx, tid, agent, sess, prev, xmin, req, k)
	}); done {
		return res, err
	}
	sess, err := s.store.get(ctx, id)
	if err == nil {
		err = owned(sess, agent.profileURL)
	}
	if err != nil {
		return nil, err
	}
	if !bcp.Terminal(sess.Status) && !s.now().Before(sess.ExpiresAt) {
		if _, err := s.end(ctx, id, endExpire, "", nil); err != nil {
			return nil, err
		}
		if sess, err = s.store.get(ctx, id); err != nil {
			return nil, err
		}
	}
	prev, err := decodeState(sess)
	if err != nil {
		return nil, err
	}
	if !bcp.Open(sess.Status) || sess.PaymentAttemptID != nil {
		// A payment waiting for the buyer (3-D Secure) holds the checkout
		// as it was charged for: cancel it to change anything.
		status := sess.Status
		if bcp.Open(status) {
			status = bcp.StatusCompleteInProgress
		}
		return unchanged(prev, notModifiable(status))
	}
	return s.rewrite(ctx, tid, agent, sess, prev, nil, req, k)
}

// errReread says a request that started from a remembered session must be
// answered from a fresh read: its fenced write was refused (the row changed
// since this process wrote it), or it is not one that write ends.
var errReread = errors.New("checkout: remembered session is stale")

// rewrite prices req against the open session sess (whose checkout is
// prev) and stores it (with k's key, if any). seen is sess's xmin when sess
// is remembered rather than read (seen.go).
func (s *Service) rewrite(ctx context.Context, tid uuid.UUID, agent agentInfo, sess session, prev *bcp.Checkout, seen *int64, req *bcp.Checkout, k *opKey) (*checkoutv1.CheckoutResult, error) {
	id := sess.ID
	b, err := s.build(ctx, agent, id, req, prev, tid.String(), false)
	if err != nil {
		return nil, err
	}
	c := b.checkout
	c.Status = statusFor(c.Messages)
	c.ExpiresAt = prev.ExpiresAt
	c.ContinueURL = continueURL(agent.baseURL, id)
	if err := move("build", sess.Status, c.Status); err != nil {
		return nil, err
	}
	state, reqJSON, err := encodeBoth(c, b.request)
	if err != nil {
		return nil, err
	}
	capabilities := nonNil(agent.capabilities)
	ok, xmin, err := s.store.update(ctx, sess, seen, c.Status, grandTotal(c), buyerEmail(c), capabilities, reqJSON, state, k)
	if err == nil && !ok {
		if seen != nil {
			return nil, errReread
		}
		err = apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed while this update was being processed; retry")
	}
	if err != nil {
		return nil, err
	}
	next := sess
	next.Status, next.Total, next.BuyerEmail, next.Capabilities = c.Status, grandTotal(c), buyerEmail(c), capabilities
	next.Request, next.State, next.Version, next.UpdatedAt = reqJSON, state, sess.Version+1, s.now()
	s.seen.put(next, c, b.request, xmin, s.now())
	return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}, nil
}

// CancelCheckout cancels an open session (close.go). Like get, update and
// complete, it answers not found for a checkout another agent created.
// Canceling a
// canceled session is a no-op; a completed one is returned unchanged with
// an error message, and so is one whose payment turns out to have been
// made first (completion wins).
func (s *Service) CancelCheckout(ctx context.Context, r *connect.Request[checkoutv1.CancelCheckoutRequest]) (*connect.Response[checkoutv1.CancelCheckoutResponse], error) {
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CheckoutResult, error) {
		return s.end(ctx, r.Msg.GetId(), endCancel, r.Msg.GetAgent().GetProfileUrl(), k)
	}, newCheckoutResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CancelCheckoutResponse{Result: res}), nil
}

// CompleteCheckout places the order of a ready checkout (complete.go).
func (s *Service) CompleteCheckout(ctx context.Context, r *connect.Request[checkoutv1.CompleteCheckoutRequest]) (*connect.Response[checkoutv1.CompleteCheckoutResponse], error) {
	if _, err := tenancy.From(ctx); err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req := &bcp.Checkout{}
	if len(r.Msg.GetCheckoutJson()) > 0 {
		if err := bcp.DecodeCheckout(r.Msg.GetCheckoutJson(), req); err != nil {
			return nil, apperr.Invalid("checkout", "invalid_checkout", "checkout is not a valid BCP checkout: %v", err)
		}
	}
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CheckoutResult, error) {
		return s.complete(ctx, completion{agent: agent, id: r.Msg.GetId(), req: req, webhookURL: r.Msg.GetOrderWebhookUrl(), agentKeys: r.Msg.GetAgentSigningKeysJson(), key: k})
	}, newCheckoutResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CompleteCheckoutResponse{Result: res}), nil
}

// SettlePayment brings a checkout in line with its payment attempt (the
// same as SettleWorker; for operators and tests).
func (s *Service) SettlePayment(ctx context.Context, r *connect.Request[checkoutv1.SettlePaymentRequest]) (*connect.Response[checkoutv1.SettlePaymentResponse], error) {
	res, err := s.settle(ctx, r.Msg.GetCheckoutId(), r.Msg.GetAttemptId(), false, nil)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.SettlePaymentResponse{Status: res.GetStatus()}), nil
}

// ExpireCheckouts closes every session of the tenant past its expiry.
func (s *Service) ExpireCheckouts(ctx context.Context, _ *connect.Request[checkoutv1.ExpireCheckoutsRequest]) (*connect.Response[checkoutv1.ExpireCheckoutsResponse], error) {
	due, err := s.store.expiredOpen(ctx, s.now())
	if err != nil {
		return nil, err
	}
	n := int32(0)
	for _, id := range due {
		res, err := s.end(ctx, id, endExpire, "", nil)
		if err != nil {
			return nil, err
		}
		if res.GetStatus() == bcp.StatusCanceled {
			n++
		}
	}
	return connect.NewResponse(&checkoutv1.ExpireCheckoutsResponse{Expired: n}), nil
}

// ListCheckouts pages through the tenant's sessions, newest first.
func (s *Service) ListCheckouts(ctx context.Context, r *connect.Request[checkoutv1.ListCheckoutsRequest]) (*connect.Response[checkoutv1.ListCheckoutsResponse], error) {
	size := r.Msg.GetPageSize()
	if size <= 0 || size > 500 {
		size = 50
	}
	var status, before *string
	if st := r.Msg.GetStatus(); st != "" {
		if !slices.Contains(bcp.Statuses(), st) {
			return nil, apperr.Invalid("status", "invalid_status", "unknown status %q", st)
		}
		status = &st
	}
	if tok := r.Msg.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, apperr.Invalid("page_token", "invalid_page_token", "malformed page token")
		}
		v := string(b)
		before = &v
	}
	rows, err := s.store.list(ctx, status, before, size)
	if err != nil {
		return nil, err
	}
	out := &checkoutv1.ListCheckoutsResponse{}
	for _, row := range rows {
		out.Checkouts = append(out.Checkouts, &checkoutv1.CheckoutSummary{
			Id: row.ID, Status: row.Status, Currency: row.Currency, Total: row.Total, AgentProfileUrl: row.AgentProfileUrl,
			BuyerEmail: row.BuyerEmail, CreateTimeUnix: row.CreatedAt.Unix(), UpdateTimeUnix: row.UpdatedAt.Unix(),
		})
	}
	if int32(len(rows)) == size {
		out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(rows[len(rows)-1].ID))
	}
	return connect.NewResponse(out), nil
}

// unchanged returns a stored checkout as it is, with one extra message
// (not stored).
func unchanged(c *bcp.Checkout, m bcp.Message) (*checkoutv1.CheckoutResult, error) {
	c.Messages = append([]bcp.Message{m}, c.Messages...)
	b, err := bcp.EncodeCheckout(c)
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: b, Status: c.Status}, nil
}

func notModifiable(status string) bcp.Message {
	content := "Este checkout não pode mais ser alterado."
	switch status {
	case bcp.StatusCompleteInProgress:
		content = "O pagamento deste checkout está em andamento; aguarde o resultado com get_checkout antes de alterá-lo."
	case bcp.StatusCompleted:
		content = "Este checkout já foi concluído e não pode ser alterado."
	case bcp.StatusCanceled:
		content = "Este checkout foi cancelado; inicie um novo."
	}
	return bcp.Error(bcp.CodeCheckoutNotModifiable, bcp.SeverityRecoverable, "$.status", content)
}

func errorResult(m bcp.Message, continueTo string) (*checkoutv1.CheckoutResult, error) {
	b, err := json.Marshal(bcp.ErrorResponse{Messages: []bcp.Message{m}, ContinueURL: continueTo})
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: b, ErrorResponse: true}, nil
}

func continueURL(base, id string) string {
	if base == "" {
		return ""
	}
	return base + "/checkout/" + id
}

func encodeBoth(c, req *bcp.Checkout) ([]byte, []byte, error) {
	state, err := bcp.EncodeCheckout(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := bcp.EncodeCheckout(req)
	return state, r, err
}

func grandTotal(c *bcp.Checkout) int64 {
	for _, t := range c.Totals {
		if t.Type == bcp.TotalTotal {
			return t.Amount
		}
	}
	return 0
}

func buyerEmail(c *bcp.Checkout) string {
	if c.Buyer == nil {
		return ""
	}
	return c.Buyer.Email
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

func result(c *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	b, err := bcp.EncodeCheckout(c)
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: b, Status: c.Status}, nil
}

// pixMessage tells the buyer what to pay and until when, in São Paulo
// time with the zone named ("02/12 13:23 (horário de Brasília, UTC-3)");
// the instrument's expires_at stays UTC.
func pixMessage(amount int64, expires time.Time) string {
	return fmt.Sprintf("Pague %s via Pix até %s (%s); acompanhe com get_checkout.", money.FormatBRL(amount), expires.In(saopaulo.Location).Format("02/01 15:04"), saopaulo.Zone(expires))
}

// nothingToSell is the error_response message of a create whose every item
// is unavailable (code item_unavailable) or sold out (out_of_stock): a
// checkout's or a cart's.
func nothingToSell(code string) bcp.Message {
	content := "Nenhum dos itens pedidos está disponível para compra."
	if code == bcp.CodeOutOfStock {
		content = "Todos os itens pedidos estão esgotados."
	}
	return bcp.Error(code, bcp.SeverityUnrecoverable, "$.line_items", content)
}
