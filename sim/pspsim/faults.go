package pspsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FaultSettings are the simulator's fault knobs. Shares are in [0, 1]:
// the fraction of calls (or deliveries) that get the fault.
type FaultSettings struct {
	// Latency is added to a LatencyShare of API Pix calls (all of them
	// when the share is not given).
	Latency      Duration `json:"latency"`
	LatencyShare float64  `json:"latency_share"`
	// Error5xx: answered 503 ServicoIndisponivel before anything is done.
	Error5xx float64 `json:"error5xx"`
	// ResetAfterWrite: a PUT or PATCH is applied and committed, then the
	// connection is cut without an answer.
	ResetAfterWrite float64 `json:"reset_after_write"`
	// DropWebhook: a delivery is marked done without being sent.
	DropWebhook float64 `json:"drop_webhook"`
	// DuplicateWebhook: a delivery is sent twice.
	DuplicateWebhook float64 `json:"duplicate_webhook"`
	// DelayWebhook: a delivery is held back WebhookDelay (default 5 s)
	// before its first try: late, and after deliveries made later.
	DelayWebhook float64  `json:"delay_webhook"`
	WebhookDelay Duration `json:"webhook_delay"`
	// RefundRejected: a devolução ends NAO_REALIZADO instead of DEVOLVIDO.
	RefundRejected float64 `json:"refund_rejected"`
}

// Fault kinds, as counted.
const (
	FaultLatency          = "latency"
	FaultError5xx         = "error5xx"
	FaultResetAfterWrite  = "reset_after_write"
	FaultDropWebhook      = "drop_webhook"
	FaultDuplicateWebhook = "duplicate_webhook"
	FaultDelayWebhook     = "delay_webhook"
	FaultRefundRejected   = "refund_rejected"
)

var faultKinds = []string{FaultLatency, FaultError5xx, FaultResetAfterWrite, FaultDropWebhook, FaultDuplicateWebhook, FaultDelayWebhook, FaultRefundRejected}

// defaultWebhookDelay holds back a delayed delivery when no delay is given.
const defaultWebhookDelay = 5 * time.Second

// Duration is a time.Duration written as in Go ("200ms", "5s") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`a duration is a string such as "200ms" or "5s"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// ParseFaults reads settings written as "key=value" pairs separated by
// commas, e.g. "error5xx=0.1,latency=200ms,reset_after_write=0.05,
// drop_webhook=0.1,duplicate_webhook=0.1,delay_webhook=0.2,webhook_delay=5s".
// Keys are the JSON names of FaultSettings; "" is no faults.
func ParseFaults(spec string) (FaultSettings, error) {
	var f FaultSettings
	seen := map[string]bool{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return FaultSettings{}, fmt.Errorf("pspsim: fault %q: want key=value", part)
		}
		seen[k] = true
		var err error
		switch k {
		case "latency":
			err = parseDuration(v, &f.Latency)
		case "webhook_delay":
			err = parseDuration(v, &f.WebhookDelay)
		case "latency_share":
			f.LatencyShare, err = strconv.ParseFloat(v, 64)
		case "error5xx":
			f.Error5xx, err = strconv.ParseFloat(v, 64)
		case "reset_after_write":
			f.ResetAfterWrite, err = strconv.ParseFloat(v, 64)
		case "drop_webhook":
			f.DropWebhook, err = strconv.ParseFloat(v, 64)
		case "duplicate_webhook":
			f.DuplicateWebhook, err = strconv.ParseFloat(v, 64)
		case "delay_webhook":
			f.DelayWebhook, err = strconv.ParseFloat(v, 64)
		case "refund_rejected":
			f.RefundRejected, err = strconv.ParseFloat(v, 64)
		default:
			return FaultSettings{}, fmt.Errorf("pspsim: unknown fault %q (known: latency, latency_share, error5xx, reset_after_write, drop_webhook, duplicate_webhook, delay_webhook, webhook_delay, refund_rejected)", k)
		}
		if err != nil {
			return FaultSettings{}, fmt.Errorf("pspsim: fault %s=%s: %v", k, v, err)
		}
	}
	f.defaults(seen["latency_share"], seen["webhook_delay"])
	return f, f.validate()
}

func parseDuration(v string, d *Duration) error {
	t, err := time.ParseDuration(v)
	*d = Duration(t)
	return err
}

// defaults fills what was not given: latency applies to every call, a
// delayed delivery waits defaultWebhookDelay.
func (f *FaultSettings) defaults(shareGiven, delayGiven bool) {
	if !shareGiven && f.Latency > 0 {
		f.LatencyShare = 1
	}
	if !delayGiven && f.DelayWebhook > 0 {
		f.WebhookDelay = Duration(defaultWebhookDelay)
	}
}

