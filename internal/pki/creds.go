package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// Credentials are a client (or server) certificate chain and its key.
type Credentials struct {
	Leaf  *x509.Certificate
	Chain [][]byte // DER, leaf first
	Key   crypto.Signer
}

// TLS is the pair for a tls.Config.
func (c *Credentials) TLS() tls.Certificate {
	return tls.Certificate{Certificate: c.Chain, PrivateKey: c.Key, Leaf: c.Leaf}
}

// Errors of uploaded credentials, each with a message a merchant can act on.
var (
	ErrNoCertificate = errors.New("no certificate found (expected PEM \"CERTIFICATE\" blocks or a PKCS#12 file)")
	ErrNoKey         = errors.New("no private key found (expected a PEM private key or a PKCS#12 file with one)")
	ErrKeyMismatch   = errors.New("the private key does not belong to the certificate")
	ErrBadPassword   = errors.New("the PKCS#12 file could not be opened: wrong password or damaged file")
)

// ParseCredentials reads a PEM certificate chain (leaf first, or in any
// order: the one matching the key is the leaf) and a PEM private key
// (PKCS#8, PKCS#1 or SEC 1), and checks that they belong together.
func ParseCredentials(certPEM, keyPEM []byte) (*Credentials, error) {
	var certs []*x509.Certificate
	rest := certPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, ErrNoCertificate
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	return assemble(certs, key)
}

func parseKeyPEM(keyPEM []byte) (crypto.Signer, error) {
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, ErrNoKey
		}
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("the private key is encrypted: upload it unencrypted (it is sealed at rest here) or as PKCS#12 with its password")
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, errors.New("private key: unsupported key type")
		}
		return s, nil
	}
}

// ParsePKCS12 reads a PKCS#12 (.p12/.pfx) file as PSPs issue them: the
// key, its certificate and any CA certificates.
func ParsePKCS12(data []byte, password string) (*Credentials, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, ErrBadPassword
		}
		return nil, fmt.Errorf("PKCS#12: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("PKCS#12: unsupported key type")
	}
	return assemble(append([]*x509.Certificate{leaf}, cas...), s)
}

// EncodePKCS12 writes credentials as PKCS#12 (tests, and a simulated PSP
// that hands out .p12 files like a bank).
func EncodePKCS12(c *Credentials, password string) ([]byte, error) {
	var cas []*x509.Certificate
	for _, der := range c.Chain[1:] {
		ca, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		cas = append(cas, ca)
	}
	return pkcs12.Modern.Encode(c.Key, c.Leaf, cas, password)
}

// assemble puts the certificate matching key first.
func assemble(certs []*x509.Certificate, key crypto.Signer) (*Credentials, error) {
	leaf := -1
	for i, c := range certs {
		if publicKeysEqual(c.PublicKey, key.Public()) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return nil, ErrKeyMismatch
	}
	out := &Credentials{Leaf: certs[leaf], Key: key, Chain: [][]byte{certs[leaf].Raw}}
	for i, c := range certs {
		if i != leaf {
			out.Chain = append(out.Chain, c.Raw)
		}
	}
	return out, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch k := a.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return k.(equaler).Equal(b)
	}
	return false
}

// CheckValidity says whether the leaf certificate is valid at now, in
// words a merchant can act on.
func (c *Credentials) CheckValidity(now time.Time) error {
	switch {
	case now.Before(c.Leaf.NotBefore):
		return fmt.Errorf("the certificate is not valid before %s", c.Leaf.NotBefore.UTC().Format(time.RFC3339))
	case now.After(c.Leaf.NotAfter):
		return fmt.Errorf("the certificate expired on %s", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// ParseCertPool reads PEM certificates into a pool (a PSP's CA bundle).
func ParseCertPool(pemCerts []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if len(bytes.TrimSpace(pemCerts)) == 0 || !p.AppendCertsFromPEM(pemCerts) {
		return nil, ErrNoCertificate
	}
	return p, nil
}

// VerifyClientChain checks a client certificate chain (DER, leaf first, as
// a TLS peer or a proxy presents it) against roots at now, for client
// authentication.
func VerifyClientChain(chain [][]byte, roots *x509.CertPool, now time.Time) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("no client certificate")
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}
