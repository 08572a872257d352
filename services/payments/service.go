// Package payments is the payments service: it owns payment handlers: Pix charges through a PSP and delegated card payments.
// It owns the PostgreSQL schema "payments" and is reached only through its
// connect API.
package payments

import (
	"context"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/svcauth"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
)

// Service implements paymentsv1connect.PaymentsServiceHandler.
type Service struct {
	// Until every RPC is implemented, the rest answer CodeUnimplemented.
	paymentsv1connect.UnimplementedPaymentsServiceHandler
	pool *pgxpool.Pool
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var _ paymentsv1connect.PaymentsServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == paymentsv1connect.PaymentsServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[paymentsv1.PingRequest]) (*connect.Response[paymentsv1.PingResponse], error) {
	return connect.NewResponse(&paymentsv1.PingResponse{Service: "payments", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}
