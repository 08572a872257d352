package platform

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// The webhook listener's dev certificate covers one label under
// localhost; a deeper merchant host gets one of its own, issued once.
func TestDevCertificateByName(t *testing.T) {
	p, err := loadDevPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base, err := p.serverCert()
	if err != nil {
		t.Fatal(err)
	}
	get := p.byName(base)
	verify := func(name string) *tls.Certificate {
		t.Helper()
		c, err := get(&tls.ClientHelloInfo{ServerName: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: p.ca.Pool()}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}
	if c := verify("loja-a.localhost"); c.Leaf != base.Leaf {
		t.Error("a name the base covers got another certificate")
	}
	deep := verify("loja.bench.localhost")
	if deep.Leaf == base.Leaf || verify("loja.bench.localhost") != deep {
		t.Error("a deeper name: not its own certificate, or issued twice")
	}
}
