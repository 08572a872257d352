package obs

import (
	"net/http"
	"net/http/pprof"
)

// Profiles mounts net/http/pprof's handlers under /debug/pprof/ on mux (the
// internal listener's), each behind guard (the operator token): the index
// and every named profile (heap, goroutine, allocs, block, mutex,
// threadcreate), the CPU profile (?seconds=N), the execution trace, the
// command line and symbol lookup. go tool pprof sends no header, so an
// operator fetches a profile with curl and the token, then opens the file
// (deploy/README.md, "Profiles").
func Profiles(mux *http.ServeMux, guard func(http.Handler) http.Handler) {
	for pattern, h := range map[string]http.HandlerFunc{
		"GET /debug/pprof/":        pprof.Index,
		"GET /debug/pprof/cmdline": pprof.Cmdline,
		"GET /debug/pprof/profile": pprof.Profile,
		"GET /debug/pprof/symbol":  pprof.Symbol,
		"POST /debug/pprof/symbol": pprof.Symbol,
		"GET /debug/pprof/trace":   pprof.Trace,
	} {
		mux.Handle(pattern, guard(h))
	}
}
