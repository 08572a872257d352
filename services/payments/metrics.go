package payments

import "github.com/prometheus/client_golang/prometheus"

// metrics are the service's Prometheus counters (on the internal
// listener's /metrics when Options.Metrics is the platform's registry).
type metrics struct {
	attempts *prometheus.CounterVec
	webhooks *prometheus.CounterVec
	refunds  *prometheus.CounterVec
	alerts   *prometheus.CounterVec
	// autoRefunds counts money that reached a payment no longer able to
	// keep it (a Pix paid late or to a removed charge, a card approved
	// after its attempt ended, a paid attempt of a checkout that ended
	// without an order), refunded automatically.
	autoRefunds *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_attempt_transitions_total",
			Help: "Payment attempts entering a status, by handler kind (pix, card) and status.",
		}, []string{"kind", "status"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_pix_webhooks_total",
			Help: "Pix webhook calls by result (stored, duplicate, unauthenticated, invalid, unknown_hook).",
		}, []string{"result"}),
		refunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_refunds_total",
			Help: "Refunds reaching a final status, by kind (requested, automatic) and status.",
		}, []string{"kind", "status"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_alerts_total",
			Help: "Merchant payment alerts by kind (pix_wrong_amount, pix_paid_after_expiry, ...).",
		}, []string{"kind"}),
		autoRefunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_automatic_refunds_total",
			Help: "Money refunded automatically because its payment could not keep it, by reason (pix_paid_after_expiry, pix_attempt_not_pending, card_stray_charge, checkout_closed, ...).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.webhooks, m.refunds, m.alerts, m.autoRefunds)
	}
	return m
}

func kindOf(a attempt) string {
	if a.Txid != nil {
		return "pix"
	}
	return "card"
}
