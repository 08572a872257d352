package svcauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
)

const (
	internalToken = "internal-secret"
	operatorToken = "operator-secret"

	procInternal = "/bcp.test.v1.Test/Internal"
	procTenant   = "/bcp.test.v1.Test/Tenant"
	procOperator = "/bcp.test.v1.Test/Operator"
	procStream   = "/bcp.test.v1.Test/Stream"
)

var tokens = svcauth.Tokens{Internal: internalToken, Operator: operatorToken}

func policy(procedure string) svcauth.Access {
	switch procedure {
	case procTenant:
		return svcauth.Tenant
	case procOperator:
		return svcauth.Operator
	}
	return svcauth.Internal
}

// seen is what a handler saw of its caller: "principal|tenant", the tenant
// empty when the context has none.
func seen(ctx context.Context) string {
	s := svcauth.Principal(ctx) + "|"
	if id, err := tenancy.From(ctx); err == nil {
		s += id.String()
	}
	return s
}

// server serves the four test procedures behind svcauth.Server over a real
// listener; calls counts the handler invocations (a refused call must not
// reach the handler).
func server(t *testing.T) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	opts := connect.WithInterceptors(svcauth.Server(tokens, policy))
	unary := func(ctx context.Context, _ *connect.Request[emptypb.Empty]) (*connect.Response[wrapperspb.StringValue], error) {
		calls.Add(1)
		return connect.NewResponse(wrapperspb.String(seen(ctx))), nil
	}
	mux := http.NewServeMux()
	for _, p := range []string{procInternal, procTenant, procOperator} {
		mux.Handle(p, connect.NewUnaryHandler(p, unary, opts))
	}
	mux.Handle(procStream, connect.NewServerStreamHandler(procStream,
		func(ctx context.Context, _ *connect.Request[emptypb.Empty], s *connect.ServerStream[wrapperspb.StringValue]) error {
			calls.Add(1)
			return s.Send(wrapperspb.String(seen(ctx)))
		}, opts))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

// header sets a raw Authorization header (or removes it when empty) and an
// optional raw tenant header, bypassing svcauth.Client.
type header struct{ auth, tenant string }

func (h header) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if h.auth != "" {
			req.Header().Set("Authorization", h.auth)
		}
		if h.tenant != "" {
			req.Header().Set(tenancy.Header, h.tenant)
		}
		return next(ctx, req)
	}
}
func (h header) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}
func (h header) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func TestServerPolicy(t *testing.T) {
	url, calls := server(t)
	tenant := uuid.MustParse("7d3f9a52-1c4e-4b8a-9e2f-0a6b5c4d3e21")
	withTenant := tenancy.With(context.Background(), tenant)

	type want struct {
		code connect.Code // 0: success
		msg  string       // the answer's value, or the error's message
	}
	cases := []struct {
		name      string
		procedure string
		ctx       context.Context
		client    connect.Interceptor
		want      want
	}{
		{"internal token, internal procedure", procInternal, context.Background(), svcauth.Client(internalToken), want{0, "service|"}},
		{"operator token, internal procedure", procInternal, context.Background(), svcauth.Client(operatorToken), want{0, "operator|"}},
		{"internal token, tenant procedure", procTenant, withTenant, svcauth.Client(internalToken), want{0, "service|" + tenant.String()}},
		{"operator token, tenant procedure", procTenant, withTenant, svcauth.Client(operatorToken), want{0, "operator|" + tenant.String()}},
		{"operator token, operator procedure", procOperator, context.Background(), svcauth.Client(operatorToken), want{0, "operator|"}},
		{"internal token, operator procedure", procOperator, context.Background(), svcauth.Client(internalToken),
			want{connect.CodePermissionDenied, "operator token required"}},
		// The tenant header is not asked for outside tenant procedures, and
		// not carried into them either.
		{"tenant on an internal procedure", procInternal, withTenant, svcauth.Client(internalToken), want{0, "service|"}},

		{"no token", procInternal, context.Background(), header{}, want{connect.CodeUnauthenticated, "missing bearer token"}},
		{"empty bearer", procInternal, context.Background(), header{auth: "Bearer "}, want{connect.CodeUnauthenticated, "missing bearer token"}},
		{"basic scheme", procInternal, context.Background(), header{auth: "Basic " + internalToken}, want{connect.CodeUnauthenticated, "missing bearer token"}},
		{"lower-case scheme", procInternal, context.Background(), header{auth: "bearer " + internalToken}, want{connect.CodeUnauthenticated, "missing bearer token"}},
		{"wrong token", procInternal, context.Background(), svcauth.Client("guess"), want{connect.CodeUnauthenticated, "invalid token"}},
		{"token with a suffix", procInternal, context.Background(), svcauth.Client(internalToken + "x"), want{connect.CodeUnauthenticated, "invalid token"}},
		{"token prefix", procOperator, context.Background(), svcauth.Client(operatorToken[:len(operatorToken)-1]), want{connect.CodeUnauthenticated, "invalid token"}},
		// Authentication comes before the tenant: a wrong token on a tenant
		// procedure without a tenant says the token is wrong.
		{"wrong token, tenant procedure", procTenant, context.Background(), svcauth.Client("guess"), want{connect.CodeUnauthenticated, "invalid token"}},

		{"tenant procedure without a tenant", procTenant, context.Background(), svcauth.Client(internalToken),
			want{connect.CodeInvalidArgument, "missing or invalid Bcp-Tenant-Id header"}},
		{"tenant header not a uuid", procTenant, context.Background(), header{auth: "Bearer " + internalToken, tenant: "acme"},
			want{connect.CodeInvalidArgument, "missing or invalid Bcp-Tenant-Id header"}},
		{"nil tenant", procTenant, context.Background(), header{auth: "Bearer " + internalToken, tenant: uuid.Nil.String()},
			want{connect.CodeInvalidArgument, "missing or invalid Bcp-Tenant-Id header"}},
		{"raw tenant header", procTenant, context.Background(), header{auth: "Bearer " + operatorToken, tenant: tenant.String()},
			want{0, "operator|" + tenant.String()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			c := connect.NewClient[emptypb.Empty, wrapperspb.StringValue](http.DefaultClient, url+tc.procedure,
				connect.WithInterceptors(tc.client))
			res, err := c.CallUnary(tc.ctx, connect.NewRequest(&emptypb.Empty{}))
			if tc.want.code == 0 {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if got := res.Msg.GetValue(); got != tc.want.msg {
					t.Errorf("handler saw %q, want %q", got, tc.want.msg)
				}
				if n := calls.Load() - before; n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
				return
			}
			var ce *connect.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a connect error %v", err, tc.want.code)
			}
			if ce.Code() != tc.want.code || ce.Message() != tc.want.msg {
				t.Errorf("error = %v %q, want %v %q", ce.Code(), ce.Message(), tc.want.code, tc.want.msg)
			}
			if n := calls.Load() - before; n != 0 {
				t.Errorf("a refused call reached the handler (%d times)", n)
			}
		})
	}
}

