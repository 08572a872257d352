package edge

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// toolMetrics count every operation either binding ran (an MCP tools/call
// or a REST request of the same operation), by tool, binding, tenant and
// outcome, and time them by tool and binding. Outcomes:
//
//	ok              a resource came back
//	business_error  an error_response payload (not found, out of stock,
//	                capabilities incompatible: the agent's to handle)
//	rejected        not processed, the caller's fault (invalid params,
//	                rate limited, discovery failed: a 4xx / JSON-RPC error)
//	failed          not processed, the platform's fault (a 5xx: a service
//	                unavailable or an internal error)
//
// The tenant label is the merchant's id: the platform's merchants are
// counted in hundreds, like bcp_rate_limited_total's.
type toolMetrics struct {
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newToolMetrics(reg prometheus.Registerer) *toolMetrics {
	m := &toolMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_tool_calls_total",
			Help: "Agent operations (MCP tool calls and their REST equivalents) by tool, binding (mcp, rest), tenant id and outcome (ok, business_error, rejected, failed).",
		}, []string{"tool", "binding", "tenant", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bcp_tool_call_duration_seconds",
			Help:    "Duration of agent operations at the edge, by tool and binding.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tool", "binding"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.seconds)
	}
	return m
}

// observe records one operation run returned (out, err) for, started at
// start.
func (m *toolMetrics) observe(ctx context.Context, req opRequest, start time.Time, out *json.RawMessage, err *error) {
	if m == nil {
		return
	}
	outcome := "ok"
	var pe *protoError
	switch {
	case *err == nil && isErrorEnvelope(*out):
		outcome = "business_error"
	case *err == nil:
	case errors.As(*err, &pe) && pe.status < 500:
		outcome = "rejected"
	default:
		outcome = "failed"
	}
	m.calls.WithLabelValues(req.op.name, string(req.binding), tenantFrom(ctx).GetId(), outcome).Inc()
	m.seconds.WithLabelValues(req.op.name, string(req.binding)).Observe(time.Since(start).Seconds())
}
