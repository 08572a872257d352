package catalog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// termsFlushEvery is how long a search term's count may stay in memory.
const termsFlushEvery = 10 * time.Second

// brt is São Paulo's time, whose days the search terms are counted in.
var brt = time.FixedZone("BRT", -3*60*60)

// termCounts keeps the first-page search counts of the terms agents
// search for in memory and adds them to catalog.search_terms every
// termsFlushEvery, on a clean stop and before the merchant reads them
// (SearchTerms): a search is then a read, not a durable commit each. A
// process killed outright loses at most termsFlushEvery of counts (a
// statistic, never money or stock).
type termCounts struct {
	mu sync.Mutex
	m  map[termKey]*termCount
}

type termKey struct {
	tenant uuid.UUID
	day    string // YYYY-MM-DD in São Paulo
	term   string
}

type termCount struct{ searches, empty int64 }

func (c *termCounts) add(tid uuid.UUID, now time.Time, term string, found bool) {
	k := termKey{tenant: tid, day: now.In(brt).Format(time.DateOnly), term: term}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[termKey]*termCount{}
	}
	n := c.m[k]
	if n == nil {
		n = &termCount{}
		c.m[k] = n
	}
	n.searches++
	if !found {
		n.empty++
	}
}

// take removes and returns the counts of one tenant (all when tenant is
// nil).
func (c *termCounts) take(tenant *uuid.UUID) map[termKey]*termCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[termKey]*termCount{}
	for k, n := range c.m {
		if tenant == nil || k.tenant == *tenant {
			out[k] = n
			delete(c.m, k)
		}
	}
	return out
}

// putBack returns counts a flush could not write, for the next one.
func (c *termCounts) putBack(counts map[termKey]*termCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[termKey]*termCount{}
	}
	for k, n := range counts {
		if m := c.m[k]; m != nil {
			m.searches += n.searches
			m.empty += n.empty
		} else {
			c.m[k] = n
		}
	}
}

// flushTerms writes the counts of tenant (every tenant when nil), one
// statement per tenant in its own scope; what fails is kept for later.
func (s *Service) flushTerms(ctx context.Context, tenant *uuid.UUID) error {
	byTenant := map[uuid.UUID]catalogdb.AddSearchTermsParams{}
	taken := s.terms.take(tenant)
	for k, n := range taken {
		p := byTenant[k.tenant]
		p.TenantID = k.tenant
		p.Days, p.Terms = append(p.Days, k.day), append(p.Terms, k.term)
		p.Searches, p.Empties = append(p.Searches, n.searches), append(p.Empties, n.empty)
		byTenant[k.tenant] = p
	}
	var first error
	for tid, p := range byTenant {
		err := pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
			return catalogdb.New(tx).AddSearchTerms(ctx, p)
		})
		if err != nil {
			left := map[termKey]*termCount{}
			for k, n := range taken {
				if k.tenant == tid {
					left[k] = n
				}
			}
			s.terms.putBack(left)
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// Run flushes the search-term counts every termsFlushEvery until ctx
// ends, and once more then.
func (s *Service) Run(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(termsFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.flushTerms(fctx, nil); err != nil {
				log.WarnContext(ctx, "catalog: search term counts not written at stop", "err", err)
			}
			return
		case <-t.C:
			if err := s.flushTerms(ctx, nil); err != nil {
				log.WarnContext(ctx, "catalog: search term counts not written yet; kept for the next flush", "err", err)
			}
		}
	}
}
