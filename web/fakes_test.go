package web

import (
	"context"
	"encoding/json"
	"github.com/bcpdev/bcp/web/internal/webtest"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Fakes of the other services, for what the real ones do not serve yet
// (Pix attempts, completed checkouts, orders). They enforce tenancy the
// way the real services do: another tenant's id is simply not found.

type fakeServices struct {
	mu         sync.Mutex
	tenant     uuid.UUID
	checkouts  map[string]*bcp.Checkout
	handlerEnv string            // environment of handler "pix_fake"
	attempts   map[string]string // attempt id → display_json (GetPayment)
	simulated  []string
	orders     map[string]string // order id → order JSON; nil: GetOrder unimplemented
}

func (f *fakeServices) owns(h http.Header) bool { return h.Get(tenancy.Header) == f.tenant.String() }

type fakeCheckout struct {
	checkoutv1connect.UnimplementedCheckoutServiceHandler
	f *fakeServices
}

func (s fakeCheckout) GetCheckout(_ context.Context, r *connect.Request[checkoutv1.GetCheckoutRequest]) (*connect.Response[checkoutv1.GetCheckoutResponse], error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	c, ok := s.f.checkouts[r.Msg.GetId()]
	if !ok || !s.f.owns(r.Header()) {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.GetCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: raw, Status: c.Status}}), nil
}

type fakePayments struct {
	paymentsv1connect.UnimplementedPaymentsServiceHandler
	f *fakeServices
}

func (s fakePayments) GetPayment(_ context.Context, r *connect.Request[paymentsv1.GetPaymentRequest]) (*connect.Response[paymentsv1.GetPaymentResponse], error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	d, ok := s.f.attempts[r.Msg.GetAttemptId()]
	if !ok || !s.f.owns(r.Header()) {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	return connect.NewResponse(&paymentsv1.GetPaymentResponse{Attempt: &paymentsv1.Attempt{Id: r.Msg.GetAttemptId(), DisplayJson: d, Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING}}), nil
}

func (s fakePayments) SimulatePixPayment(_ context.Context, r *connect.Request[paymentsv1.SimulatePixPaymentRequest]) (*connect.Response[paymentsv1.SimulatePixPaymentResponse], error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if !s.f.owns(r.Header()) {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	s.f.simulated = append(s.f.simulated, r.Msg.GetAttemptId())
	return connect.NewResponse(&paymentsv1.SimulatePixPaymentResponse{Attempt: &paymentsv1.Attempt{Id: r.Msg.GetAttemptId()}}), nil
}

type fakeTenants struct {
	tenantsv1connect.UnimplementedTenantServiceHandler
	f *fakeServices
}

func (s fakeTenants) GetDiscovery(_ context.Context, r *connect.Request[tenantsv1.GetDiscoveryRequest]) (*connect.Response[tenantsv1.GetDiscoveryResponse], error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if r.Msg.GetTenantId() != s.f.tenant.String() {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	return connect.NewResponse(&tenantsv1.GetDiscoveryResponse{
		Tenant:          &tenantsv1.Tenant{Id: s.f.tenant.String(), Name: "Loja Fake"},
		PaymentHandlers: []*tenantsv1.PaymentHandler{{Id: "pix_fake", Name: "br.dev.bcp.pix", Environment: s.f.handlerEnv}},
	}), nil
}

type fakeOrders struct {
	ordersv1connect.UnimplementedOrdersServiceHandler
	f *fakeServices
}

func (s fakeOrders) GetOrder(ctx context.Context, r *connect.Request[ordersv1.GetOrderRequest]) (*connect.Response[ordersv1.GetOrderResponse], error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.orders == nil {
		return s.UnimplementedOrdersServiceHandler.GetOrder(ctx, r)
	}
	o, ok := s.f.orders[r.Msg.GetId()]
	if !ok || !s.f.owns(r.Header()) {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	return connect.NewResponse(&ordersv1.GetOrderResponse{OrderJson: []byte(o)}), nil
}

// fakeOptions serves the fakes over HTTP and returns real connect clients
// for them (with the platform's client interceptor, which forwards the
// tenant).
func fakeOptions(t *testing.T, f *fakeServices) Options {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(checkoutv1connect.NewCheckoutServiceHandler(fakeCheckout{f: f}))
	mux.Handle(paymentsv1connect.NewPaymentsServiceHandler(fakePayments{f: f}))
	mux.Handle(tenantsv1connect.NewTenantServiceHandler(fakeTenants{f: f}))
	mux.Handle(ordersv1connect.NewOrdersServiceHandler(fakeOrders{f: f}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	opts := connect.WithInterceptors(svcauth.Client("test-token"))
	return Options{
		Checkout: checkoutv1connect.NewCheckoutServiceClient(srv.Client(), srv.URL, opts),
		Payments: paymentsv1connect.NewPaymentsServiceClient(srv.Client(), srv.URL, opts),
		Tenants:  tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL, opts),
		Orders:   ordersv1connect.NewOrdersServiceClient(srv.Client(), srv.URL, opts),
	}
}

// serve mounts w's routes the way the edge does.
func serve(t *testing.T, w *Web, hosts map[string]uuid.UUID) *httptest.Server {
	return webtest.Serve(t, w, hosts)
}
