package agentprofile

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
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
		if !dev && isForbiddenIP(ip) {
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

// Special-use ranges (RFC 6890 and the IANA special-purpose registries) a
// production fetch must never reach: our own loopback, the cloud metadata
// service (169.254.169.254), the private networks the platform runs in,
// and anything that is not ordinary global unicast.
var forbiddenV4 = mustPrefixes(
	"0.0.0.0/8",       // "this network", incl. 0.0.0.0 (reaches loopback on Linux)
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // CGNAT shared space (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // 6to4 relay anycast
	"192.168.0.0/16",  // RFC 1918
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, incl. broadcast 255.255.255.255
)

// IPv6 is checked as an allowlist (global unicast 2000::/3) minus the
// special blocks inside it, so ::, ::1, fc00::/7, fe80::/10, fec0::/10,
// ff00::/8, 100::/64 and the IPv4-compatible ::/96 fall out automatically.
var (
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	forbiddenV6     = mustPrefixes(
		"2001::/23",     // IETF protocol assignments (Teredo, ORCHID, ...)
		"2001:db8::/32", // documentation
		"2002::/16",     // 6to4: embeds an arbitrary IPv4 address
		"3fff::/20",     // documentation (RFC 9637)
	)
	// NAT64 well-known prefix: on IPv6-only networks every IPv4 host is
	// reached through it, so judge the embedded IPv4 address instead.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// isForbiddenIP reports whether a production fetch must refuse to connect
// to ip.
func isForbiddenIP(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.WithZone("").Unmap() // ::ffff:a.b.c.d is a.b.c.d
	if ip.Is4() {
		for _, p := range forbiddenV4 {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return isForbiddenIP(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !globalUnicastV6.Contains(ip) {
		return true
	}
	for _, p := range forbiddenV6 {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// errForbiddenAddress is returned by the dialer guard.
var errForbiddenAddress = errors.New("agentprofile: refusing to connect to a special-use address")

// dialControl runs after DNS resolution, immediately before connect(2),
// with the exact address the socket is about to reach. Checking here, and
// not on a separate lookup beforehand, is what defeats DNS rebinding (a
// name that resolves to a public address for the check and to 127.0.0.1
// for the connection). Only TCP is allowed.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if network != "tcp4" && network != "tcp6" {
			return errForbiddenAddress
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return errForbiddenAddress
		}
		if allowPrivate {
			return nil
		}
		if isForbiddenIP(ap.Addr()) {
			return errForbiddenAddress
		}
		return nil
	}
}
