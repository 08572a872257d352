// Package pki issues and reads the X.509 material the platform's mTLS
// connections need: a small certificate authority (the PSP simulator's own
// CA, the development webhook listener's CA, tests), and the parsing and
// checks of the client certificates merchants upload (PEM or PKCS#12, key
// matches certificate, validity).
//
// Keys are ECDSA P-256: what PSPs accept today and cheap to make in tests.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can issue server and client
// certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is Cert in PEM, for trust stores.
	CertPEM []byte
}

// Now is the clock certificates are dated by (tests move it).
var Now = time.Now

// NewCA makes a self-signed CA valid for validity from now.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"BCP"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der)}, nil
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issued is a certificate the CA issued, with its key.
type Issued struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte // PKCS#8
}

// TLS is the pair for a tls.Config.
func (i *Issued) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{i.Cert.Raw}, PrivateKey: i.Key, Leaf: i.Cert}
}

// IssueServer issues a server certificate for hosts (DNS names, wildcards
// such as "*.localhost", or IP addresses).
func (ca *CA) IssueServer(hosts []string, validity time.Duration) (*Issued, error) {
	if len(hosts) == 0 {
		return nil, errors.New("pki: a server certificate needs at least one host")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl, validity)
}

// IssueClient issues a client certificate whose subject common name is
// commonName (a PSP names the account it belongs to there).
func (ca *CA) IssueClient(commonName string, validity time.Duration) (*Issued, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(tmpl, validity)
}

func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (*Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// LoadOrCreateCA reads the CA kept in dir (ca.pem, ca-key.pem), or makes one
// valid for ten years and writes it there (the key readable by the owner
// only). Development only: a production CA's key never sits in a file
// next to the service.
func LoadOrCreateCA(dir, commonName string) (*CA, error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if certPEM, err := os.ReadFile(certFile); err == nil {
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, err
		}
		c, err := ParseCredentials(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("pki: %s: %w", dir, err)
		}
		return &CA{Cert: c.Leaf, Key: c.Key, CertPEM: certPEM}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ca, err := NewCA(commonName, 10*365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, pemBlock("PRIVATE KEY", keyDER), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certFile, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}
