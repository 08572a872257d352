package svcauth

import (
	"net/http"
	"strings"
)

// OperatorOnly serves next only to requests bearing the operator token
// (Authorization: Bearer): without a token, or with one that is neither,
// 401; with the internal token, 403. For the internal listener's plain HTTP
// handlers an operator alone may use (the profiles under /debug/pprof/). No
// operator token configured: every request is refused.
func OperatorOnly(tokens Tokens, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case ok && equal(tok, tokens.Operator):
			next.ServeHTTP(w, r)
		case ok && equal(tok, tokens.Internal):
			http.Error(w, "operator token required", http.StatusForbidden)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="bcp operator"`)
			http.Error(w, "operator token required", http.StatusUnauthorized)
		}
	})
}
