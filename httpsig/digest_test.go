package httpsig

import (
	"testing"
)

func TestContentDigest(t *testing.T) {
	body := []byte(`{"hello": "world"}`)
	both, err := FormatContentDigest(body, DigestSHA512, DigestSHA256)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 9421 B.2 uses the sha-512 form of the same body.
	want := "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
	if both != want {
		t.Fatalf("FormatContentDigest = %s\nwant %s", both, want)
	}
	if _, err := FormatContentDigest(body, "md5"); err == nil {
		t.Error("md5 accepted")
	}

	ok := []string{
		both,
		ContentDigest(body),
		"sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
		// Unknown or deprecated algorithms are ignored next to a good one.
		"md5=:AAAA:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:",
	}
	for _, v := range ok {
		if err := VerifyContentDigest([]string{v}, body); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	// Split over two field lines.
	if err := VerifyContentDigest([]string{"sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:", ContentDigest(body)}, body); err != nil {
		t.Error(err)
	}

	mismatch := []string{
		ContentDigest([]byte("other")),
		// Every supported digest present must match, not just one.
		ContentDigest(body) + ", sha-512=:" + "AAAA" + ":",
		"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBP==:", // truncated
		"md5=:AAAA:", // nothing supported
		"",
	}
	for _, v := range mismatch {
		wantErr(t, VerifyContentDigest([]string{v}, body), ErrDigestMismatch)
	}

	malformed := []string{
		`sha-256="X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="`, // string, not bytes
		`sha-256=:not base64!:`,
		`sha-256=(:AAAA:)`,
		`SHA-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`, // keys are lower-case
	}
	for _, v := range malformed {
		wantErr(t, VerifyContentDigest([]string{v}, body), ErrMalformed)
	}
	wantErr(t, VerifyContentDigest(nil, body), ErrMalformed)
}
