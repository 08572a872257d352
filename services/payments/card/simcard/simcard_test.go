package simcard_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/simcard"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func charge(key, token string, amount int64) card.ChargeRequest {
	return card.ChargeRequest{IdempotencyKey: key, Token: token, TokenHash: card.TokenHash(token), Amount: amount, Currency: "BRL"}
}

func TestCharge(t *testing.T) {
	db := testdb.New(t)
	p := simcard.New(db.Pool)
	ctx := tenancy.With(context.Background(), uuid.New())
	other := tenancy.With(context.Background(), uuid.New())

	a, err := p.Charge(ctx, charge("att_1", "tok_visa_4242", 25990))
	if err != nil || a.Status != card.StatusApproved || a.DeclineCode != "" || a.Amount != 25990 || a.ID == "" {
		t.Fatalf("first charge: %+v %v", a, err)
	}
	// A retry answers with the stored charge.
	if again, err := p.Charge(ctx, charge("att_1", "tok_visa_4242", 25990)); err != nil || again != a {
		t.Fatalf("retry: %+v %v, want %+v", again, err, a)
	}
	// The same key with another amount or token is a conflict, not a charge.
	if _, err := p.Charge(ctx, charge("att_1", "tok_visa_4242", 100)); !errors.Is(err, card.ErrConflict) {
		t.Fatalf("other amount: %v", err)
	}
	if _, err := p.Charge(ctx, charge("att_1", "tok_other_4242", 25990)); !errors.Is(err, card.ErrConflict) {
		t.Fatalf("other token: %v", err)
	}
	// A token pays once: under another key it is declined, and stored so.
	used, err := p.Charge(ctx, charge("att_2", "tok_visa_4242", 1000))
	if err != nil || used.Status != card.StatusDeclined || used.DeclineCode != card.DeclineTokenUsed || used.Amount != 1000 {
		t.Fatalf("reused token: %+v %v", used, err)
	}
	if l, err := p.Lookup(ctx, "att_2"); err != nil || l != used {
		t.Fatalf("lookup: %+v %v, want %+v", l, err, used)
	}
	// Declined tokens stay usable; the outcome follows the token.
	if d, err := p.Charge(ctx, charge("att_3", "tok_visa_0002", 500)); err != nil || d.Status != card.StatusDeclined || d.DeclineCode != card.DeclineCardDeclined {
		t.Fatalf("declining token: %+v %v", d, err)
	}
	// Another tenant sees none of it: the key and the token are its own.
	if b, err := p.Charge(other, charge("att_1", "tok_visa_4242", 700)); err != nil || b.Status != card.StatusApproved || b.Amount != 700 || b.ID == a.ID {
		t.Fatalf("other tenant: %+v %v", b, err)
	}
	// No tenant, no charge.
	if _, err := p.Charge(context.Background(), charge("att_9", "tok_visa_4242", 100)); err == nil {
		t.Fatal("charged without a tenant")
	}
}

// Concurrent calls with one key make one charge and all answer with it,
// including those whose statement ran before the winner committed.
func TestConcurrentChargesWithOneKey(t *testing.T) {
	db := testdb.New(t)
	p := simcard.New(db.Pool)
	ctx := tenancy.With(context.Background(), uuid.New())
	for round := range 10 {
		key := "att_race_" + string(rune('a'+round))
		const n = 8
		var wg sync.WaitGroup
		got := make([]card.Charge, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { got[i], errs[i] = p.Charge(ctx, charge(key, "tok_race_"+key, 4200)) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || got[i] != got[0] || got[i].Status != card.StatusApproved {
				t.Fatalf("%s call %d: %+v %v (first %+v)", key, i, got[i], errs[i], got[0])
			}
		}
	}
	conn, err := pgx.Connect(ctx, db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var count int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM payments.sim_card_charges`).Scan(&count); err != nil || count != 10 {
		t.Fatalf("%d charges stored (%v), want one per key: 10", count, err)
	}
}
