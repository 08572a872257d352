package db_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/testdb"
)

// The invariants of db/checks/invariants.sql hold on an empty platform
// and on money kept as it should be, and each one reports the breach it
// is written for: the state of issue 20's race (a canceled checkout with
// an order and a card charge the processor took, a failed attempt whose
// charge it approved) among them. The processor's and PSP's ledgers are
// the PSP simulator's (schema pspsim), where sandbox handlers without
// settings of their own pay.
func TestInvariantsCatchTheirBreach(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	invs, err := db.Invariants()
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) < 9 {
		t.Fatalf("%d invariants parsed", len(invs))
	}
	violations := func() map[string][]string {
		t.Helper()
		out := map[string][]string{}
		for _, inv := range invs {
			var n int
			if err := conn.QueryRow(ctx, inv.Count).Scan(&n); err != nil {
				t.Fatalf("%s count: %v", inv.Name, err)
			}
			rows, err := conn.Query(ctx, inv.Query)
			if err != nil {
				t.Fatalf("%s: %v", inv.Name, err)
			}
			for rows.Next() {
				var name, v string
				if err := rows.Scan(&name, &v); err != nil {
					t.Fatal(err)
				}
				out[inv.Name] = append(out[inv.Name], v)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", inv.Name, err)
			}
			slices.Sort(out[inv.Name])
		}
		return out
	}
	tid, account := uuid.New(), uuid.New()
	// Rows of the merchant's schemas bind $1 to tid, the simulator's to
	// account.
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			arg := tid
			if strings.Contains(q, "INTO pspsim.") {
				arg = account
			}
			if _, err := conn.Exec(ctx, q, arg); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if v := violations(); len(v) != 0 {
		t.Fatalf("an empty platform breaks %v", v)
	}

	// A merchant (tid) whose sandbox card and Pix handlers pay at the
	// simulator (account: the simulated bank account), and one sandbox
	// Pix handler with settings of its own (pix_bank: its money is at a
	// bank these checks cannot read).
	exec(`INSERT INTO payments.sandbox_accounts (tenant_id, handler_id, client_id, chave, sealed_secrets) VALUES
	        ($1, 'card', 'cli_card', 'chave-card', '\x00'), ($1, 'pix', 'cli_pix', 'chave-pix', '\x00')`)

	// Money kept as it should be: a completed card checkout and a completed
	// Pix checkout with their orders, a card charge refunded in full and a
	// Pix given back (devolução settled) for canceled checkouts, and a
	// sale at the other bank.
	exec(
		rowSession("chk_card", "completed", "pay_card", "ord_card"), rowOrder("ord_card", "chk_card", "pay_card"),
		rowAttempt("pay_card", "chk_card", "card", "succeeded", "NULL", "NULL", "'"+piID("card")+"'"),
		rowIntent(piID("card"), "pay_card", "succeeded", 0),
		rowSession("chk_pix", "completed", "pay_pix", "ord_pix"), rowOrder("ord_pix", "chk_pix", "pay_pix"),
		rowAttempt("pay_pix", "chk_pix", "pix", "succeeded", "'"+hexTxid("a")+"'", "'"+e2eID("Epix")+"'", "NULL"),
		rowPix(e2eID("Epix"), hexTxid("a")),
		rowSession("chk_cardback", "canceled", "pay_cardback", ""),
		rowAttempt("pay_cardback", "chk_cardback", "card", "refunded", "NULL", "NULL", "'"+piID("cardback")+"'"),
		rowIntent(piID("cardback"), "pay_cardback", "succeeded", 13480),
		rowSession("chk_back", "canceled", "pay_back", ""),
		rowAttempt("pay_back", "chk_back", "pix", "refunded", "'"+hexTxid("b")+"'", "'"+e2eID("Eback")+"'", "NULL"),
		rowPix(e2eID("Eback"), hexTxid("b")), rowDevolucao(e2eID("Eback"), "D1", "DEVOLVIDO"),
		rowAttempt("pay_bank", "chk_bank", "pix_bank", "succeeded", "'"+hexTxid("c")+"'", "'"+e2eID("Ebank")+"'", "NULL"),
	)
	if v := violations(); len(v) != 0 {
		t.Fatalf("money kept right breaks %v", v)
	}

	exec(
		// The race's end state: canceled, with an order, a charge the
		// processor took whose attempt says failed, and its stock still
		// reserved.
		rowSession("chk_race", "canceled", "pay_race", ""), rowOrder("ord_race", "chk_race", "pay_race"),
		rowAttempt("pay_race", "chk_race", "card", "failed", "NULL", "NULL", "NULL"),
		rowIntent(piID("race"), "pay_race", "succeeded", 0),
		`INSERT INTO catalog.stock_reservations (tenant_id, checkout_id, variant_id, quantity) VALUES ($1, 'chk_race', 'var_cam', 2)`,
		// A charge refunded in part is still money kept.
		rowSession("chk_part", "canceled", "", ""),
		rowAttempt("pay_part", "chk_part", "card", "canceled", "NULL", "NULL", "NULL"),
		rowIntent(piID("part"), "pay_part", "succeeded", 5000),
		// A Pix paid after its attempt expired, whose devolução the PSP
		// refused: the money stayed.
		rowAttempt("pay_late", "chk_late", "pix", "expired", "'"+hexTxid("d")+"'", "NULL", "NULL"),
		rowPix(e2eID("Elate"), hexTxid("d")), rowDevolucao(e2eID("Elate"), "D2", "NAO_REALIZADO"),
		// Succeeded attempts the simulator knows nothing of.
		rowAttempt("pay_ghost", "chk_ghost", "card", "succeeded", "NULL", "NULL", "'"+piID("ghost")+"'"),
		rowAttempt("pay_pixghost", "chk_pixghost", "pix", "partially_refunded", "'"+hexTxid("e")+"'", "'"+e2eID("Eghost")+"'", "NULL"),
	)
	got := violations()
	want := map[string][]string{
		"every order's checkout is completed (a canceled or expired checkout has no order)": {"ord_race (checkout chk_race: canceled)"},
		"every approved card charge is the succeeded attempt of a completed checkout, or refunded": {
			piID("part") + " (key pay_part: attempt canceled, checkout canceled, refunded 5000 of 13480)",
			piID("race") + " (key pay_race: attempt failed, checkout canceled, refunded 0 of 13480)",
		},
		"every Pix received is the succeeded attempt of a completed checkout, or refunded": {
			e2eID("Elate") + " (txid " + hexTxid("d") + ": attempt expired, checkout missing)",
		},
		"every succeeded attempt has its money at the processor or PSP": {
			"pay_ghost (succeeded, checkout chk_ghost)", "pay_pixghost (partially_refunded, checkout chk_pixghost)",
		},
		"a completed checkout keeps its stock, a checkout without an order holds none": {"chk_race (var_cam reserved; checkout canceled)"},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%q:\n got %q\nwant %q", name, got[name], w)
		}
	}
	for name, v := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%q breached too: %q", name, v)
		}
	}
}

