package edge

import (
	"net/http"
	"net/url"
	"slices"
)

// checkOrigin guards /bcp/mcp as the MCP streamable-HTTP transport
// requires (servers MUST validate Origin, 403 when invalid): a browser
// page on another site must not drive an agent's MCP session through the
// visitor's browser (DNS rebinding, cross-site requests riding local
// credentials). Agents talking server to server send no Origin and are
// served. An Origin is allowed when it is an http(s) origin on one of the
// merchant's own domains (any port: the merchant's pages may be served on
// a non-default one); "null" (sandboxed frames, file:) and every other
// site are refused.
func (e *Edge) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origins := r.Header.Values("Origin")
		if len(origins) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if len(origins) == 1 && originAllowed(origins[0], tenantFrom(r.Context()).GetDomains()) {
			next.ServeHTTP(w, r)
			return
		}
		writeMCPError(w, r, http.StatusForbidden, codeProtocol, "origin_not_allowed",
			"requests from this browser origin are not allowed; agents calling from a server send no Origin")
	})
}

func originAllowed(origin string, domains []string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	host := normalizeHost(u.Host)
	return slices.ContainsFunc(domains, func(d string) bool { return normalizeHost(d) == host })
}
