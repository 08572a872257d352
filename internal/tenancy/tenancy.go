// Package tenancy carries the current tenant in a context. It is set once,
// at the edge (from the Host) or by the service interceptor (from the
// internal call header), and read fail-closed: a missing tenant is an error,
// never a default.
package tenancy

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// ErrNoTenant is returned when a tenant-scoped operation runs without one.
var ErrNoTenant = errors.New("tenancy: no tenant in context")

// Header carries the tenant on internal service calls.
const Header = "Bcp-Tenant-Id"

type ctxKey struct{}

// With returns ctx scoped to tenant id.
func With(ctx context.Context, id uuid.UUID) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the tenant of ctx, or ErrNoTenant.
func From(ctx context.Context) (uuid.UUID, error) {
	id, ok := ctx.Value(ctxKey{}).(uuid.UUID)
	if !ok || id == uuid.Nil {
		return uuid.Nil, ErrNoTenant
	}
	return id, nil
}
