package platform

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
)

// devPKI is the TLS material of a development or test deployment, where
// no public CA can issue certificates for 127.0.0.1 and *.localhost:
//
//   - the dev CA ("public web" stand-in) issues the server certificates of
//     the PSP simulator's listeners and of the platform's webhook
//     listener, and every client here trusts it;
//   - the simulator's own CA issues its accounts' client certificates and
//     the certificate it calls webhooks with (a bank's private CA).
//
// Kept in Config.DevPKIDir so that separate processes (make ha) and
// restarts agree on them (a sandbox account's client certificate must
// outlive a restart); in memory when the directory is "" (tests).
type devPKI struct {
	ca    *pki.CA
	simCA *pki.CA
}

var (
	ephemeralOnce sync.Once
	ephemeral     *devPKI
	ephemeralErr  error
)

func loadDevPKI(dir string) (*devPKI, error) {
	if dir == "" {
		// One per process: co-hosted and in-process test platforms trust
		// each other.
		ephemeralOnce.Do(func() {
			p := &devPKI{}
			if p.ca, ephemeralErr = pki.NewCA("BCP dev CA (ephemeral)", 7*24*time.Hour); ephemeralErr != nil {
				return
			}
			p.simCA, ephemeralErr = pki.NewCA("PSP simulator CA (ephemeral)", 7*24*time.Hour)
			ephemeral = p
		})
		return ephemeral, ephemeralErr
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "dev-ca"), "BCP dev CA")
	if err != nil {
		return nil, fmt.Errorf("dev PKI: %w", err)
	}
	simCA, err := pki.LoadOrCreateCA(filepath.Join(dir, "pspsim-ca"), "PSP simulator CA")
	if err != nil {
		return nil, fmt.Errorf("dev PKI: %w", err)
	}
	return &devPKI{ca: ca, simCA: simCA}, nil
}

// serverCert issues a fresh server certificate for the loopback names a
// development deployment answers on.
func (p *devPKI) serverCert() (tls.Certificate, error) {
	c, err := p.ca.IssueServer([]string{"localhost", "*.localhost", "127.0.0.1", "::1"}, 30*24*time.Hour)
	if err != nil {
		return tls.Certificate{}, err
	}
	return c.TLS(), nil
}

// byName answers a handshake with base, or, for a name base does not
// cover (a merchant host two labels under localhost: a wildcard covers
// one), with a certificate for that name issued on the spot and kept.
func (p *devPKI) byName(base tls.Certificate) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var mu sync.Mutex
	issued := map[string]*tls.Certificate{}
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		name := strings.ToLower(hello.ServerName)
		if name == "" || base.Leaf == nil || base.Leaf.VerifyHostname(name) == nil {
			return &base, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if c, ok := issued[name]; ok {
			return c, nil
		}
		c, err := p.ca.IssueServer([]string{name}, 30*24*time.Hour)
		if err != nil {
			return nil, err
		}
		tc := c.TLS()
		issued[name] = &tc
		return &tc, nil
	}
}
