package sealer

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

func TestSealOpenBindsContext(t *testing.T) {
	s, err := NewAESGCM(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("private key bytes")
	sealed, err := s.Seal(secret, []byte("tenant-a/signing/k1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed blob contains the plaintext")
	}
	got, err := s.Open(sealed, []byte("tenant-a/signing/k1"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := s.Open(sealed, []byte("tenant-b/signing/k1")); !errors.Is(err, ErrOpen) {
		t.Fatalf("opening under another tenant's context: err = %v, want ErrOpen", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, []byte("tenant-a/signing/k1")); !errors.Is(err, ErrOpen) {
		t.Fatalf("tampered blob: err = %v, want ErrOpen", err)
	}
	other, _ := NewAESGCM(bytes.Repeat([]byte{8}, 32))
	sealed[len(sealed)-1] ^= 1
	if _, err := other.Open(sealed, []byte("tenant-a/signing/k1")); !errors.Is(err, ErrOpen) {
		t.Fatalf("wrong master key: err = %v, want ErrOpen", err)
	}
}

func TestKeyFileAndParse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "master.key")
	k1, err := LoadOrCreateKeyFile(p)
	if err != nil || len(k1) != 32 {
		t.Fatalf("create: %v (len %d)", err, len(k1))
	}
	k2, err := LoadOrCreateKeyFile(p)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load returned a different key (%v)", err)
	}
	if _, err := ParseKey("c2hvcnQ="); err == nil {
		t.Fatal("ParseKey accepted a 5-byte key")
	}
	if _, err := NewAESGCM(make([]byte, 16)); err == nil {
		t.Fatal("NewAESGCM accepted a 16-byte key")
	}
}