// TestServerStream: the interceptor guards streaming handlers as it guards
// unary ones.
func TestServerStream(t *testing.T) {
	url, calls := server(t)
	for _, tc := range []struct {
		token string
		code  connect.Code
		value string
	}{
		{internalToken, 0, "service|"},
		{operatorToken, 0, "operator|"},
		{"guess", connect.CodeUnauthenticated, ""},
	} {
		before := calls.Load()
		c := connect.NewClient[emptypb.Empty, wrapperspb.StringValue](http.DefaultClient, url+procStream,
			connect.WithInterceptors(svcauth.Client(tc.token)))
		stream, err := c.CallServerStream(context.Background(), connect.NewRequest(&emptypb.Empty{}))
		if err != nil {
			t.Fatalf("token %q: %v", tc.token, err)
		}
		var got []string
		for stream.Receive() {
			got = append(got, stream.Msg().GetValue())
		}
		err = stream.Err()
		_ = stream.Close()
		if tc.code != 0 {
			if connect.CodeOf(err) != tc.code || len(got) != 0 || calls.Load() != before {
				t.Errorf("token %q: err %v, got %q, handler runs %d; want %v, nothing, 0", tc.token, err, got, calls.Load()-before, tc.code)
			}
			continue
		}
		if err != nil || len(got) != 1 || got[0] != tc.value {
			t.Errorf("token %q: err %v, got %q; want [%q]", tc.token, err, got, tc.value)
		}
	}
}

