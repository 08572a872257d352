package tenants

import (
	"strings"
	"testing"
	"time"
)

func TestPasswordHashing(t *testing.T) {
	h := HashPassword("correct horse")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if h == HashPassword("correct horse") {
		t.Fatal("same salt twice")
	}
	if ok, rehash := CheckPassword(h, "correct horse"); !ok || rehash {
		t.Fatalf("check = %v, %v", ok, rehash)
	}
	for _, bad := range []string{"correct horse ", "", "Correct horse"} {
		if ok, _ := CheckPassword(h, bad); ok {
			t.Fatalf("%q accepted", bad)
		}
	}
	for _, junk := range []string{"", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=19$m=99999999,t=1,p=1$AA$AA", "plain"} {
		if ok, _ := CheckPassword(junk, "x"); ok {
			t.Fatalf("malformed hash %q accepted", junk)
		}
	}
}

func TestLockoutBackoff(t *testing.T) {
	want := map[int32]time.Duration{0: 0, 4: 0, 5: 30 * time.Second, 6: time.Minute, 7: 2 * time.Minute, 9: 8 * time.Minute, 10: 15 * time.Minute, 100: 15 * time.Minute}
	for n, d := range want {
		if got := lockFor(n); got != d {
			t.Errorf("lockFor(%d) = %s, want %s", n, got, d)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	if e, err := normalizeEmail("  Dona@Loja.COM.br "); err != nil || e != "dona@loja.com.br" {
		t.Fatalf("%q %v", e, err)
	}
	for _, bad := range []string{"", "dona", "Dona <dona@loja.com.br>", "dona@loja", "a@b@c.com"} {
		if _, err := normalizeEmail(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
