// Package svcauth authenticates calls between the platform's processes and
// carries the tenant across them. Services accept two bearer tokens: the
// internal token (service to service) and the operator token (bcpctl and
// operator tooling, which may also do anything a service may). Tenant-scoped
// procedures additionally require the Bcp-Tenant-Id header, which becomes
// the context tenant read by pgstore.InTenant.
package svcauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"unsafe"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
)

// Access is what a procedure requires.
type Access int

const (
	// Internal: internal or operator token, no tenant.
	Internal Access = iota
	// Tenant: internal or operator token and a tenant header.
	Tenant
	// Operator: operator token only.
	Operator
)

// Tokens are the accepted secrets. Empty tokens never match.
type Tokens struct {
	Internal string
	Operator string
}

type principalKey struct{}

// Principal names who called: "operator" or "service".
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// Server returns the server interceptor enforcing policy(procedure).
func Server(tokens Tokens, policy func(procedure string) Access) connect.Interceptor {
	return &server{tokens: tokens, policy: policy}
}

type server struct {
	tokens Tokens
	policy func(string) Access
}

func (s *server) authorize(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return nil, errMissingToken()
	}
	return s.admit(ctx, procedure, tok, h, uuid.Nil)
}

func errMissingToken() error {
	return connect.NewError(connect.CodeUnauthenticated, errors.New("missing bearer token"))
}

// admit checks tok against procedure's policy. The tenant is h's tenant
// header when h is set (a call over the wire), else tenant (a direct call,
// whose tenant the header would carry; uuid.Nil when it has none).
func (s *server) admit(ctx context.Context, procedure, tok string, h http.Header, tenant uuid.UUID) (context.Context, error) {
	access := s.policy(procedure)
	var principal string
	switch {
	case equal(tok, s.tokens.Operator):
		principal = "operator"
	case equal(tok, s.tokens.Internal) && access != Operator:
		principal = "service"
	case equal(tok, s.tokens.Internal):
		return nil, connect.NewError(connect.CodePermissionDenied, errors.New("operator token required"))
	default:
		return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("invalid token"))
	}
	ctx = context.WithValue(ctx, principalKey{}, principal)
	if access == Tenant {
		id, err := tenant, error(nil)
		if h != nil {
			id, err = uuid.Parse(h.Get(tenancy.Header))
		}
		if err != nil || id == uuid.Nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("missing or invalid "+tenancy.Header+" header"))
		}
		ctx = tenancy.With(ctx, id)
	}
	return ctx, nil
}

// equal compares in constant time; hashing first keeps the comparison
// length-independent.
func equal(got, want string) bool {
	if want == "" {
		return false
	}
	// The strings are only read: no copy of a token to hash.
	a := sha256.Sum256(unsafe.Slice(unsafe.StringData(got), len(got)))
	b := sha256.Sum256(unsafe.Slice(unsafe.StringData(want), len(want)))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func (s *server) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, err := s.authorize(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (s *server) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (s *server) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := s.authorize(ctx, conn.Spec().Procedure, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// Client returns the client interceptor that authenticates with token and
// forwards the context tenant, if any, in the tenant header.
func Client(token string) connect.Interceptor { return &client{token: token} }

type client struct{ token string }

func (c *client) set(ctx context.Context, h http.Header) {
	h.Set("Authorization", "Bearer "+c.token)
	if id, err := tenancy.From(ctx); err == nil {
		h.Set(tenancy.Header, id.String())
	}
}

func (c *client) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		c.set(ctx, req.Header())
		return next(ctx, req)
	}
}

func (c *client) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		c.set(ctx, conn.RequestHeader())
		return conn
	}
}

func (c *client) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// Direct returns the authorization of an in-process direct call
// (internal/direct) made with token to a service enforcing policy: the
// headers the client interceptor would send, checked as the server
// interceptor checks them. It returns the handler's context: the
// caller's deadline and cancellation, and only what authorization sets
// (principal, tenant), as a handler behind HTTP would see.
func Direct(tokens Tokens, policy func(procedure string) Access, token string) func(ctx context.Context, procedure string) (context.Context, error) {
	c, s := &client{token: token}, &server{tokens: tokens, policy: policy}
	return func(ctx context.Context, procedure string) (context.Context, error) {
		// What c.set would send and authorize would read back, without
		// the headers: the token, and the context tenant if any.
		if c.token == "" {
			return nil, errMissingToken()
		}
		tenant, err := tenancy.From(ctx)
		if err != nil {
			tenant = uuid.Nil
		}
		return s.admit(valueless{ctx}, procedure, c.token, nil, tenant)
	}
}

// valueless keeps a context's deadline and cancellation but none of its
// values: nothing the caller put there reaches the handler.
type valueless struct{ context.Context }

func (valueless) Value(any) any { return nil }