// The row helpers write INSERTs with $1 the merchant, or the simulator
// account in the simulator's tables. rowSession is a checkout of 13480 (attemptID and orderID ""
// for none).
func rowSession(id, status, attemptID, orderID string) string {
	return `INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities, request, state, expires_at, payment_attempt_id, order_id)
	 VALUES ($1, '` + id + `', '` + status + `', 'BRL', 13480, 'https://a.example/p.json', '{}', '{}', '{}', now(), NULLIF('` + attemptID + `', ''), NULLIF('` + orderID + `', ''))`
}

func rowOrder(id, checkoutID, attemptID string) string {
	return `INSERT INTO orders.orders (tenant_id, id, checkout_id, label, payment_attempt_id, base_url, currency, total, status, snapshot)
	 VALUES ($1, '` + id + `', '` + checkoutID + `', '#` + id + `', '` + attemptID + `', 'http://x', 'BRL', 13480, 'processing', '{}')`
}

// rowAttempt is a sandbox attempt of 13480 by handler; txid, e2e and
// chargeID are SQL (NULL or a quoted literal).
func rowAttempt(id, checkoutID, handler, status, txid, e2e, chargeID string) string {
	return `INSERT INTO payments.attempts (tenant_id, id, checkout_id, handler_id, handler_name, environment, amount, currency, status, request_hash, txid, e2e_id, charge_id)
	 VALUES ($1, '` + id + `', '` + checkoutID + `', '` + handler + `', 'x', 'sandbox', 13480, 'BRL', '` + status + `', '\x` + strings.Repeat("00", 32) + `', ` + txid + `, ` + e2e + `, ` + chargeID + `)`
}

// rowIntent is a PaymentIntent of 13480 at the simulator with the
// attempt's id as idempotency key, refunded in part or not at all.
func rowIntent(id, key, status string, refunded int) string {
	received := "0"
	if status == "succeeded" {
		received = "13480"
	}
	return `INSERT INTO pspsim.card_intents (tenant_id, id, idempotency_key, client_secret, amount, currency, status, capture_method, payment_method_types,
	   amount_received, amount_refunded, created_at, updated_at)
	 VALUES ($1, '` + id + `', '` + key + `', '` + id + `_secret_x', 13480, 'brl', '` + status + `', 'automatic', '{card}', ` + received + `, ` + strconv.Itoa(refunded) + `, now(), now())`
}

// rowPix is a Pix of R$ 134,80 received at the simulator for txid.
func rowPix(e2e, txid string) string {
	return `INSERT INTO pspsim.pix (tenant_id, e2e_id, txid, chave, valor, horario, via_cob) VALUES ($1, '` + e2e + `', '` + txid + `', 'chave-pix', '134.80', now(), true)`
}

// rowDevolucao is a devolução of all of the Pix e2e.
func rowDevolucao(e2e, id, status string) string {
	return `INSERT INTO pspsim.refunds (tenant_id, e2e_id, id, rtr_id, valor, natureza, status, solicitacao)
	 VALUES ($1, '` + e2e + `', '` + id + `', '` + e2eID("D"+id) + `', '134.80', 'ORIGINAL', '` + status + `', now())`
}

// piID, hexTxid and e2eID pad a name into a PaymentIntent id, a txid as
// the payments service makes them, and an endToEndId.
func piID(s string) string    { return "pi_" + s + strings.Repeat("0", 24-len(s)) }
func hexTxid(c string) string { return strings.Repeat(c, 32) }
func e2eID(s string) string   { return s + strings.Repeat("0", 32-len(s)) }
