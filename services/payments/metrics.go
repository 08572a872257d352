package payments

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

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
	// pspCalls and pspSeconds are every HTTP exchange with a PSP or card
	// processor; pspUnusable the payments refused because a handler
	// cannot reach its PSP (by diagnosis code).
	pspCalls    *prometheus.CounterVec
	pspSeconds  *prometheus.HistogramVec
	pspUnusable *prometheus.CounterVec
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
		pspCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_psp_requests_total",
			Help: "HTTP requests to PSPs and card processors, by kind (pix, card), operation (cob.put, token, ...) and HTTP status (0: no answer).",
		}, []string{"kind", "op", "status"}),
		pspSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bcp_psp_request_duration_seconds",
			Help:    "Duration of HTTP requests to PSPs and card processors, by kind and operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"kind", "op"}),
		pspUnusable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_payment_psp_unusable_total",
			Help: "Payments refused because the handler cannot reach its PSP or processor, by kind and diagnosis (invalid_client, tls_client_rejected, not_configured, ...).",
		}, []string{"kind", "code"}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.webhooks, m.refunds, m.alerts, m.autoRefunds, m.pspCalls, m.pspSeconds, m.pspUnusable)
	}
	return m
}

func (m *metrics) observePSP(kind, op string, status int, d time.Duration) {
	m.pspCalls.WithLabelValues(kind, op, strconv.Itoa(status)).Inc()
	m.pspSeconds.WithLabelValues(kind, op).Observe(d.Seconds())
}

func kindOf(a attempt) string {
	if a.Txid != nil {
		return "pix"
	}
	return "card"
}
