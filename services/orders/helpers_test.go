package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/wire"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/orders"
	"github.com/bcpdev/bcp/tenants"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

const (
	internalToken = "orders-internal"
	operatorToken = "orders-operator"
)

var masterKey = []byte("0123456789abcdef0123456789abcdef")

// env is the orders service mounted on httptest with the interceptors
// platform.Start uses and its job workers running, next to the real
// tenants service (keys, SignWithCurrentKey, environment) and a fake
// payments service (someone else's, being written concurrently).
type env struct {
	t        *testing.T
	db       *testdb.DB
	tenants  tenantsv1connect.TenantServiceClient // internal token, as services call it
	op       tenantsv1connect.TenantServiceClient // operator token
	client   ordersv1connect.OrdersServiceClient
	payments *fakePayments
}

func start(t *testing.T) *env {
	t.Helper()
	// Short retries: tests wait for the fourth attempt.
	return startWithBackoff(t, 200*time.Millisecond)
}

// startWithBackoff is start with webhook retries backoff apart.
func startWithBackoff(t *testing.T, backoff time.Duration) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tokens := svcauth.Tokens{Internal: internalToken, Operator: operatorToken}
	e := &env{t: t, db: d, payments: newFakePayments(t)}

	// The real tenants service (keys, SignWithCurrentKey, environment),
	// mounted as platform.Start mounts it.
	seal, err := sealer.NewAESGCM(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	b := tenants.NewBroadcaster(d.Pool, log)
	go b.Run(ctx)
	tmux := http.NewServeMux()
	tmux.Handle(tenantsv1connect.NewTenantServiceHandler(tenants.New(d.Pool, seal, b, log),
		connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(tokens, tenants.Policy))))
	tsrv := httptest.NewServer(tmux)
	t.Cleanup(tsrv.Close)
	e.tenants = tenantsv1connect.NewTenantServiceClient(tsrv.Client(), tsrv.URL, connect.WithInterceptors(svcauth.Client(internalToken)))
	e.op = tenantsv1connect.NewTenantServiceClient(tsrv.Client(), tsrv.URL, connect.WithInterceptors(svcauth.Client(operatorToken)))

	svc := orders.New(d.Pool, orders.Config{
		Payments: e.payments.client, Tenants: e.tenants, Signer: orders.NewTenantSigner(e.tenants), Logger: log,
		WebhookBackoff: func(int) time.Duration { return backoff },
		RefundRecheck:  300 * time.Millisecond,
	})
	workers := river.NewWorkers()
	river.AddWorker(workers, &orders.WebhookWorker{Service: svc})
	river.AddWorker(workers, &orders.RefundWorker{Service: svc})
	jc, err := jobs.NewClient(d.Pool, workers, nil, []string{jobs.QueueOrders}, log)
	if err != nil {
		t.Fatal(err)
	}
	svc.UseJobs(jc)
	if err := jc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = jc.Stop(sctx)
	})

	mux := http.NewServeMux()
	mux.Handle(ordersv1connect.NewOrdersServiceHandler(svc, connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(tokens, orders.Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.client = ordersv1connect.NewOrdersServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(internalToken)))
	return e
}

// tenant creates a merchant and returns a context scoped to it.
func (e *env) tenant(name string, environment tenantsv1.Environment) (context.Context, *tenantsv1.Tenant) {
	e.t.Helper()
	r, err := e.op.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: name, Domains: []string{uuid.NewString()[:8] + ".localhost"}, Environment: environment,
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	tn := r.Msg.GetTenant()
	return tenancy.With(context.Background(), uuid.MustParse(tn.GetId())), tn
}

func (e *env) create(ctx context.Context, checkoutID, webhook string) *ordersv1.CreateOrderResponse {
	e.t.Helper()
	r, err := e.client.CreateOrder(ctx, connect.NewRequest(createRequest(checkoutID, webhook)))
	if err != nil {
		e.t.Fatalf("CreateOrder %s: %v", checkoutID, err)
	}
	return r.Msg
}

