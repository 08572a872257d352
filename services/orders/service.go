// Package orders is the orders service: it owns orders (one per completed checkout), fulfillment events, adjustments and order webhooks.
// It owns the PostgreSQL schema "orders" and is reached only through its
// connect API.
package orders

import (
	"context"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/svcauth"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
)

// Service implements ordersv1connect.OrdersServiceHandler.
type Service struct {
	// Until every RPC is implemented, the rest answer CodeUnimplemented.
	ordersv1connect.UnimplementedOrdersServiceHandler
	pool *pgxpool.Pool
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var _ ordersv1connect.OrdersServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == ordersv1connect.OrdersServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[ordersv1.PingRequest]) (*connect.Response[ordersv1.PingResponse], error) {
	return connect.NewResponse(&ordersv1.PingResponse{Service: "orders", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}
