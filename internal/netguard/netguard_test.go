package netguard

import (
	"net/netip"
	"testing"
)

func TestIsForbiddenIP(t *testing.T) {
	cases := []struct {
		ip        string
		forbidden bool
	}{
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"172.16.0.1", true},
		{"172.31.255.254", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"fe80::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"100.64.0.1", true},
		{"100.127.255.254", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"198.18.0.1", true},
		{"192.0.2.1", true},
		{"192.0.0.8", true},
		{"fec0::1", true},
		{"2001:db8::1", true},
		{"2002:7f00:1::1", true},   // 6to4 around 127.0.0.1
		{"::ffff:127.0.0.1", true}, // IPv4-mapped
		{"::ffff:169.254.169.254", true},
		{"::7f00:1", true},           // IPv4-compatible
		{"64:ff9b::7f00:1", true},    // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", true},     // NAT64 of 10.0.0.1
		{"64:ff9b:1::808:808", true}, // local-use NAT64
		{"100::1", true},             // discard-only
		{"2001::1", true},            // Teredo

		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"172.32.0.1", false},
		{"100.128.0.1", false},
		{"2001:4860::8888", false},
		{"2606:4700:4700::1111", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"::ffff:8.8.8.8", false},
	}
	for _, c := range cases {
		if got := IsForbidden(netip.MustParseAddr(c.ip)); got != c.forbidden {
			t.Errorf("IsForbidden(%s) = %v, want %v", c.ip, got, c.forbidden)
		}
	}
	if !IsForbidden(netip.Addr{}) {
		t.Error("the zero Addr must be forbidden")
	}
	if !IsForbidden(netip.MustParseAddr("fe80::1%eth0")) {
		t.Error("zoned link-local must be forbidden")
	}
}

func TestDialControl(t *testing.T) {
	prod, dev := DialControl(false), DialControl(true)
	cases := []struct {
		network, address string
		prodOK, devOK    bool
	}{
		{"tcp4", "127.0.0.1:443", false, true},
		{"tcp6", "[::1]:443", false, true},
		{"tcp4", "10.1.2.3:8443", false, true},
		{"tcp4", "169.254.169.254:80", false, true},
		{"tcp6", "[fe80::1%eth0]:443", false, true},
		{"tcp4", "8.8.8.8:443", true, true},
		{"tcp6", "[2001:4860::8888]:443", true, true},
		{"udp4", "8.8.8.8:53", false, false},
		{"tcp4", "not-an-address", false, false},
	}
	for _, c := range cases {
		if err := prod(c.network, c.address, nil); (err == nil) != c.prodOK {
			t.Errorf("prod %s %s: %v", c.network, c.address, err)
		}
		if err := dev(c.network, c.address, nil); (err == nil) != c.devOK {
			t.Errorf("dev %s %s: %v", c.network, c.address, err)
		}
	}
}
