package pki_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
)

func TestMutualTLSWithIssuedCertificates(t *testing.T) {
	ca, err := pki.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := ca.IssueServer([]string{"127.0.0.1", "*.localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient("conta-123", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert.TLS()}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()

	creds, err := pki.ParseCredentials(client.CertPEM, client.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{creds.TLS()}}}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "conta-123" {
		t.Fatalf("server saw client %q, want conta-123", b)
	}
	// Without a client certificate the handshake fails.
	bare := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	if resp, err := bare.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a client without a certificate was served")
	}
}

func TestCredentialsChecks(t *testing.T) {
	ca, _ := pki.NewCA("test CA", 48*time.Hour)
	a, _ := ca.IssueClient("a", time.Hour)
	b, _ := ca.IssueClient("b", time.Hour)
	if _, err := pki.ParseCredentials(a.CertPEM, b.KeyPEM); !errors.Is(err, pki.ErrKeyMismatch) {
		t.Fatalf("mismatched key: %v, want ErrKeyMismatch", err)
	}
	if _, err := pki.ParseCredentials([]byte("not pem"), a.KeyPEM); !errors.Is(err, pki.ErrNoCertificate) {
		t.Fatalf("no certificate: %v", err)
	}
	if _, err := pki.ParseCredentials(a.CertPEM, a.CertPEM); !errors.Is(err, pki.ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
	// The chain may come in any order: the key picks the leaf.
	c, err := pki.ParseCredentials(append(append([]byte{}, ca.CertPEM...), a.CertPEM...), a.KeyPEM)
	if err != nil || c.Leaf.Subject.CommonName != "a" || len(c.Chain) != 2 {
		t.Fatalf("chain CA-first: %v %+v", err, c)
	}
	if err := c.CheckValidity(time.Now().Add(2 * time.Hour)); err == nil || !strings.Contains(err.Error(), "expired on") {
		t.Fatalf("expired: %v", err)
	}
	if err := c.CheckValidity(time.Now()); err != nil {
		t.Fatal(err)
	}
	// PKCS#12 round trip, and a wrong password.
	p12, err := pki.EncodePKCS12(c, "s3nha")
	if err != nil {
		t.Fatal(err)
	}
	back, err := pki.ParsePKCS12(p12, "s3nha")
	if err != nil || back.Leaf.Subject.CommonName != "a" || len(back.Chain) != 2 {
		t.Fatalf("PKCS#12: %v", err)
	}
	if _, err := pki.ParsePKCS12(p12, "errada"); !errors.Is(err, pki.ErrBadPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	// Client chains verify against the CA, and not against another.
	if leaf, err := pki.VerifyClientChain(c.Chain, ca.Pool(), time.Now()); err != nil || leaf.Subject.CommonName != "a" {
		t.Fatalf("verify: %v", err)
	}
	other, _ := pki.NewCA("other", time.Hour)
	if _, err := pki.VerifyClientChain(c.Chain, other.Pool(), time.Now()); err == nil {
		t.Fatal("a chain verified against a CA that did not issue it")
	}
	if _, err := pki.VerifyClientChain(nil, ca.Pool(), time.Now()); err == nil {
		t.Fatal("an empty chain verified")
	}
}

func TestLoadOrCreateCAKeepsTheCA(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.LoadOrCreateCA(dir, "dev CA")
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.LoadOrCreateCA(dir, "dev CA")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Cert.Equal(b.Cert) {
		t.Fatal("the second load made a new CA")
	}
	if _, err := b.IssueServer([]string{"localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
}
