package obs

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Metrics are the HTTP RED metrics of one listener.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_http_requests_total",
			Help: "HTTP requests by listener, route pattern and outcome class.",
		}, []string{"listener", "route", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bcp_http_request_duration_seconds",
			Help:    "HTTP request latency by listener and route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"listener", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Middleware assigns a request id (honouring a well-formed incoming
// Request-Id or X-Request-Id), echoes it, records metrics under the route
// pattern the mux matched (bounded cardinality), and logs failures.
func (m *Metrics) Middleware(listener string, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("Request-Id")
		if id == "" {
			id = r.Header.Get("X-Request-Id")
		}
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("Request-Id", id)
		r = r.WithContext(WithRequestID(r.Context(), id))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		outcome := strconv.Itoa(sw.status/100) + "xx"
		if sp := trace.SpanFromContext(r.Context()); sp.IsRecording() {
			// The listener's server span (internal/tracing), named by the
			// route rather than the path, which may hold ids or tokens.
			sp.SetName(listener + " " + route)
			sp.SetAttributes(attribute.String("http.route", route))
		}
		m.requests.WithLabelValues(listener, route, outcome).Inc()
		m.latency.WithLabelValues(listener, route).Observe(time.Since(start).Seconds())
		if sw.status >= 500 {
			log.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", route, "status", sw.status, "duration_ms", time.Since(start).Milliseconds())
		}
	})
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush lets streaming handlers (connect server streams) flush.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
