package agentprofile

import (
	"net/netip"
	"syscall"
)

// GuardedDialControl returns the fetcher's dial-time SSRF guard for use as
// net.Dialer.Control by other clients that connect to addresses agents
// choose (the orders service's webhook deliveries). It refuses anything
// but TCP and, unless allowPrivate (development tenants), every
// special-use address, checked on the resolved address right before
// connect(2) so DNS rebinding cannot slip past it. Pair it with a
// transport that has no proxy and no other dial hooks.
func GuardedDialControl(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return dialControl(allowPrivate)
}

// IsSpecialUseAddress reports whether a production client must refuse to
// connect to ip (loopback, private, link-local, metadata, reserved ...),
// for a clear error on URLs that name such an address literally.
func IsSpecialUseAddress(ip netip.Addr) bool { return isForbiddenIP(ip) }
