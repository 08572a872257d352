// Package simcard is the simulated card processor of sandbox delegated
// handlers. Its state lives in the payments schema. Outcomes are
// deterministic: a request's Scenario wins; otherwise the last four
// characters of the opaque token decide, like the test cards of real
// processors:
//
//	…4242  approved
//	…0002  declined, card_declined
//	…3220  requires_action (3-D Secure challenge)
//	…9995  declined, insufficient_funds
//	other  approved
//
// A charge is keyed by its idempotency key (the attempt id): a retry
// returns the stored charge and never charges again; a token that already
// paid under another key is declined (tokens are single use); a key that
// was canceled (Cancel) answers voided and never charges.
package simcard

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// Processor is the simulated processor; it serves every tenant (the
// tenant comes from the context).
type Processor struct{ pool *pgxpool.Pool }

// New returns the processor.
func New(pool *pgxpool.Pool) *Processor { return &Processor{pool: pool} }

var (
	_ card.Processor = (*Processor)(nil)
	_ card.Lookuper  = (*Processor)(nil)
)

// OpaqueToken is the shape of the simulated vault's tokens.
var OpaqueToken = regexp.MustCompile(`^tok_[A-Za-z0-9_]{4,200}$`)

func (p *Processor) inTenant(ctx context.Context, fn func(q *paymentsdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.InTenant(ctx, p.pool, func(tx pgx.Tx) error { return fn(paymentsdb.New(tx), tid) })
}

// outcome decides a charge's result.
func outcome(req card.ChargeRequest) (status, decline string) {
	switch req.Scenario {
	case "approve":
		return card.StatusApproved, ""
	case "decline":
		return card.StatusDeclined, card.DeclineCardDeclined
	case "requires_3ds", "3ds":
		return card.StatusRequiresAction, ""
	case "insufficient_funds":
		return card.StatusDeclined, card.DeclineInsufficientFunds
	}
	if req.Token != "" && !OpaqueToken.MatchString(req.Token) {
		return card.StatusDeclined, card.DeclineInvalidToken
	}
	switch {
	case strings.HasSuffix(req.Token, "0002"):
		return card.StatusDeclined, card.DeclineCardDeclined
	case strings.HasSuffix(req.Token, "3220"):
		return card.StatusRequiresAction, ""
	case strings.HasSuffix(req.Token, "9995"):
		return card.StatusDeclined, card.DeclineInsufficientFunds
	}
	return card.StatusApproved, ""
}

// Charge runs a sale once per idempotency key, in one statement.
func (p *Processor) Charge(ctx context.Context, req card.ChargeRequest) (card.Charge, error) {
	if req.IdempotencyKey == "" || req.Amount <= 0 {
		return card.Charge{}, errors.New("simcard: idempotency key and a positive amount are required")
	}
	tid, err := tenancy.From(ctx)
	if err != nil {
		return card.Charge{}, err
	}
	status, decline := outcome(req)
	var row paymentsdb.SimChargeCardRow
	err = pgstore.Single(ctx, p.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		row, err = paymentsdb.New(q).SimChargeCard(ctx, paymentsdb.SimChargeCardParams{
			TenantID: tid, ID: ids.New("ch"), IdempotencyKey: req.IdempotencyKey, TokenHash: req.TokenHash[:],
			Amount: req.Amount, Currency: req.Currency, Status: status, DeclineCode: decline,
			TokenUsedCode: card.DeclineTokenUsed,
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent call with the same key committed its charge after
		// the statement's snapshot; it is visible now.
		err = pgstore.Single(ctx, p.pool, func(q *pgstore.SingleQuerier) error {
			r, err := paymentsdb.New(q).SimGetCardChargeByKey(ctx, paymentsdb.SimGetCardChargeByKeyParams{TenantID: tid, IdempotencyKey: req.IdempotencyKey})
			row = paymentsdb.SimChargeCardRow{ID: r.ID, TokenHash: r.TokenHash, Amount: r.Amount, Status: r.Status, DeclineCode: r.DeclineCode}
			return err
		})
	}
	if err != nil {
		return card.Charge{}, err
	}
	if row.Status == card.StatusVoided {
		// Canceled by its key (Cancel), possibly before it was ever made:
		// nothing is charged, whatever this request says.
		return card.Charge{ID: row.ID, Status: row.Status, Amount: row.Amount}, nil
	}
	if row.Amount != req.Amount || string(row.TokenHash) != string(req.TokenHash[:]) {
		return card.Charge{}, card.ErrConflict
	}
	return card.Charge{ID: row.ID, Status: row.Status, DeclineCode: row.DeclineCode, Amount: row.Amount}, nil
}

// Refund refunds part or all of an approved charge, once per refund id.
func (p *Processor) Refund(ctx context.Context, chargeID, refundID string, cents int64) (card.Refund, error) {
	var out card.Refund
	err := p.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		ch, err := q.SimLockCardCharge(ctx, paymentsdb.SimLockCardChargeParams{TenantID: tid, ID: chargeID})
		if err != nil {
			return err
		}
		if r, err := q.SimGetCardRefundByKey(ctx, paymentsdb.SimGetCardRefundByKeyParams{TenantID: tid, IdempotencyKey: refundID}); err == nil {
			if r.Amount != cents || r.ChargeID != chargeID {
				return card.ErrConflict
			}
			out = card.Refund{ID: r.ID, Amount: r.Amount}
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if ch.Status != card.StatusApproved {
			return errors.New("simcard: only approved charges can be refunded")
		}
		if cents <= 0 || ch.Refunded+cents > ch.Amount {
			return card.ErrRefundExceeds
		}
		id := ids.New("re")
		if err := q.SimInsertCardRefund(ctx, paymentsdb.SimInsertCardRefundParams{TenantID: tid, ID: id, ChargeID: chargeID, IdempotencyKey: refundID, Amount: cents}); err != nil {
			return err
		}
		out = card.Refund{ID: id, Amount: cents}
		return q.SimAddCardRefunded(ctx, paymentsdb.SimAddCardRefundedParams{TenantID: tid, ID: chargeID, Amount: cents})
	})
	return out, err
}

// Cancel stops the sale under an idempotency key (card.Processor): a key
// that never charged is recorded voided, one waiting for 3-D Secure is
// voided, anything else is returned as it is.
func (p *Processor) Cancel(ctx context.Context, req card.CancelRequest) (card.Charge, error) {
	if req.IdempotencyKey == "" || req.Amount <= 0 {
		return card.Charge{}, errors.New("simcard: idempotency key and a positive amount are required")
	}
	tid, err := tenancy.From(ctx)
	if err != nil {
		return card.Charge{}, err
	}
	var out card.Charge
	err = pgstore.Single(ctx, p.pool, func(q *pgstore.SingleQuerier) error {
		row, err := paymentsdb.New(q).SimCancelCardByKey(ctx, paymentsdb.SimCancelCardByKeyParams{
			TenantID: tid, ID: ids.New("ch"), IdempotencyKey: req.IdempotencyKey, TokenHash: make([]byte, 32),
			Amount: req.Amount, Currency: req.Currency,
		})
		out = card.Charge{ID: row.ID, Status: row.Status, DeclineCode: row.DeclineCode, Amount: row.Amount}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// A charge under this key committed after the statement's snapshot.
		return p.Lookup(ctx, req.IdempotencyKey)
	}
	return out, err
}

// Lookup finds the charge made under an idempotency key.
func (p *Processor) Lookup(ctx context.Context, key string) (card.Charge, error) {
	var out card.Charge
	err := p.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		row, err := q.SimGetCardChargeByKey(ctx, paymentsdb.SimGetCardChargeByKeyParams{TenantID: tid, IdempotencyKey: key})
		if errors.Is(err, pgx.ErrNoRows) {
			return card.ErrNotFound
		}
		out = card.Charge{ID: row.ID, Status: row.Status, DeclineCode: row.DeclineCode, Amount: row.Amount}
		return err
	})
	return out, err
}
