package httpsig

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// RFC 8037 Appendix A.3: the thumbprint of the Ed25519 example key.
func TestThumbprintRFC8037(t *testing.T) {
	j, err := ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ignored","alg":"EdDSA","use":"sig"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Thumbprint(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Errorf("Thumbprint = %s, want %s", got, want)
	}
}

// The RFC 9421 test-key-ecc-p256 as JWK equals the PEM key, and its
// thumbprint is stable under member order and extra members.
func TestJWKMatchesRFCTestKey(t *testing.T) {
	j, err := ParseJWK([]byte(`{"kty":"EC","crv":"P-256","kid":"test-key-ecc-p256","x":"qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA","y":"Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0","alg":"ES256"}`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := j.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if !rfcECCKey(t).PublicKey.Equal(k.Key) || k.Algorithm != ES256 {
		t.Fatalf("JWK key differs from the PEM key: %+v", k)
	}
	pemPub, err := x509.ParsePKIXPublicKey(readPEM(t, "rfc9421-test-key-ecc-p256.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if !pemPub.(*ecdsa.PublicKey).Equal(k.Key) {
		t.Fatal("JWK key differs from the published public key")
	}
	pj, err := PublicJWK(rfcECCKey(t), "test-key-ecc-p256")
	if err != nil {
		t.Fatal(err)
	}
	if pj.X != j.X || pj.Y != j.Y {
		t.Errorf("PublicJWK = %+v, want x/y of %+v", pj, j)
	}
	t1, _ := Thumbprint(j)
	j2, _ := ParseJWK([]byte(`{"y":"Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0","x":"qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA","crv":"P-256","kty":"EC","use":"sig","extra":1}`))
	if t2, _ := Thumbprint(j2); t1 != t2 || t1 == "" {
		t.Errorf("thumbprints differ: %s vs %s", t1, t2)
	}
}

// PublicJWK round-trips every supported key type, marshals exactly the
// standard members and defaults kid to the thumbprint.
func TestPublicJWKRoundTrip(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		key     any
		alg     Algorithm
		members []string
	}{
		{p256, ES256, []string{"alg", "crv", "kid", "kty", "use", "x", "y"}},
		{&p384.PublicKey, ES384, []string{"alg", "crv", "kid", "kty", "use", "x", "y"}},
		{ed, EdDSA, []string{"alg", "crv", "kid", "kty", "use", "x"}},
	} {
		j, err := PublicJWK(tc.key, "")
		if err != nil {
			t.Fatal(err)
		}
		tp, _ := Thumbprint(j)
		if j.Kid != tp || j.Alg != string(tc.alg) {
			t.Errorf("%s: kid %q alg %q, want thumbprint %q", tc.alg, j.Kid, j.Alg, tp)
		}
		data, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		var names []string
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		if !reflect.DeepEqual(names, tc.members) {
			t.Errorf("%s: members %v, want %v", tc.alg, names, tc.members)
		}
		back, err := ParseJWK(data)
		if err != nil {
			t.Fatal(err)
		}
		k, err := back.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		if k.Algorithm != tc.alg {
			t.Errorf("round trip algorithm %s, want %s", k.Algorithm, tc.alg)
		}
	}
}

func TestJWKRejects(t *testing.T) {
	const x = "qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA"
	const y = "Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0"
	for _, tc := range []struct {
		name string
		jwk  string
		want error
	}{
		{"private d", `{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + y + `","d":"UpuF81l-kOxbjf7T4mNSv0r5tN67Gim7rnf6EFpcYDs"}`, ErrMalformed},
		{"symmetric k", `{"kty":"oct","k":"c2VjcmV0"}`, ErrMalformed},
		{"alg mismatch", `{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + y + `","alg":"ES384"}`, ErrMalformed},
		{"EdDSA on P-256", `{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + y + `","alg":"EdDSA"}`, ErrMalformed},
		{"point not on curve", `{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + x + `"}`, ErrMalformed},
		{"short x", `{"kty":"EC","crv":"P-256","x":"AAAA","y":"` + y + `"}`, ErrMalformed},
		{"padded base64", `{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs="}`, ErrMalformed},
		{"standard base64", `{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs"}`, ErrMalformed},
		{"encryption key", `{"kty":"OKP","crv":"Ed25519","use":"enc","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`, ErrMalformed},
		{"RSA", `{"kty":"RSA","n":"AQAB","e":"AQAB"}`, ErrAlgorithmUnsupported},
		{"P-521", `{"kty":"EC","crv":"P-521","x":"` + x + `","y":"` + y + `"}`, ErrAlgorithmUnsupported},
		{"X25519", `{"kty":"OKP","crv":"X25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`, ErrAlgorithmUnsupported},
		{"x is a number", `{"kty":"OKP","crv":"Ed25519","x":1}`, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ParseJWK([]byte(tc.jwk))
			if err == nil {
				_, err = j.PublicKey()
			}
			wantErr(t, err, tc.want)
		})
	}
	// A private JWK never marshals its private members back out.
	j, _ := ParseJWK([]byte(`{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + y + `","d":"UpuF81l-kOxbjf7T4mNSv0r5tN67Gim7rnf6EFpcYDs"}`))
	if !j.IsPrivate() {
		t.Fatal("IsPrivate = false")
	}
	if data, _ := json.Marshal(j); strings.Contains(string(data), `"d"`) {
		t.Errorf("marshalled private member: %s", data)
	}
	// RFC 9864 names the same algorithm "Ed25519".
	j, _ = ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","alg":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`))
	if _, err := j.PublicKey(); err != nil {
		t.Errorf("alg Ed25519: %v", err)
	}
}

func TestKeySet(t *testing.T) {
	ed := `{"kty":"OKP","crv":"Ed25519","kid":"ed","use":"sig","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`
	ec := `{"kty":"EC","crv":"P-256","kid":"ec","alg":"ES256","x":"qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA","y":"Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0"}`
	enc := `{"kty":"OKP","crv":"X25519","kid":"enc","use":"enc","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`
	ops := `{"kty":"OKP","crv":"Ed25519","kid":"wrap","key_ops":["encrypt"],"x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`
	rsa := `{"kty":"RSA","kid":"rsa","n":"AQAB","e":"AQAB"}`
	// A UCP profile with a top-level keys[] array is a JWK Set.
	doc := `{"ucp":{"version":"2026-04-08"},"keys":[` + strings.Join([]string{ed, ec, enc, ops, rsa}, ",") + `]}`
	s, err := ParseJWKSet([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.KeyIDs(); !reflect.DeepEqual(got, []string{"ec", "ed", "rsa"}) {
		t.Errorf("KeyIDs = %v", got)
	}
	if k, err := s.Resolve(context.Background(), "ec"); err != nil || k.Algorithm != ES256 {
		t.Errorf("ec: %+v, %v", k, err)
	}
	_, err = s.Lookup("enc")
	wantErr(t, err, ErrKeyNotFound)
	_, err = s.Lookup("wrap")
	wantErr(t, err, ErrKeyNotFound)
	_, err = s.Lookup("rsa")
	wantErr(t, err, ErrAlgorithmUnsupported)
	_, err = s.Lookup("nope")
	wantErr(t, err, ErrKeyNotFound)

	for name, bad := range map[string]string{
		"private member": `{"keys":[` + ed + `,{"kty":"OKP","crv":"Ed25519","kid":"p","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","d":"n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU"}]}`,
		"duplicate kid":  `{"keys":[` + ed + `,` + ed + `]}`,
		"missing kid":    `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}`,
		"no keys member": `{"signing_keys":[]}`,
		"not json":       `{"keys":`,
		"null key":       `{"keys":[null]}`,
	} {
		if _, err := ParseJWKSet([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			wantErr(t, err, ErrMalformed)
		}
	}
}