func createRequest(checkoutID, webhook string) *ordersv1.CreateOrderRequest {
	return &ordersv1.CreateOrderRequest{
		CheckoutId: checkoutID, Checkout: wire.PaidCheckout(completedCheckout(checkoutID)), PaymentAttemptId: "pay_" + checkoutID,
		AgentProfileUrl: "https://agent.example/profile.json", WebhookUrl: webhook, BaseUrl: "https://loja.example.com.br",
	}
}

func (e *env) get(ctx context.Context, id string) *bcp.Order {
	e.t.Helper()
	r, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: id}))
	if err != nil {
		e.t.Fatalf("GetOrder %s: %v", id, err)
	}
	return decode(e.t, r.Msg.GetOrderJson())
}

func (e *env) deliveries(ctx context.Context, orderID string) []*ordersv1.WebhookDelivery {
	e.t.Helper()
	r, err := e.client.ListWebhookDeliveries(ctx, connect.NewRequest(&ordersv1.ListWebhookDeliveriesRequest{OrderId: orderID}))
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Msg.GetDeliveries()
}

// superQuery runs a read as the superuser (RLS does not apply): what the
// API cannot show, such as rows of every tenant.
func (e *env) superCount(query string, args ...any) int {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func decode(t *testing.T, raw []byte) *bcp.Order {
	t.Helper()
	o := &bcp.Order{}
	if err := json.Unmarshal(raw, o); err != nil {
		t.Fatalf("order JSON: %v\n%s", err, raw)
	}
	return o
}

var (
	validatorOnce sync.Once
	validator     *bcpschema.Validator
	validatorErr  error
)

// validateOrder checks order JSON (as the API returns it, without "ucp")
// against the BCP order schema, with the minimal ucp envelope added.
func validateOrder(t *testing.T, raw []byte) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["ucp"]; !ok {
		doc["ucp"] = map[string]any{"version": "2026-07-28"}
	}
	b, _ := json.Marshal(doc)
	validateOrderDoc(t, b)
}

func validateOrderDoc(t *testing.T, doc []byte) {
	t.Helper()
	validatorOnce.Do(func() { validator, validatorErr = bcpschema.NewValidator() })
	if validatorErr != nil {
		t.Fatal(validatorErr)
	}
	if err := validator.ValidateOrder(doc); err != nil {
		t.Fatalf("order does not validate: %v\n%s", err, doc)
	}
}

// completedCheckout is a completed BCP checkout: two lines (2 + 1 units),
// shipping to a selected address with a selected option, discount, buyer.
func completedCheckout(id string) *bcp.Checkout {
	dest := "dest_1"
	opt := "sedex"
	return &bcp.Checkout{
		ID:     id,
		Status: bcp.StatusCompleted, Currency: "BRL",
		LineItems: []bcp.LineItem{
			{ID: "li_1", Item: bcp.Item{ID: "var_camiseta_p", Title: "Camiseta P", Price: 4990}, Quantity: 2,
				Totals: []bcp.Total{{Type: bcp.TotalSubtotal, Amount: 9980}, {Type: bcp.TotalTotal, Amount: 9980}}},
			{ID: "li_2", Item: bcp.Item{ID: "var_caneca", Title: "Caneca", Price: 2000}, Quantity: 1,
				Totals: []bcp.Total{{Type: bcp.TotalSubtotal, Amount: 2000}, {Type: bcp.TotalTotal, Amount: 2000}}},
		},
		Buyer: &bcp.Buyer{FirstName: "Ana", LastName: "Souza", Email: "ana@example.com.br"},
		Totals: []bcp.Total{
			{Type: bcp.TotalSubtotal, Amount: 11980}, {Type: bcp.TotalItemsDiscount, Amount: -1198},
			{Type: bcp.TotalFulfillment, Amount: 1500}, {Type: bcp.TotalTotal, Amount: 12282},
		},
		Links: []bcp.Link{{Type: "terms_of_service", URL: "https://loja.example.com.br/termos"}},
		Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
			ID: "fm_1", Type: bcp.MethodShipping, LineItemIDs: []string{"li_1", "li_2"},
			Destinations: []bcp.Destination{{ID: dest, PostalAddress: bcp.PostalAddress{
				StreetAddress: "Av. Paulista, 1000", AddressLocality: "São Paulo", AddressRegion: "SP",
				AddressCountry: "BR", PostalCode: "01310-100", FirstName: "Ana", LastName: "Souza",
			}}},
			SelectedDestinationID: &dest,
			Groups: []bcp.FulfillmentGroup{{
				ID: "fg_1", LineItemIDs: []string{"li_1", "li_2"}, SelectedOptionID: &opt,
				Options: []bcp.FulfillmentOption{
					{ID: "pac", Title: "PAC", Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: 900}}},
					{ID: opt, Title: "Sedex", Description: "Chega em 1 a 3 dias úteis", Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: 1500}}},
				},
			}},
		}}},
	}
}

