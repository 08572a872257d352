package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// Migration 00053: a session's row keeps its documents in the row (every
// variable column MAIN: compressed, never moved to the TOAST table below
// a page), and a key can keep its answer by naming the completed checkout
// (answer_checkout) instead of a copy; going down gives every such key its
// copy back, in protobuf, byte for byte what the service stored before.
func TestSessionDocumentsInline(t *testing.T) {
	ctx := context.Background()
	conn, p := migrated(t)
	storage := func() map[string]string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT attname || '=' || attstorage::text FROM pg_attribute
			WHERE attrelid = 'checkout.sessions'::regclass AND attnum > 0 AND NOT attisdropped AND attlen = -1`)
		if err != nil {
			t.Fatal(err)
		}
		kvs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}
	cols := storage()
	if len(cols) != 16 {
		t.Errorf("%d variable-length columns in checkout.sessions, want 16: %v", len(cols), cols)
	}
	for col, s := range cols {
		if s != "m" {
			t.Errorf("checkout.sessions.%s storage %q, want m (MAIN)", col, s)
		}
	}

	// A 2.6 KB state lz4 cannot shrink (hex digits) with a completion's
	// columns: the row stays whole in its page, the TOAST table empty
	// (before 00053 the state went to the TOAST table: checked below).
	tenant := uuid.New()
	insert := func(id string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities, request, state, expires_at,
			payment_attempt_id, order_webhook_url, base_url, settle_owner, complete_key)
			SELECT $1, $2, 'complete_in_progress', 'BRL', 100, 'https://agent.example/profile.json', '{a,b,c}', '{"line_items":[]}',
			  json_build_object('id', $2::text, 'blob', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 80) g)), now() + interval '1 hour',
			  'pay_1', '', 'https://loja.example', 'owner-1', '{"key": "k", "held": true, "scope": "mcp p complete_checkout", "token": "idk_1"}'`, tenant, id); err != nil {
			t.Fatal(err)
		}
	}
	toasted := func(id string) (rows, width int64) {
		t.Helper()
		var toast string
		if err := conn.QueryRow(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'checkout.sessions'::regclass`).Scan(&toast); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+toast+`), (SELECT pg_column_size(s.*) FROM checkout.sessions s WHERE id = $1)`, id).Scan(&rows, &width); err != nil {
			t.Fatal(err)
		}
		return rows, width
	}
	insert("chk_1")
	if rows, width := toasted("chk_1"); rows != 0 || width < 2600 {
		t.Errorf("%d TOAST rows, a row of %d bytes; want none and the whole row (> 2600 bytes) in the page", rows, width)
	}

	// The completed checkout answers its key by reference; down makes it
	// the CheckoutResult the service would have stored.
	if _, err := conn.Exec(ctx, `UPDATE checkout.sessions SET status = 'completed', settle_owner = NULL, complete_key = NULL,
		state = '{"id":"chk_1","status":"completed","note":"São Paulo"}' WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO checkout.idempotency_keys (tenant_id, scope, key, request_hash, state, claim_token, created_at, expires_at)
		VALUES ($1, 'mcp p complete_checkout', 'k', sha256('r'), 'in_flight', 'idk_1', now(), now() + interval '48 hours')`, tenant); err != nil {
		t.Fatal(err)
	}
	var kept bool
	if err := conn.QueryRow(ctx, `SELECT checkout.keep_key($1, '{"key": "k", "held": true, "scope": "mcp p complete_checkout", "token": "idk_1", "answer": "chk_1"}', NULL, true)`,
		tenant).Scan(&kept); err != nil || !kept {
		t.Fatalf("keep_key by reference: %v %v", kept, err)
	}
	var state, answer string
	var response []byte
	if err := conn.QueryRow(ctx, `SELECT state, response, coalesce(answer_checkout, '') FROM checkout.idempotency_keys WHERE tenant_id = $1`, tenant).Scan(&state, &response, &answer); err != nil {
		t.Fatal(err)
	}
	if state != "answered" || response != nil || answer != "chk_1" {
		t.Fatalf("key %s, response %x, answer %q; want answered, none, chk_1", state, response, answer)
	}

	if _, err := p.DownTo(ctx, 52); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT state, response FROM checkout.idempotency_keys WHERE tenant_id = $1`, tenant).Scan(&state, &response); err != nil {
		t.Fatal(err)
	}
	want, _ := proto.Marshal(&checkoutv1.CheckoutResult{CheckoutJson: []byte(`{"id":"chk_1","status":"completed","note":"São Paulo"}`), Status: "completed"})
	if state != "done" || string(response) != string(want) {
		t.Errorf("after down: key %s, response %x; want done, %x", state, response, want)
	}
	for col, s := range storage() {
		if s != "x" {
			t.Errorf("after down, checkout.sessions.%s storage %q, want x (EXTENDED)", col, s)
		}
	}
	insert("chk_2")
	if rows, _ := toasted("chk_2"); rows == 0 {
		t.Errorf("before 00053: no TOAST rows; want the state out of line")
	}
	var fn string
	if err := conn.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = 'checkout.keep_key'::regproc`).Scan(&fn); err != nil || strings.Contains(fn, "answer") {
		t.Errorf("after down, keep_key still knows answers (%v)", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if cols := storage(); !slices.Equal([]string{cols["state"], cols["request"]}, []string{"m", "m"}) {
		t.Errorf("up again: %v", cols)
	}
}