func TestClientHeaders(t *testing.T) {
	tenant := uuid.MustParse("0b8e3c1a-5f2d-4e6b-8a9c-1d2e3f4a5b6c")
	var auth, tenantHeader []string
	mux := http.NewServeMux()
	mux.Handle(procInternal, connect.NewUnaryHandler(procInternal,
		func(_ context.Context, req *connect.Request[emptypb.Empty]) (*connect.Response[wrapperspb.StringValue], error) {
			auth = req.Header().Values("Authorization")
			tenantHeader = req.Header().Values(tenancy.Header)
			return connect.NewResponse(wrapperspb.String("")), nil
		}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := connect.NewClient[emptypb.Empty, wrapperspb.StringValue](http.DefaultClient, srv.URL+procInternal,
		connect.WithInterceptors(svcauth.Client(internalToken)))

	if _, err := c.CallUnary(tenancy.With(context.Background(), tenant), connect.NewRequest(&emptypb.Empty{})); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 1 || auth[0] != "Bearer "+internalToken || len(tenantHeader) != 1 || tenantHeader[0] != tenant.String() {
		t.Errorf("with a tenant: Authorization %q, %s %q", auth, tenancy.Header, tenantHeader)
	}
	if _, err := c.CallUnary(context.Background(), connect.NewRequest(&emptypb.Empty{})); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 1 || auth[0] != "Bearer "+internalToken || len(tenantHeader) != 0 {
		t.Errorf("without a tenant: Authorization %q, %s %q", auth, tenancy.Header, tenantHeader)
	}
}

// TestDirect: an in-process call is authorized as the interceptors would
// authorize it over HTTP, and the handler's context keeps the caller's
// cancellation but none of its values.
func TestDirect(t *testing.T) {
	tenant := uuid.MustParse("3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99")
	type callerKey struct{}
	caller := context.WithValue(tenancy.With(context.Background(), tenant), callerKey{}, "secret")

	ctx, err := svcauth.Direct(tokens, policy, internalToken)(caller, procTenant)
	if err != nil {
		t.Fatal(err)
	}
	if got := seen(ctx); got != "service|"+tenant.String() {
		t.Errorf("tenant procedure: handler sees %q", got)
	}
	if ctx.Value(callerKey{}) != nil {
		t.Error("a caller's context value reached the handler")
	}

	ctx, err = svcauth.Direct(tokens, policy, internalToken)(context.Background(), procInternal)
	if err != nil || seen(ctx) != "service|" {
		t.Errorf("internal procedure: %v, handler sees %q", err, seen(ctx))
	}
	if _, err := svcauth.Direct(tokens, policy, internalToken)(context.Background(), procOperator); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("internal token on an operator procedure: %v, want permission_denied", err)
	}
	if _, err := svcauth.Direct(tokens, policy, internalToken)(context.Background(), procTenant); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("tenant procedure without a tenant: %v, want invalid_argument", err)
	}
	if _, err := svcauth.Direct(tokens, policy, "guess")(context.Background(), procInternal); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("wrong token: %v, want unauthenticated", err)
	}

	cancelled, cancel := context.WithCancel(caller)
	cancel()
	ctx, err = svcauth.Direct(tokens, policy, operatorToken)(cancelled, procOperator)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Error("the handler's context lost the caller's cancellation")
	}
}

// TestUnconfiguredTokens: an empty token never matches, so a platform
// started without an operator token refuses operator procedures to
// everyone, an empty bearer included.
func TestUnconfiguredTokens(t *testing.T) {
	only := svcauth.Tokens{Internal: internalToken}
	for _, tc := range []struct {
		token, procedure string
		code             connect.Code
	}{
		{internalToken, procOperator, connect.CodePermissionDenied},
		{"", procOperator, connect.CodeUnauthenticated},
		{"", procInternal, connect.CodeUnauthenticated},
	} {
		_, err := svcauth.Direct(only, policy, tc.token)(context.Background(), tc.procedure)
		if connect.CodeOf(err) != tc.code {
			t.Errorf("token %q on %s: %v, want %v", tc.token, tc.procedure, err, tc.code)
		}
	}
	if _, err := svcauth.Direct(svcauth.Tokens{}, policy, "")(context.Background(), procInternal); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("no tokens configured, empty bearer: %v, want unauthenticated", err)
	}
}

func TestOperatorOnly(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "profile") })
	for _, tc := range []struct {
		name      string
		tokens    svcauth.Tokens
		auth      string
		status    int
		body      string
		challenge string
	}{
		{"operator token", tokens, "Bearer " + operatorToken, http.StatusOK, "profile", ""},
		{"internal token", tokens, "Bearer " + internalToken, http.StatusForbidden, "operator token required\n", ""},
		{"no token", tokens, "", http.StatusUnauthorized, "operator token required\n", `Bearer realm="bcp operator"`},
		{"wrong token", tokens, "Bearer guess", http.StatusUnauthorized, "operator token required\n", `Bearer realm="bcp operator"`},
		{"empty bearer", tokens, "Bearer ", http.StatusUnauthorized, "operator token required\n", `Bearer realm="bcp operator"`},
		{"basic scheme", tokens, "Basic " + operatorToken, http.StatusUnauthorized, "operator token required\n", `Bearer realm="bcp operator"`},
		{"no operator token configured, empty bearer", svcauth.Tokens{Internal: internalToken}, "Bearer ", http.StatusUnauthorized, "operator token required\n", `Bearer realm="bcp operator"`},
		{"no operator token configured, internal token", svcauth.Tokens{Internal: internalToken}, "Bearer " + internalToken, http.StatusForbidden, "operator token required\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(svcauth.OperatorOnly(tc.tokens, next))
			defer srv.Close()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/debug/pprof/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("got %d %q, want %d %q", res.StatusCode, body, tc.status, tc.body)
			}
			if got := res.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
		})
	}
}
