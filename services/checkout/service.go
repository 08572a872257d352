// Package checkout is the checkout service: it owns checkout sessions and their status machine and orchestrates the other services.
// It owns the PostgreSQL schema "checkout" and is reached only through its
// connect API.
package checkout

import (
	"context"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/svcauth"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
)

// Service implements checkoutv1connect.CheckoutServiceHandler.
type Service struct {
	// Until every RPC is implemented, the rest answer CodeUnimplemented.
	checkoutv1connect.UnimplementedCheckoutServiceHandler
	pool *pgxpool.Pool
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

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
