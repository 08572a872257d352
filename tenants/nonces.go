package tenants

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// The replay cache of agent signature nonces (issue 32): one row per nonce
// an edge has accepted, shared by every edge (they hold no database), kept
// for as long as its signature could still be accepted. The edge decides
// that lifetime (created + its window + clock skew, or expires + skew when
// sooner); this service bounds it.
const (
	minNonceValidity = time.Second
	// maxNonceValidity covers a signature without created whose expires
	// is at UCP's 24 h ceiling, plus skew.
	maxNonceValidity = 25 * time.Hour
	// NonceSweepEvery is how often a process that claims nonces deletes the
	// expired ones of every tenant, up to nonceSweepBatches batches of
	// nonceSweepBatch rows; the table then holds the nonces still live plus
	// at most NonceSweepEvery's worth of expired ones.
	NonceSweepEvery   = time.Minute
	nonceSweepBatch   = 5000
	nonceSweepBatches = 20
	nonceSweepTimeout = 10 * time.Second
)

// ClaimSignatureNonce records a nonce for the call's tenant. One statement
// in one round trip (pgstore.Single), committed durably: a claim lost in a
// crash would let the same signature through again.
func (s *Service) ClaimSignatureNonce(ctx context.Context, req *connect.Request[tenantsv1.ClaimSignatureNonceRequest]) (*connect.Response[tenantsv1.ClaimSignatureNonceResponse], error) {
	if svcauth.Principal(ctx) != "service" {
		return nil, apperr.New(apperr.KindPermissionDenied, "internal_only", "signature nonces are claimed by the edges only")
	}
	id, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	key := req.Msg.GetKey()
	if len(key) != 32 {
		return nil, apperr.Invalid("key", "invalid_nonce_key", "key must be the 32-byte SHA-256 of the signer and the nonce")
	}
	d := req.Msg.GetValidFor()
	if d == nil || d.CheckValid() != nil || d.AsDuration() < minNonceValidity || d.AsDuration() > maxNonceValidity {
		return nil, apperr.Invalid("valid_for", "invalid_validity", "valid_for must be between %s and %s", minNonceValidity, maxNonceValidity)
	}
	var n int64
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		n, err = tenantsdb.New(q).ClaimSignatureNonce(ctx, tenantsdb.ClaimSignatureNonceParams{
			TenantID: id, Key: key, ValidForSeconds: d.AsDuration().Seconds(),
		})
		return err
	})
	if err != nil {
		return nil, err // an unknown tenant fails the foreign key: reference_missing
	}
	s.maybeSweepNonces(ctx)
	return connect.NewResponse(&tenantsv1.ClaimSignatureNonceResponse{Fresh: n == 1}), nil
}

// maybeSweepNonces sweeps when this process has not for NonceSweepEvery.
// The claim that triggers it has its answer already; a failure is only
// logged (the next sweep comes round).
func (s *Service) maybeSweepNonces(ctx context.Context) {
	now := time.Now().UnixNano()
	last := s.lastNonceSweep.Load()
	if now-last < int64(NonceSweepEvery) || !s.lastNonceSweep.CompareAndSwap(last, now) {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nonceSweepTimeout)
	defer cancel()
	if _, err := s.SweepSignatureNonces(sctx); err != nil && s.log != nil {
		s.log.WarnContext(ctx, "tenants: signature nonce sweep failed", "err", err)
	}
}

// SweepSignatureNonces deletes expired nonces of every tenant and says how
// many.
func (s *Service) SweepSignatureNonces(ctx context.Context) (int64, error) {
	var total int64
	for range nonceSweepBatches {
		var n int64
		err := pgstore.InSignatureNonceSweep(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			n, err = tenantsdb.New(tx).SweepSignatureNonces(ctx, nonceSweepBatch)
			return err
		})
		total += n
		if err != nil || n < nonceSweepBatch {
			return total, err
		}
	}
	return total, nil
}
