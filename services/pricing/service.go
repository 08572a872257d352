// Package pricing is the pricing service: it computes line and checkout totals, fulfillment options and discounts (issue 3).
// It owns the PostgreSQL schema "pricing" and is reached only through its
// connect API.
package pricing

import (
	"context"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/svcauth"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
)

// Service implements pricingv1connect.PricingServiceHandler.
type Service struct {
	// Until every RPC is implemented, the rest answer CodeUnimplemented.
	pricingv1connect.UnimplementedPricingServiceHandler
	pool *pgxpool.Pool
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var _ pricingv1connect.PricingServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == pricingv1connect.PricingServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[pricingv1.PingRequest]) (*connect.Response[pricingv1.PingResponse], error) {
	return connect.NewResponse(&pricingv1.PingResponse{Service: "pricing", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}
