package checkout

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// IdempotencyTTL is how long keys and their responses are kept (the
// protocol asks for at least 24 h; 48 h is its recommendation).
const IdempotencyTTL = 48 * time.Hour

// inFlightLease is how long a claimed key may stay in flight before a
// retry of the same request takes it over. A process that dies mid-request
// (or loses the database before releasing the key) never finishes its
// claim; without a lease the agent's retries with that key got
// request_in_flight for 48 h (found by cmd/bcpchaos). No request runs this
// long, and a re-execution is safe anyway: a checkout never starts a
// second payment.
const inFlightLease = 2 * time.Minute

func validKeyArgs(scope, key string) error {
	if scope == "" || len(scope) > 2300 {
		return apperr.Invalid("scope", "invalid_scope", "scope is required")
	}
	if key == "" || len(key) > 255 {
		return apperr.Invalid("key", "invalid_idempotency_key", "idempotency key must have 1 to 255 characters")
	}
	return nil
}

// ClaimIdempotencyKey claims a key for a request or reports what happened
// to it before.
func (s *Service) ClaimIdempotencyKey(ctx context.Context, r *connect.Request[checkoutv1.ClaimIdempotencyKeyRequest]) (*connect.Response[checkoutv1.ClaimIdempotencyKeyResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	m := r.Msg
	if err := validKeyArgs(m.GetScope(), m.GetKey()); err != nil {
		return nil, err
	}
	if len(m.GetRequestHash()) != 32 {
		return nil, apperr.Invalid("request_hash", "invalid_hash", "request_hash must be a SHA-256 digest")
	}
	var row checkoutdb.ClaimIdempotencyKeyRow
	now := s.now()
	// Keep the table small without a cross-tenant sweeper: now and then a
	// claim clears this tenant's expired keys first.
	if rand.IntN(100) == 0 {
		err = pgstore.Single(ctx, s.store.pool, func(q *pgstore.SingleQuerier) error {
			_, err := checkoutdb.New(q).DeleteExpiredIdempotencyKeys(ctx, tid)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	// The claim is one statement (one round trip).
	err = pgstore.Single(ctx, s.store.pool, func(q *pgstore.SingleQuerier) error {
		row, err = checkoutdb.New(q).ClaimIdempotencyKey(ctx, checkoutdb.ClaimIdempotencyKeyParams{
			TenantID: tid, Scope: m.GetScope(), Key: m.GetKey(), RequestHash: m.GetRequestHash(), ClaimedAt: now, ExpiresAt: now.Add(IdempotencyTTL),
			StaleBefore: now.Add(-inFlightLease),
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent claim committed after the statement's snapshot: read
		// it with a fresh one.
		err = pgstore.Single(ctx, s.store.pool, func(q *pgstore.SingleQuerier) error {
			got, err := checkoutdb.New(q).GetIdempotencyKey(ctx, checkoutdb.GetIdempotencyKeyParams{TenantID: tid, Scope: m.GetScope(), Key: m.GetKey()})
			row = checkoutdb.ClaimIdempotencyKeyRow{RequestHash: got.RequestHash, State: got.State, Response: got.Response}
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	out := &checkoutv1.ClaimIdempotencyKeyResponse{}
	switch {
	case row.Claimed:
		out.Outcome = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE
	case !bytes.Equal(row.RequestHash, m.GetRequestHash()):
		out.Outcome = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_CONFLICT
	case row.State == "done":
		out.Outcome, out.Response = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_REPLAY, row.Response
	default:
		out.Outcome = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_IN_FLIGHT
	}
	return connect.NewResponse(out), nil
}

// FinishIdempotencyKey stores a request's response for replays.
func (s *Service) FinishIdempotencyKey(ctx context.Context, r *connect.Request[checkoutv1.FinishIdempotencyKeyRequest]) (*connect.Response[checkoutv1.FinishIdempotencyKeyResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	if err := validKeyArgs(r.Msg.GetScope(), r.Msg.GetKey()); err != nil {
		return nil, err
	}
	err = pgstore.Single(ctx, s.store.pool, func(q *pgstore.SingleQuerier) error {
		n, err := checkoutdb.New(q).FinishIdempotencyKey(ctx, checkoutdb.FinishIdempotencyKeyParams{
			TenantID: tid, Scope: r.Msg.GetScope(), Key: r.Msg.GetKey(), Response: r.Msg.GetResponse(),
		})
		if err == nil && n == 0 {
			return apperr.New(apperr.KindFailedPrecondition, "not_claimed", "the idempotency key is not claimed")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.FinishIdempotencyKeyResponse{}), nil
}

// ReleaseIdempotencyKey drops an in-flight claim.
func (s *Service) ReleaseIdempotencyKey(ctx context.Context, r *connect.Request[checkoutv1.ReleaseIdempotencyKeyRequest]) (*connect.Response[checkoutv1.ReleaseIdempotencyKeyResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	if err := validKeyArgs(r.Msg.GetScope(), r.Msg.GetKey()); err != nil {
		return nil, err
	}
	err = pgstore.InTenant(ctx, s.store.pool, func(tx pgx.Tx) error {
		_, err := checkoutdb.New(tx).ReleaseIdempotencyKey(ctx, checkoutdb.ReleaseIdempotencyKeyParams{TenantID: tid, Scope: r.Msg.GetScope(), Key: r.Msg.GetKey()})
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.ReleaseIdempotencyKeyResponse{}), nil
}
