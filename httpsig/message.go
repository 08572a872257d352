package httpsig

import (
	"net/http"
	"strconv"
	"strings"
)

// message is the view of an HTTP request or response that component values
// are derived from. Building it once keeps the derivation rules in one place
// and lets a response refer to its request (the req parameter).
type message struct {
	response bool
	status   int // responses only

	// Request properties (RFC 9421 §2.2). For a response they stay empty and
	// req points at the request the response answers, if known.
	method        string
	scheme        string
	authority     string // as received; normalised on use
	path          string // escaped, "" means "/"
	rawQuery      string
	hasQuery      bool
	requestTarget string
	contentLength int64 // request ContentLength, -1 if unknown

	header http.Header
	req    *message
}

// requestMessage describes r. scheme, when non-empty, overrides the scheme
// the request arrived with; a server behind a TLS-terminating proxy needs
// that to rebuild @scheme and @target-uri as the client saw them.
func requestMessage(r *http.Request, scheme string) (*message, error) {
	if r == nil || r.URL == nil {
		return nil, errorf(ErrMalformed, "nil request or request URL")
	}
	m := &message{
		method:        r.Method,
		header:        r.Header,
		rawQuery:      r.URL.RawQuery,
		hasQuery:      r.URL.RawQuery != "" || r.URL.ForceQuery,
		path:          r.URL.EscapedPath(),
		contentLength: r.ContentLength,
	}
	if m.method == "" {
		m.method = http.MethodGet // net/http treats "" as GET on the wire
	}
	switch {
	case scheme != "":
		m.scheme = scheme
	case r.URL.Scheme != "":
		m.scheme = r.URL.Scheme
	case r.TLS != nil:
		m.scheme = "https"
	default:
		m.scheme = "http"
	}
	m.scheme = strings.ToLower(m.scheme)
	m.authority = r.Host
	if m.authority == "" {
		m.authority = r.URL.Host
	}
	// Server requests carry the request-target exactly as received; client
	// requests have it computed the way net/http will write it.
	m.requestTarget = r.RequestURI
	if m.requestTarget == "" {
		m.requestTarget = r.URL.RequestURI()
	}
	return m, nil
}

// responseMessage describes a response; req may be nil when no component
// uses the req parameter.
func responseMessage(h http.Header, status int, req *message) *message {
	return &message{response: true, status: status, header: h, req: req, contentLength: -1}
}

// headerValues returns the field lines for a lower-case field name. Go
// canonicalises header keys, but a hand-built http.Header may use the
// lower-case form (as HTTP/2 does on the wire), so both are consulted.
func (m *message) headerValues(name string) ([]string, bool) {
	if v, ok := m.header[http.CanonicalHeaderKey(name)]; ok && len(v) > 0 {
		return v, true
	}
	if v, ok := m.header[name]; ok && len(v) > 0 {
		return v, true
	}
	if m.response {
		return nil, false
	}
	// net/http moves these out of Header and into Request fields; restore
	// them so that covering them works on both client and server side.
	switch name {
	case "host":
		if m.authority != "" {
			return []string{m.authority}, true
		}
	case "content-length":
		if m.contentLength > 0 {
			return []string{strconv.FormatInt(m.contentLength, 10)}, true
		}
	}
	return nil, false
}
