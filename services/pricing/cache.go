package pricing

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/tenantcache"
	"github.com/bcpdev/bcp/services/pricing/pricingdb"
)

// changeChannel is where every write to a tenant's pricing configuration
// is announced (payload: the tenant id), in the writing transaction, so
// every pricing process drops its cached copy when the write commits.
const changeChannel = "bcp_pricing_changes"

// tenantConfig is a tenant's quote configuration as cached: active rates
// (with their CEP ranges), active pickup locations and active discount
// definitions (priority, id order). Usage counts are never cached: quotes
// that involve a limited discount read them from the database.
type tenantConfig struct {
	rates     []ShippingRate
	pickups   []PickupLocation
	discounts []Discount
}

// Run listens for pricing configuration changes until ctx ends. Without it
// (tests, or the listener reconnecting), cached configuration lives 2 s;
// this process's own writes invalidate it at once either way.
func (s *Service) Run(ctx context.Context, log *slog.Logger) {
	tenantcache.Listen(ctx, s.pool, changeChannel, log, s.store.cache)
}

// config returns the tenant's cached configuration, loading it (one
// transaction) on a miss.
func (s store) config(ctx context.Context, tid uuid.UUID) (*tenantConfig, error) {
	return s.cache.Get(ctx, tid.String(), func(ctx context.Context) (*tenantConfig, error) {
		tc := &tenantConfig{}
		err := s.inTenant(ctx, func(q *pricingdb.Queries, tid uuid.UUID) error {
			var err error
			if tc.rates, err = listRates(ctx, q, tid, true); err != nil {
				return err
			}
			if tc.pickups, err = listPickups(ctx, q, tid, true); err != nil {
				return err
			}
			rows, err := q.ListDiscounts(ctx, tid)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if r.PricingDiscount.Active {
					tc.discounts = append(tc.discounts, discountFromRow(r.PricingDiscount))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The order QuoteDiscounts returns them in.
		slices.SortStableFunc(tc.discounts, func(a, b Discount) int {
			if a.Priority != b.Priority {
				return int(a.Priority - b.Priority)
			}
			return strings.Compare(a.ID, b.ID)
		})
		return tc, nil
	})
}

// inTenantWrite is inTenant for writes to the configuration: the change is
// announced in the same transaction and this process's cache entry is
// dropped once it commits (other processes drop theirs on the
// notification).
func (s store) inTenantWrite(ctx context.Context, fn func(q *pricingdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fn(pricingdb.New(tx), tid); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changeChannel, tid.String())
		return err
	})
	s.cache.Invalidate(tid.String())
	return err
}
