package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// A checkout's expiry is a durable job inserted with the session and
// scheduled at expires_at; when it runs, the open session is canceled
// without anyone reading it.
func TestCheckoutExpiryJob(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja Expira", "expira.localhost", 0)
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment")))
	}))
	t.Cleanup(profiles.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, s: agentSession(t, r, m.host, profiles.URL+"/agent.json"), profile: profiles.URL + "/agent.json", v: v}
	_, c := a.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var scheduled time.Time
	var state string
	err = conn.QueryRow(ctx, `SELECT scheduled_at, state FROM river.river_job WHERE kind = 'checkout_expire' AND args->>'checkout_id' = $1`, c.ID).Scan(&scheduled, &state)
	if err != nil {
		t.Fatalf("no expiry job for %s: %v", c.ID, err)
	}
	if !scheduled.Equal(*c.ExpiresAt) || state != "scheduled" {
		t.Fatalf("expiry job scheduled at %s (%s), want %s (scheduled)", scheduled, state, c.ExpiresAt)
	}
	if c.ExpiresAt.Sub(time.Now()) < 5*time.Hour {
		t.Fatalf("default lifetime: expires_at %s is not ~6 h ahead", c.ExpiresAt)
	}
	// Move the clock of this one session and its job into the past.
	if _, err := conn.Exec(ctx, `UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE river.river_job SET scheduled_at = now() WHERE kind = 'checkout_expire' AND args->>'checkout_id' = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the expiry job cancels the session", func() bool {
		var status string
		_ = conn.QueryRow(ctx, `SELECT status FROM checkout.sessions WHERE id = $1`, c.ID).Scan(&status)
		return status == bcp.StatusCanceled
	})
	_, got := a.call("get_checkout", map[string]any{"id": c.ID})
	if got.Status != bcp.StatusCanceled || got.ContinueURL != "" {
		t.Fatalf("after expiry: %s, continue_url %q", got.Status, got.ContinueURL)
	}
}
