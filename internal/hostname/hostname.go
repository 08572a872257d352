// Package hostname normalises and validates merchant host names. The edge
// and the tenant registry use the same rules, so a domain stored by an
// operator and a Host header sent by an agent meet in one form.
package hostname

import (
	"context"
	"net"
	"strings"
)

// Normalize turns a Host header value into the registry form: port
// stripped, lower-cased, trailing dot removed. It does not validate.
func Normalize(host string) string {
	host = strings.TrimSpace(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	host = strings.ToLower(host)
	return strings.TrimSuffix(host, ".")
}

// Validate reports why a normalised name cannot be a merchant domain, or ""
// when it can: DNS labels of letters, digits and hyphens (internationalised
// names in their xn-- form), at least two labels, no IP addresses.
func Validate(name string) string {
	if name == "" {
		return "domain is empty"
	}
	if len(name) > 253 {
		return "domain is longer than 253 characters"
	}
	if net.ParseIP(name) != nil {
		return "an IP address cannot be a merchant domain"
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return "domain needs at least two labels (e.g. loja.com.br or loja.localhost)"
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "each label must have 1 to 63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "labels cannot start or end with a hyphen"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "only letters, digits and hyphens are allowed (write internationalised names in their xn-- form)"
			}
		}
	}
	return ""
}

// DialLocalhost dials like d, except that "localhost" and "*.localhost"
// always reach 127.0.0.1, as RFC 6761 says, whatever the system resolver
// does: development merchants live there, and PSPs (the simulator) post
// their webhooks to them.
func DialLocalhost(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
				addr = net.JoinHostPort("127.0.0.1", port)
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}
