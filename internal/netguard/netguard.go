// Package netguard keeps clients that connect to addresses agents choose
// (the agent-profile fetcher, order webhook deliveries) off the
// platform's own networks: special-use addresses are refused on the
// resolved address, right before connect(2).
package netguard

import (
	"errors"
	"net/netip"
	"syscall"
)

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

// IsForbidden reports whether a production client must refuse to connect
// to ip (loopback, private, link-local, metadata, reserved ...).
func IsForbidden(ip netip.Addr) bool {
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
		return IsForbidden(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
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

// ErrForbiddenAddress is returned by the dialer guard.
var ErrForbiddenAddress = errors.New("netguard: refusing to connect to a special-use address")

// DialControl is a net.Dialer.Control that refuses anything but TCP and,
// unless allowPrivate (development tenants), every special-use address.
// It runs after DNS resolution, immediately before connect(2),
// with the exact address the socket is about to reach. Checking here, and
// not on a separate lookup beforehand, is what defeats DNS rebinding (a
// name that resolves to a public address for the check and to 127.0.0.1
// for the connection). Only TCP is allowed.
func DialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if network != "tcp4" && network != "tcp6" {
			return ErrForbiddenAddress
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return ErrForbiddenAddress
		}
		if allowPrivate {
			return nil
		}
		if IsForbidden(ap.Addr()) {
			return ErrForbiddenAddress
		}
		return nil
	}
}
