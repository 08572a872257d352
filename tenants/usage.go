package tenants

import (
	"context"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// Usage (issue 6, operator console): the edges count agent-facing requests
// in memory and add them here in batches; the console reads them per
// tenant. Days are São Paulo (America/Sao_Paulo) calendar dates, like the
// stats RPCs' days.

const dayLayout = "2006-01-02"

// maxUsageBatch bounds one RecordUsage call (an edge sends one row per
// tenant and day it saw traffic for since its last flush).
const maxUsageBatch = 50_000

// RecordUsage adds an edge's counts. Only the internal token may call it:
// the operator reads usage, it does not make it up.
func (s *Service) RecordUsage(ctx context.Context, req *connect.Request[tenantsv1.RecordUsageRequest]) (*connect.Response[tenantsv1.RecordUsageResponse], error) {
	if svcauth.Principal(ctx) != "service" {
		return nil, apperr.New(apperr.KindPermissionDenied, "internal_only", "usage is recorded by the edges only")
	}
	counts := req.Msg.GetCounts()
	if len(counts) > maxUsageBatch {
		return nil, apperr.Invalid("counts", "batch_too_large", "at most %d counts per call", maxUsageBatch)
	}
	// Merge duplicates first: one row per key keeps the upsert a single
	// statement (ON CONFLICT cannot touch a row twice).
	type key struct {
		tenant uuid.UUID
		day    time.Time
	}
	merged := map[key][2]int64{}
	var order []key
	for i, c := range counts {
		id, err := uuid.Parse(c.GetTenantId())
		if err != nil {
			return nil, apperr.Invalid("counts", "invalid_tenant_id", "counts[%d].tenant_id must be a UUID", i)
		}
		day, err := time.Parse(dayLayout, c.GetDay())
		if err != nil {
			return nil, apperr.Invalid("counts", "invalid_day", "counts[%d].day must be YYYY-MM-DD", i)
		}
		if c.GetRequests() < 0 || c.GetErrors() < 0 || c.GetErrors() > c.GetRequests() {
			return nil, apperr.Invalid("counts", "invalid_count", "counts[%d]: need 0 <= errors <= requests", i)
		}
		k := key{id, day}
		v, seen := merged[k]
		if !seen {
			order = append(order, k)
		}
		merged[k] = [2]int64{v[0] + c.GetRequests(), v[1] + c.GetErrors()}
	}
	if len(order) == 0 {
		return connect.NewResponse(&tenantsv1.RecordUsageResponse{}), nil
	}
	p := tenantsdb.AddRequestUsageParams{}
	for _, k := range order {
		v := merged[k]
		p.TenantIds = append(p.TenantIds, k.tenant)
		p.Days = append(p.Days, pgtype.Date{Time: k.day, Valid: true})
		p.Requests = append(p.Requests, v[0])
		p.Errors = append(p.Errors, v[1])
	}
	// One statement for the whole batch, in the registry scope the usage
	// table allows (like Host resolution): a transaction per tenant would
	// cost an edge thousands of round trips per flush.
	err := pgstore.InRegistry(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).AddRequestUsage(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.RecordUsageResponse{}), nil
}

// GetUsage returns one tenant's daily counts over the window.
func (s *Service) GetUsage(ctx context.Context, req *connect.Request[tenantsv1.GetUsageRequest]) (*connect.Response[tenantsv1.GetUsageResponse], error) {
	until := time.Now()
	if u := req.Msg.GetUntilUnix(); u > 0 {
		until = time.Unix(u, 0)
	}
	since := until.AddDate(0, 0, -30)
	if v := req.Msg.GetSinceUnix(); v > 0 {
		since = time.Unix(v, 0)
	}
	if since.After(until) {
		return nil, apperr.Invalid("since_unix", "invalid_window", "since_unix is after until_unix")
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	out := &tenantsv1.GetUsageResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tenantsdb.New(tx).ListRequestUsage(ctx, tenantsdb.ListRequestUsageParams{
			TenantID: id,
			Since:    since,
			Until:    until,
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			out.Days = append(out.Days, &tenantsv1.UsageCount{Day: r.Day.Time.Format(dayLayout), Requests: r.Requests, Errors: r.Errors})
			out.Requests += r.Requests
			out.Errors += r.Errors
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// searchTenants is ListTenants with a query: a case-insensitive substring
// of the name, slug or a domain, paginated by slug like the plain list.
func (s *Service) searchTenants(ctx context.Context, pageSize int32, token, query string) ([]*tenantsv1.Tenant, string, error) {
	query = strings.TrimSpace(query)
	if len(query) > 253 {
		return nil, "", apperr.Invalid("query", "invalid_query", "query is too long")
	}
	pattern := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(query)
	return s.tenantPage(ctx, pageSize, token, func(q *tenantsdb.Queries, after *string, size int32) ([]tenantsdb.TenantsTenant, error) {
		return q.SearchTenants(ctx, tenantsdb.SearchTenantsParams{AfterSlug: after, Pattern: pattern, PageSize: size})
	})
}

// ReserveHosts names hosts no tenant may own (the operator console's host):
// CreateTenant and AddDomain refuse them. Call before serving.
func (s *Service) ReserveHosts(hosts ...string) {
	for _, h := range hosts {
		if h = hostname.Normalize(h); h != "" {
			s.reserved = append(s.reserved, h)
		}
	}
}

// checkReserved refuses reserved hosts among domains (field names the form
// field, like the other domain errors).
func (s *Service) checkReserved(field string, domains ...string) error {
	for _, d := range domains {
		n := hostname.Normalize(d)
		for _, r := range s.reserved {
			if n == r {
				return apperr.Invalid(field, "reserved_domain", "%s is reserved for the operator console", n)
			}
		}
	}
	return nil
}
