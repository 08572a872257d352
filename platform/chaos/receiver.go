package chaos

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// receiver is the agent platform's order webhook endpoint. It fails a
// share of first deliveries (each Webhook-Id's first attempt) and
// everything during outages, and records what it accepted.
type receiver struct {
	srv       *http.Server
	url       string
	failFirst float64

	mu        sync.Mutex
	rng       *rand.Rand
	downUntil time.Time
	seen      map[string]int    // Webhook-Id → attempts received
	delivered map[string]string // Webhook-Id → order id, accepted
	orders    map[string]int    // order id → accepted deliveries
	refused   int
}

func newReceiver(seed uint64, failFirst float64) (*receiver, error) {
	r := &receiver{failFirst: failFirst, rng: rand.New(rand.NewPCG(seed, 7)),
		seen: map[string]int{}, delivered: map[string]string{}, orders: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.url = "http://" + ln.Addr().String() + "/orders"
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id := req.Header.Get("Webhook-Id")
	var o struct {
		ID string `json:"id"`
	}
	if req.Method != http.MethodPost || id == "" || json.Unmarshal(body, &o) != nil || o.ID == "" {
		http.Error(w, "not an order webhook", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.seen[id]++
	fail := time.Now().Before(r.downUntil) || (r.seen[id] == 1 && r.rng.Float64() < r.failFirst)
	if fail {
		r.refused++
	} else {
		if _, dup := r.delivered[id]; !dup {
			r.orders[o.ID]++
		}
		r.delivered[id] = o.ID
	}
	r.mu.Unlock()
	if fail {
		http.Error(w, "receiver unavailable (chaos)", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// outage refuses every delivery for d.
func (r *receiver) outage(d time.Duration) {
	r.mu.Lock()
	r.downUntil = time.Now().Add(d)
	r.mu.Unlock()
}

func (r *receiver) stats() (accepted, refused, orders int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delivered), r.refused, len(r.orders)
}

func (r *receiver) hasOrder(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.orders[id] > 0
}
