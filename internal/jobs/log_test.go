package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// river's info lines (job counts, maintenance runs) are dropped; its
// warnings and errors reach the platform's log with their attributes.
func TestRiverLogsWarningsOnly(t *testing.T) {
	var buf bytes.Buffer
	log := warnAndAbove(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.Info("producer: Producer job counts", "num_completed_jobs", 3)
	log.With("component", "river").Warn("job failed", "kind", "checkout_sweep")
	log.Error("leader election failed")
	got := buf.String()
	if strings.Contains(got, "Producer job counts") {
		t.Fatalf("info line passed:\n%s", got)
	}
	if !strings.Contains(got, "msg=\"job failed\" component=river kind=checkout_sweep") || !strings.Contains(got, "leader election failed") {
		t.Fatalf("warning or error missing:\n%s", got)
	}
}