func (f FaultSettings) validate() error {
	for _, s := range []struct {
		name string
		v    float64
	}{{"latency_share", f.LatencyShare}, {"error5xx", f.Error5xx}, {"reset_after_write", f.ResetAfterWrite},
		{"drop_webhook", f.DropWebhook}, {"duplicate_webhook", f.DuplicateWebhook}, {"delay_webhook", f.DelayWebhook},
		{"refund_rejected", f.RefundRejected}} {
		if !(s.v >= 0 && s.v <= 1) {
			return fmt.Errorf("pspsim: fault %s=%v: a share is between 0 and 1", s.name, s.v)
		}
	}
	if f.Latency < 0 || f.WebhookDelay < 0 {
		return errors.New("pspsim: fault durations cannot be negative")
	}
	return nil
}

// String writes the settings as ParseFaults reads them (only what is set).
func (f FaultSettings) String() string {
	var parts []string
	share := func(k string, v float64) {
		if v > 0 {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if f.Latency > 0 {
		parts = append(parts, "latency="+time.Duration(f.Latency).String())
		share("latency_share", f.LatencyShare)
	}
	share("error5xx", f.Error5xx)
	share("reset_after_write", f.ResetAfterWrite)
	share("drop_webhook", f.DropWebhook)
	share("duplicate_webhook", f.DuplicateWebhook)
	share("delay_webhook", f.DelayWebhook)
	if f.DelayWebhook > 0 {
		parts = append(parts, "webhook_delay="+time.Duration(f.WebhookDelay).String())
	}
	share("refund_rejected", f.RefundRejected)
	return strings.Join(parts, ",")
}

// faults holds the current settings and counts the faults injected.
type faults struct {
	mu      sync.RWMutex
	set     FaultSettings
	counts  map[string]*atomic.Int64
	metric  *prometheus.CounterVec
	randomF func() float64
}

func newFaults(set FaultSettings, reg prometheus.Registerer) (*faults, error) {
	f := &faults{set: set, counts: map[string]*atomic.Int64{}, randomF: rand.Float64}
	for _, k := range faultKinds {
		f.counts[k] = new(atomic.Int64)
	}
	if reg != nil {
		m := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_pspsim_faults_total",
			Help: "Faults the PSP simulator injected, by kind.",
		}, []string{"kind"})
		if err := reg.Register(m); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("pspsim: register metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("pspsim: register metrics: %w", err)
			}
			m = existing
		}
		for _, k := range faultKinds {
			m.WithLabelValues(k)
		}
		f.metric = m
	}
	return f, nil
}

func (f *faults) settings() FaultSettings {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.set
}

func (f *faults) replace(set FaultSettings) {
	f.mu.Lock()
	f.set = set
	f.mu.Unlock()
}

// hit draws whether a fault of this share happens, and counts it when it
// does.
func (f *faults) hit(kind string, share float64) bool {
	if share <= 0 || (share < 1 && f.randomF() >= share) {
		return false
	}
	f.counts[kind].Add(1)
	if f.metric != nil {
		f.metric.WithLabelValues(kind).Inc()
	}
	return true
}

// injected is how many faults of each kind were injected so far.
func (f *faults) injected() map[string]int64 {
	out := make(map[string]int64, len(f.counts))
	for k, c := range f.counts {
		out[k] = c.Load()
	}
	return out
}

// api wraps the API Pix routes with the HTTP-level faults.
func (f *faults) api(next http.Handler) http.Handler {
	return f.wrap(next, []string{http.MethodPut, http.MethodPatch}, func(w http.ResponseWriter) {
		writeProblem(w, problemf(tServicoIndisponivel, "Serviço não está disponível no momento (falha simulada)."))
	})
}

// cards wraps the card API (Stripe's shape: writes are POSTs, a failure
// is a 500 api_error) with the same faults.
func (f *faults) cards(next http.Handler) http.Handler {
	return f.wrap(next, []string{http.MethodPost}, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":{"type":"api_error","message":"An unknown error occurred (simulated failure)."}}`))
	})
}

// wrap injects the faults into next: writes are the methods whose
// answer reset_after_write may cut; unavailable answers an error5xx.
func (f *faults) wrap(next http.Handler, writes []string, unavailable func(http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := f.settings()
		if set.Latency > 0 && f.hit(FaultLatency, set.LatencyShare) {
			t := time.NewTimer(time.Duration(set.Latency))
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f.hit(FaultError5xx, set.Error5xx) {
			unavailable(w)
			return
		}
		if slices.Contains(writes, r.Method) && set.ResetAfterWrite > 0 {
			// The answer is held back until it is known to be a success:
			// only a write that was applied is cut.
			buf := &heldResponse{header: http.Header{}}
			next.ServeHTTP(buf, r)
			if buf.status/100 == 2 && f.hit(FaultResetAfterWrite, set.ResetAfterWrite) {
				// Closes the connection (HTTP/1.1) or resets the stream
				// (HTTP/2) without a word; net/http does not log it.
				panic(http.ErrAbortHandler)
			}
			buf.sendTo(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// heldResponse is an answer kept in memory.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(b)
}

func (h *heldResponse) sendTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(max(h.status, http.StatusOK))
	_, _ = w.Write(h.body.Bytes())
}
