// Package checkout is the checkout service: it owns checkout sessions and
// their status machine (incomplete, requires_escalation,
// ready_for_complete, complete_in_progress, completed, canceled), builds
// each session from the catalog (items, prices, stock), pricing (totals,
// fulfillment, discounts) and the merchant's settings (links, consent
// purposes, lifetime), and stores it in the PostgreSQL schema "checkout".
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
	"log/slog"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
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
	"github.com/bcpdev/bcp/tenants/tenantcache"
)

// Service implements checkoutv1connect.CheckoutServiceHandler.
type Service struct {
	pool     *pgxpool.Pool
	catalog  catalogv1connect.CatalogServiceClient
	pricing  pricingv1connect.PricingServiceClient
	tenants  tenantsv1connect.TenantServiceClient
	payments paymentsv1connect.PaymentsServiceClient
	orders   ordersv1connect.OrdersServiceClient
	jobs     *jobs.Client
	now      func() time.Time
	// settingsCache holds each merchant's settings, read on every create,
	// update and complete; Run keeps it in line with the registry.
	settingsCache *tenantcache.Cache[*tenantsv1.Settings]
}

// New returns the service over its database and the clients of the
// services it orchestrates.
func New(pool *pgxpool.Pool, c Clients) *Service {
	return &Service{pool: pool, catalog: c.Catalog, pricing: c.Pricing, tenants: c.Tenants, payments: c.Payments, orders: c.Orders, now: time.Now,
		settingsCache: tenantcache.New[*tenantsv1.Settings](tenantcache.Options{})}
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
	return connect.NewResponse(&checkoutv1.PingResponse{Service: "checkout", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
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
	if err := segjson.Unmarshal(raw, req); err != nil {
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
	if len(req.LineItems) == 0 {
		return nil, apperr.Invalid("checkout.line_items", "line_items_required", "a checkout needs at least one line item")
	}
	id := ids.New("chk")
	b, err := s.build(ctx, agent, id, req, nil, nil, tid.String(), false)
	if err != nil {
		return nil, err
	}
	if b.noItems {
		content := "Nenhum dos itens pedidos está disponível para compra."
		if b.noItemsBy == bcp.CodeOutOfStock {
			content = "Todos os itens pedidos estão esgotados."
		}
		res, err := errorResult(bcp.Error(b.noItemsBy, bcp.SeverityUnrecoverable, "$.line_items", content), agent.baseURL+"/")
		return connect.NewResponse(&checkoutv1.CreateCheckoutResponse{Result: res}), err
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
	// One statement (the expiry sweep closes it at expires_at).
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		return checkoutdb.New(q).InsertSession(ctx, checkoutdb.InsertSessionParams{
			TenantID: tid, ID: id, Status: c.Status, Currency: c.Currency, Total: grandTotal(c), BuyerEmail: buyerEmail(c),
			AgentProfileUrl: agent.profileURL, Capabilities: nonNil(agent.capabilities), Request: reqJSON, State: state, ExpiresAt: expires,
		})
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CreateCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}}), nil
}

// GetCheckout returns the session's current state. A session past its
// expiry that nobody has closed yet is closed now.
func (s *Service) GetCheckout(ctx context.Context, r *connect.Request[checkoutv1.GetCheckoutRequest]) (*connect.Response[checkoutv1.GetCheckoutResponse], error) {
	sess, err := s.load(ctx, r.Msg.GetId())
	if err != nil {
		return nil, err
	}
	if !terminal(sess.Status) && !s.now().Before(sess.ExpiresAt) {
		c, err := s.expire(ctx, r.Msg.GetId())
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
	id := r.Msg.GetId()
	sess, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if !terminal(sess.Status) && !s.now().Before(sess.ExpiresAt) {
		if _, err := s.expire(ctx, id); err != nil {
			return nil, err
		}
		if sess, err = s.load(ctx, id); err != nil {
			return nil, err
		}
	}
	prev := &bcp.Checkout{}
	if err := segjson.Unmarshal(sess.State, prev); err != nil {
		return nil, err
	}
	if !modifiable(sess.Status) {
		res, err := unchanged(prev, notModifiable(sess.Status))
		return connect.NewResponse(&checkoutv1.UpdateCheckoutResponse{Result: res}), err
	}
	b, err := s.build(ctx, agent, id, req, prev, sess.State, tid.String(), false)
	if err != nil {
		return nil, err
	}
	c := b.checkout
	c.Status = statusFor(c.Messages)
	c.ExpiresAt = prev.ExpiresAt
	c.ContinueURL = continueURL(agent.baseURL, id)
	if !canTransition(sess.Status, c.Status) {
		return nil, apperr.New(apperr.KindInternal, "internal", "illegal status transition %s → %s", sess.Status, c.Status)
	}
	state, reqJSON, err := encodeBoth(c, b.request)
	if err != nil {
		return nil, err
	}
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		n, err := checkoutdb.New(q).UpdateSession(ctx, checkoutdb.UpdateSessionParams{
			TenantID: tid, ID: id, Version: sess.Version, Status: c.Status, Total: grandTotal(c), BuyerEmail: buyerEmail(c),
			Capabilities: nonNil(agent.capabilities), Request: reqJSON, State: state,
		})
		if err == nil && n == 0 {
			return apperr.New(apperr.KindAborted, "concurrent_update", "the checkout changed while this update was being processed; retry")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.UpdateCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}}), nil
}

