package agentprofile

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/bcpdev/bcp/internal/netguard"
)

// MaxURLLength bounds profile URLs. Real profile URLs are short; the bound
// keeps attacker-chosen cache keys and log lines small.
const MaxURLLength = 2048

// checkURL is the syntactic gate before anything is fetched or cached
// (digest §2.6: reject non-HTTPS; §2.4: the profile is an absolute URL).
// dev tenants may use http. Literal special-use IPs are refused here for a
// clear error; host names are checked where it matters, at dial time.
func checkURL(raw string, dev bool) *Error {
	bad := func(msg string) *Error { return &Error{Code: CodeInvalidProfileURL, Message: msg} }
	if raw == "" {
		return bad("profile URL is missing")
	}
	if len(raw) > MaxURLLength {
		return bad("profile URL is longer than 2048 bytes")
	}
	if strings.ContainsRune(raw, '#') {
		return bad("profile URL must not carry a fragment")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &Error{Code: CodeInvalidProfileURL, Message: "profile URL does not parse", Err: err}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && dev:
	case u.Scheme == "http":
		return bad("profile URL must use https")
	case u.Scheme == "":
		return bad("profile URL must be absolute")
	default:
		return bad("profile URL must use https")
	}
	if u.Opaque != "" || u.Host == "" {
		return bad("profile URL must be absolute (scheme://host/path)")
	}
	if u.User != nil {
		return bad("profile URL must not carry user information")
	}
	host := u.Hostname()
	if host == "" {
		return bad("profile URL has no host")
	}
	if p := u.Port(); p != "" && (len(p) > 5 || p == "0" || !allDigits(p) || atoi(p) > 65535) {
		return bad("profile URL has an invalid port")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return bad("profile URL must not use a zoned IPv6 address")
		}
		if !dev && netguard.IsForbidden(ip) {
			return bad("profile URL points at a special-use address")
		}
	}
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