// fakePayments stands for the payments service's RefundPayment.
type fakePayments struct {
	paymentsv1connect.UnimplementedPaymentsServiceHandler
	client paymentsv1connect.PaymentsServiceClient
	url    string

	mu    sync.Mutex
	calls []*paymentsv1.RefundPaymentRequest
	// answer decides each call's outcome (default: succeeded).
	answer func(*paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error)
}

func newFakePayments(t *testing.T) *fakePayments {
	f := &fakePayments{}
	mux := http.NewServeMux()
	mux.Handle(paymentsv1connect.NewPaymentsServiceHandler(f))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.client = paymentsv1connect.NewPaymentsServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(internalToken)))
	return f
}

func (f *fakePayments) RefundPayment(_ context.Context, r *connect.Request[paymentsv1.RefundPaymentRequest]) (*connect.Response[paymentsv1.RefundPaymentResponse], error) {
	if r.Header().Get("Authorization") != "Bearer "+internalToken {
		return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("bad token"))
	}
	f.mu.Lock()
	f.calls = append(f.calls, r.Msg)
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		answer = func(m *paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error) {
			return &paymentsv1.Refund{Id: m.GetRefundId(), AttemptId: m.GetAttemptId(), Amount: m.GetAmount(), Status: "succeeded"}, nil
		}
	}
	rf, err := answer(r.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.RefundPaymentResponse{Refund: rf}), nil
}

func (f *fakePayments) set(answer func(*paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func (f *fakePayments) refunds() []*paymentsv1.RefundPaymentRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*paymentsv1.RefundPaymentRequest(nil), f.calls...)
}

// receiver is an order webhook endpoint that fails its first failFirst
// requests with 500 and records every request.
type receiver struct {
	srv       *httptest.Server
	failFirst int
	onReceive func() // when set, runs before each answer

	mu   sync.Mutex
	reqs []received
}

type received struct {
	req  *http.Request
	body []byte
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	rc := &receiver{failFirst: failFirst}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{req: r.Clone(context.Background()), body: body})
		n := len(rc.reqs)
		rc.mu.Unlock()
		if rc.onReceive != nil {
			rc.onReceive()
		}
		if n <= rc.failFirst {
			http.Error(w, "try later", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ucp":{"version":"2026-07-28"}}`))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + "/webhooks/bcp/pedidos" }

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

// eventually polls cond until it holds or the deadline passes; it waits
// for background work, it never asserts speed.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s", what, within)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func wantCode(t *testing.T, err error, code connect.Code, dataCode string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("want %v %s, got %v", code, dataCode, err)
	}
	if got := apperr.FromConnect(ce).Code; dataCode != "" && got != dataCode {
		t.Fatalf("want code %s, got %s (%v)", dataCode, got, err)
	}
}