// CancelCheckout cancels an open session. Canceling a canceled session is
// a no-op; a completed one is returned unchanged with an error message.
func (s *Service) CancelCheckout(ctx context.Context, r *connect.Request[checkoutv1.CancelCheckoutRequest]) (*connect.Response[checkoutv1.CancelCheckoutResponse], error) {
	id := r.Msg.GetId()
	for attempt := 0; attempt < 3; attempt++ {
		sess, prev, err := s.loadState(ctx, id)
		if err != nil {
			return nil, err
		}
		switch sess.Status {
		case bcp.StatusCanceled:
			return connect.NewResponse(&checkoutv1.CancelCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}}), nil
		case bcp.StatusCompleted:
			res, err := unchanged(prev, notModifiable(sess.Status))
			return connect.NewResponse(&checkoutv1.CancelCheckoutResponse{Result: res}), err
		}
		// A payment in flight is stopped first; if the money already
		// arrived, completion wins and the checkout is returned completed.
		if res, completed, err := s.cancelWithPayment(ctx, sess); err != nil {
			return nil, err
		} else if completed {
			return connect.NewResponse(&checkoutv1.CancelCheckoutResponse{Result: res}), nil
		}
		if sess.PaymentAttemptID != nil {
			// Its payment is stopped: the stock it held goes back
			// (idempotent, so a retried cancel is harmless).
			if err := s.releaseStock(ctx, sess.ID); err != nil {
				return nil, err
			}
		}
		res, ok, err := s.close(ctx, sess, prev, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			return connect.NewResponse(&checkoutv1.CancelCheckoutResponse{Result: res}), nil
		}
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// close moves an open session to canceled (optimistically) with an
// optional message. ok is false when the session changed meanwhile.
func (s *Service) close(ctx context.Context, sess checkoutdb.CheckoutSession, c *bcp.Checkout, msg *bcp.Message) (*checkoutv1.CheckoutResult, bool, error) {
	c.Status = bcp.StatusCanceled
	c.ContinueURL = "" // omitted on terminal states
	c.Messages = nil
	if msg != nil {
		c.Messages = []bcp.Message{*msg}
	}
	state, err := json.Marshal(c)
	if err != nil {
		return nil, false, err
	}
	var n int64
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		n, err = checkoutdb.New(q).UpdateSession(ctx, checkoutdb.UpdateSessionParams{
			TenantID: sess.TenantID, ID: sess.ID, Version: sess.Version, Status: c.Status, Total: sess.Total,
			BuyerEmail: sess.BuyerEmail, Capabilities: sess.Capabilities, Request: sess.Request, State: state,
		})
		return err
	})
	if err != nil || n == 0 {
		return nil, false, err
	}
	return &checkoutv1.CheckoutResult{CheckoutJson: state, Status: c.Status}, true, nil
}

