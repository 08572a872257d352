package orders

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/jobs"
)

// webhookBacklog exports, at each scrape, the order webhooks not delivered
// yet (their durable jobs, every tenant's) by state, and how long the
// longest-waiting due one has waited for a worker: the alert
// OrderWebhookBacklog (deploy/prometheus/bcp-alerts.yml). Retryable ones
// wait for a receiver that failed; available ones for this platform.
// Every orders process reports the same figures: the database's.
type webhookBacklog struct{ pool *pgxpool.Pool }

var (
	backlogJobs = prometheus.NewDesc("bcp_order_webhooks_pending",
		"Order webhook deliveries not finished, by state: available (due, waiting for a worker), running, retryable (waiting to retry a failed delivery), scheduled.", []string{"state"}, nil)
	backlogOldest = prometheus.NewDesc("bcp_order_webhooks_oldest_due_seconds",
		"How long the longest-waiting due order webhook delivery has waited for a worker (0: none waiting).", nil, nil)
	backlogUp = prometheus.NewDesc("bcp_order_webhooks_scrape_ok",
		"1 when the order webhook backlog could be read at this scrape, 0 when the database did not answer within 2 s.", nil, nil)
)

func (webhookBacklog) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogJobs
	ch <- backlogOldest
	ch <- backlogUp
}

func (c webhookBacklog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := jobs.BacklogOf(ctx, c.pool, WebhookArgs{}.Kind())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(backlogUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(backlogUp, prometheus.GaugeValue, 1)
	for state, n := range b.ByState {
		ch <- prometheus.MustNewConstMetric(backlogJobs, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(backlogOldest, prometheus.GaugeValue, b.OldestDue.Seconds())
}
