package checkout

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// inFlight exports, at each scrape, every tenant's completions in flight
// (sessions complete_in_progress): how many, how many the settle sweep is
// due to settle, and how long past due the oldest of those is. A Pix
// waiting for the buyer is in flight and not due; a completion past due
// for minutes is stuck (the sweeps are not running, or a settle keeps
// failing): the alert CheckoutsStuckCompleteInProgress
// (deploy/prometheus/bcp-alerts.yml). Every checkout process reports the
// same figures: the database's.
type inFlight struct{ st store }

var (
	inFlightSessions = prometheus.NewDesc("bcp_checkout_complete_in_progress",
		"Checkouts in complete_in_progress (a payment in flight), every tenant's.", nil, nil)
	inFlightDue = prometheus.NewDesc("bcp_checkout_complete_in_progress_due",
		"Checkouts in complete_in_progress whose settle time has passed: the settle sweep is due to settle them.", nil, nil)
	inFlightOverdue = prometheus.NewDesc("bcp_checkout_complete_in_progress_overdue_seconds",
		"How long past its settle time the most overdue checkout in complete_in_progress is (0: none due).", nil, nil)
	inFlightUp = prometheus.NewDesc("bcp_checkout_complete_in_progress_scrape_ok",
		"1 when the completions in flight could be counted at this scrape, 0 when the database did not answer within 2 s.", nil, nil)
)

func (inFlight) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{inFlightSessions, inFlightDue, inFlightOverdue, inFlightUp} {
		ch <- d
	}
}

func (c inFlight) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var row checkoutdb.CompletionsInFlightRow
	err := pgstore.InCheckoutSweep(ctx, c.st.pool, func(tx pgx.Tx) error {
		var err error
		row, err = checkoutdb.New(tx).CompletionsInFlight(ctx)
		return err
	})
	if err != nil {
		ch <- prometheus.MustNewConstMetric(inFlightUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(inFlightUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(inFlightSessions, prometheus.GaugeValue, float64(row.InProgress))
	ch <- prometheus.MustNewConstMetric(inFlightDue, prometheus.GaugeValue, float64(row.Due))
	ch <- prometheus.MustNewConstMetric(inFlightOverdue, prometheus.GaugeValue, row.OverdueSeconds)
}