// expire cancels a session past its expiry (from a read, an update or the
// expiry sweep).
func (s *Service) expire(ctx context.Context, id string) (*checkoutv1.CheckoutResult, error) {
	for attempt := 0; attempt < 3; attempt++ {
		sess, err := s.load(ctx, id)
		if err != nil {
			return nil, err
		}
		if terminal(sess.Status) || s.now().Before(sess.ExpiresAt) {
			return &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}, nil
		}
		// A completion in flight is settled by the payment, not by the clock.
		if sess.Status == bcp.StatusCompleteInProgress {
			return &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}, nil
		}
		c := &bcp.Checkout{}
		if err := segjson.Unmarshal(sess.State, c); err != nil {
			return nil, err
		}
		m := bcp.Info("expired", "", "Este checkout expirou; inicie um novo.")
		res, ok, err := s.close(ctx, sess, c, &m)
		if err != nil {
			return nil, err
		}
		if ok {
			return res, nil
		}
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the checkout kept changing; retry")
}

// ExpireCheckouts closes every session of the tenant past its expiry.
func (s *Service) ExpireCheckouts(ctx context.Context, _ *connect.Request[checkoutv1.ExpireCheckoutsRequest]) (*connect.Response[checkoutv1.ExpireCheckoutsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var idsToExpire []string
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		idsToExpire, err = checkoutdb.New(tx).ListExpiredOpenSessions(ctx, checkoutdb.ListExpiredOpenSessionsParams{TenantID: tid, Now: s.now()})
		return err
	})
	if err != nil {
		return nil, err
	}
	n := int32(0)
	for _, id := range idsToExpire {
		res, err := s.expire(ctx, id)
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
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	size := r.Msg.GetPageSize()
	if size <= 0 || size > 500 {
		size = 50
	}
	var status, before *string
	if st := r.Msg.GetStatus(); st != "" {
		if _, ok := transitions[st]; !ok {
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
	out := &checkoutv1.ListCheckoutsResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := checkoutdb.New(tx).ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tid, Status: status, BeforeID: before, PageSize: size})
		for _, row := range rows {
			out.Checkouts = append(out.Checkouts, &checkoutv1.CheckoutSummary{
				Id: row.ID, Status: row.Status, Currency: row.Currency, Total: row.Total, AgentProfileUrl: row.AgentProfileUrl,
				BuyerEmail: row.BuyerEmail, CreateTimeUnix: row.CreatedAt.Unix(), UpdateTimeUnix: row.UpdatedAt.Unix(),
			})
		}
		if int32(len(rows)) == size {
			out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(rows[len(rows)-1].ID))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// load reads a session in the tenant's scope. Another tenant's id is
// simply not found (RLS and the tenant filter).
func (s *Service) load(ctx context.Context, id string) (checkoutdb.CheckoutSession, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return checkoutdb.CheckoutSession{}, err
	}
	var sess checkoutdb.CheckoutSession
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		sess, err = checkoutdb.New(q).GetSession(ctx, checkoutdb.GetSessionParams{TenantID: tid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sess, apperr.NotFound(bcp.CodeNotFound, "no checkout %q", id)
	}
	return sess, err
}

// loadState reads a session and decodes its checkout.
func (s *Service) loadState(ctx context.Context, id string) (checkoutdb.CheckoutSession, *bcp.Checkout, error) {
	sess, err := s.load(ctx, id)
	if err != nil {
		return sess, nil, err
	}
	c := &bcp.Checkout{}
	if err := segjson.Unmarshal(sess.State, c); err != nil {
		return sess, nil, err
	}
	return sess, c, nil
}

// unchanged returns a stored checkout as it is, with one extra message
// (not stored).
func unchanged(c *bcp.Checkout, m bcp.Message) (*checkoutv1.CheckoutResult, error) {
	c.Messages = append([]bcp.Message{m}, c.Messages...)
	b, err := json.Marshal(c)
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
	state, err := json.Marshal(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := json.Marshal(req)
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
