package obs

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Check is one readiness probe (e.g. the database answers).
type Check func(ctx context.Context) error

// Health serves /healthz (the process is up) and /readyz (every check
// passes within 2 s) on mux.
func Health(mux *http.ServeMux, checks map[string]Check) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		status, out := http.StatusOK, map[string]string{}
		for name, check := range checks {
			if err := check(ctx); err != nil {
				status, out[name] = http.StatusServiceUnavailable, "failing"
			} else {
				out[name] = "ok"
			}
		}
		writeJSON(w, status, map[string]any{"status": http.StatusText(status), "checks": out})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
