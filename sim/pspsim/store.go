package pspsim

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// inAccount runs fn in a transaction scoped to one account.
func (s *Server) inAccount(ctx context.Context, id uuid.UUID, fn func(q *pspsimdb.Queries, tx pgx.Tx) error) error {
	return pgstore.InTenant(tenancy.With(ctx, id), s.cfg.Pool, func(tx pgx.Tx) error { return fn(pspsimdb.New(tx), tx) })
}

// single runs one statement in an account's scope in one round trip.
func (s *Server) single(ctx context.Context, id uuid.UUID, fn func(q *pspsimdb.Queries) error) error {
	return pgstore.Single(tenancy.With(ctx, id), s.cfg.Pool, func(q *pgstore.SingleQuerier) error { return fn(pspsimdb.New(q)) })
}

// allAccounts runs fn in a transaction that sees every account (app.scope
// pspsim): only for finding an account by client_id, reference or
// certificate, and for claiming deliveries.
func (s *Server) allAccounts(ctx context.Context, fn func(q *pspsimdb.Queries) error) error {
	return pgstore.InPSPSim(ctx, s.cfg.Pool, func(tx pgx.Tx) error { return fn(pspsimdb.New(tx)) })
}

// clock is now as PostgreSQL stores it (microseconds, UTC), so what an
// answer shows equals what a later read shows.
func (s *Server) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// ispb is the simulated PSP's participant code in endToEndIds.
const ispb = "99999999"

// newE2E makes an endToEndId (prefix "E") or a devolução's rtrId ("D"):
// prefix + ISPB + yyyyMMddHHmm + 11 alphanumerics = 32 characters.
func newE2E(prefix string, t time.Time) string {
	return prefix + ispb + t.UTC().Format("200601021504") + rand.Text()[:11]
}
