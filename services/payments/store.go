package payments

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// Attempt statuses as stored.
const (
	stPending        = "pending"
	stSucceeded      = "succeeded"
	stFailed         = "failed"
	stExpired        = "expired"
	stCanceled       = "canceled"
	stRequiresAction = "requires_action"
	stRefunded       = "refunded"
	stPartRefunded   = "partially_refunded"
)

type attempt = paymentsdb.PaymentsAttempt

// inTenant runs fn with the sqlc queries in a transaction of the context
// tenant.
func (s *Service) inTenant(ctx context.Context, fn func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error { return fn(paymentsdb.New(tx), tid, tx) })
}

// single runs fn, which issues exactly one statement, in the context
// tenant's scope in one round trip instead of a transaction's three or
// more (pgstore.Single). For reads: under READ COMMITTED each statement
// has its own snapshot anyway, so a read-only transaction of several
// statements gives no more consistency than that many singles.
func (s *Service) single(ctx context.Context, fn func(q *paymentsdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error { return fn(paymentsdb.New(q), tid) })
}

func errAttemptNotFound(id string) error {
	return apperr.NotFound("attempt_not_found", "payment attempt %q not found", id)
}

func (s *Service) getAttempt(ctx context.Context, id string) (attempt, error) {
	var a attempt
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		a, err = q.GetAttempt(ctx, paymentsdb.GetAttemptParams{TenantID: tid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return a, errAttemptNotFound(id)
	}
	return a, err
}

// update writes a's mutable fields, compare-and-swap on a.Version; from
// is the status a had when read (for the transition counter).
func (s *Service) update(ctx context.Context, q *paymentsdb.Queries, from string, a attempt) (attempt, error) {
	if !canMove(from, a.Status) {
		return a, errIllegalMove(a.ID, from, a.Status)
	}
	out, err := q.UpdateAttempt(ctx, paymentsdb.UpdateAttemptParams{
		TenantID: a.TenantID, ID: a.ID, Version: a.Version, Status: a.Status, FailureCode: a.FailureCode,
		FailureMessage: a.FailureMessage, Display: a.Display, ActionUrl: a.ActionUrl, RefundedAmount: a.RefundedAmount,
		E2eID: a.E2eID, ChargeID: a.ChargeID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return out, apperr.New(apperr.KindAborted, "concurrent_update", "the payment attempt changed meanwhile; retry")
	}
	if err == nil && from != out.Status {
		s.metrics.attempts.WithLabelValues(kindOf(out), out.Status).Inc()
	}
	return out, err
}

func constraintOf(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.ConstraintName
	}
	return ""
}

var statusToProto = map[string]paymentsv1.AttemptStatus{
	stPending:        paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING,
	stSucceeded:      paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED,
	stFailed:         paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED,
	stExpired:        paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED,
	stCanceled:       paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED,
	stRequiresAction: paymentsv1.AttemptStatus_ATTEMPT_STATUS_REQUIRES_ACTION,
	stRefunded:       paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED,
	stPartRefunded:   paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED,
}

func toProto(a attempt) *paymentsv1.Attempt {
	out := &paymentsv1.Attempt{
		Id: a.ID, CheckoutId: a.CheckoutID, HandlerId: a.HandlerID, HandlerName: a.HandlerName, InstrumentId: a.InstrumentID,
		InstrumentType: a.InstrumentType, Amount: a.Amount, Currency: a.Currency, Status: statusToProto[a.Status],
		FailureCode: a.FailureCode, FailureMessage: a.FailureMessage, ActionUrl: a.ActionUrl, RefundedAmount: a.RefundedAmount,
		CreateTime: timestamppb.New(a.CreatedAt), UpdateTime: timestamppb.New(a.UpdatedAt),
	}
	if d := compactJSON(a.Display); d != "{}" {
		out.DisplayJson = d
	}
	if a.ExpiresAt != nil {
		out.ExpiresAt = timestamppb.New(*a.ExpiresAt)
	}
	if a.E2eID != nil {
		out.EndToEndId = *a.E2eID
	}
	return out
}

func compactJSON(raw []byte) string {
	if string(raw) == "{}" { // what most attempts store: already compact
		return "{}"
	}
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "{}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// requestHash binds an attempt id to its request. It is keyed (HMAC) so
// that a hash of a request carrying a token reveals nothing about it.
func (s *Service) requestHash(checkoutID string, amount int64, currency, instrumentJSON string) []byte {
	m := hmac.New(sha256.New, s.hashKey)
	for _, f := range []string{checkoutID, strconv.FormatInt(amount, 10), currency, compactJSON([]byte(instrumentJSON))} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// newTxid is a UUIDv4 as 32 lowercase hex characters (valid for cob).
func newTxid() string {
	u := uuid.New()
	return hex.EncodeToString(u[:])
}

// newDevolucaoID mints a Pix devolução id: "R" + 32 hex ([a-zA-Z0-9]{1,35}).
func newDevolucaoID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "R" + hex.EncodeToString(b[:])
}

// brt is Brasília time, for messages people read.
var brt = time.FixedZone("BRT", -3*3600)

// Hooks.

// ensureHook returns the handler's webhook hook, creating it the first
// time, and records the environment it is used in.
func (s *Service) ensureHook(ctx context.Context, handlerID, env string) (paymentsdb.PaymentsHook, error) {
	// Every charge after a handler's first finds its hook as it is: one
	// read. Creating it or moving it to env is a transaction.
	if hook, err := s.hookByHandler(ctx, handlerID); err == nil && hook.Environment == env {
		return hook, nil
	} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return hook, err
	}
	var hook paymentsdb.PaymentsHook
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		if err := q.InsertHook(ctx, paymentsdb.InsertHookParams{TenantID: tid, ID: ids.New("whk"), HandlerID: handlerID, Environment: env}); err != nil {
			return err
		}
		var err error
		hook, err = q.GetHookByHandler(ctx, paymentsdb.GetHookByHandlerParams{TenantID: tid, HandlerID: handlerID})
		if err == nil && hook.Environment != env {
			err = q.SetHookEnvironment(ctx, paymentsdb.SetHookEnvironmentParams{TenantID: tid, ID: hook.ID, Environment: env})
			hook.Environment = env
		}
		return err
	})
	return hook, err
}

// hookByHandler loads an existing hook.
func (s *Service) hookByHandler(ctx context.Context, handlerID string) (paymentsdb.PaymentsHook, error) {
	var hook paymentsdb.PaymentsHook
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		hook, err = q.GetHookByHandler(ctx, paymentsdb.GetHookByHandlerParams{TenantID: tid, HandlerID: handlerID})
		return err
	})
	return hook, err
}
