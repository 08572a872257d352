package httpsig

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// RFC 9421 Appendix B.2: signature bases for the test-request and
// test-response messages must match byte for byte, whatever the algorithm
// (RSA and HMAC examples are included for their bases only).
func TestRFC9421AppendixB2SignatureBases(t *testing.T) {
	reqDigest := `sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:`
	tests := []struct {
		name     string
		input    string
		response bool
		base     []string
	}{
		{
			name:  "B.2.1 minimal",
			input: `sig-b21=();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"`,
			base:  []string{`"@signature-params": ();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"`},
		},
		{
			name:  "B.2.2 selective",
			input: `sig-b22=("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"`,
			base: []string{
				`"@authority": example.com`,
				`"content-digest": ` + reqDigest,
				`"@query-param";name="Pet": dog`,
				`"@signature-params": ("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"`,
			},
		},
		{
			name:  "B.2.3 full coverage",
			input: `sig-b23=("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss"`,
			base: []string{
				`"date": Tue, 20 Apr 2021 02:07:55 GMT`,
				`"@method": POST`,
				`"@path": /foo`,
				`"@query": ?param=Value&Pet=dog`,
				`"@authority": example.com`,
				`"content-type": application/json`,
				`"content-digest": ` + reqDigest,
				`"content-length": 18`,
				`"@signature-params": ("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss"`,
			},
		},
		{
			name:     "B.2.4 response",
			input:    `sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"`,
			response: true,
			base: []string{
				`"@status": 200`,
				`"content-type": application/json`,
				`"content-digest": sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:`,
				`"content-length": 23`,
				`"@signature-params": ("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"`,
			},
		},
		{
			name:  "B.2.5 hmac",
			input: `sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"`,
			base: []string{
				`"date": Tue, 20 Apr 2021 02:07:55 GMT`,
				`"@authority": example.com`,
				`"content-type": application/json`,
				`"@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"`,
			},
		},
		{
			name:  "B.2.6 ed25519",
			input: `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`,
			base: []string{
				`"date": Tue, 20 Apr 2021 02:07:55 GMT`,
				`"@method": POST`,
				`"@path": /foo`,
				`"@authority": example.com`,
				`"content-type": application/json`,
				`"content-length": 18`,
				`"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParseInput(t, tt.input)
			var (
				got []byte
				err error
			)
			if tt.response {
				resp, _ := parseResponse(t, rfcTestResponse)
				got, err = ResponseSignatureBase(resp.Header, resp.StatusCode, nil, p)
			} else {
				r, _ := parseRequest(t, rfcTestRequest)
				got, err = RequestSignatureBase(r, p)
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Join(tt.base, "\n"); string(got) != want {
				t.Errorf("base mismatch\n got: %q\nwant: %q", got, want)
			}
		})
	}
}

// B.2.4: the published ECDSA signature verifies (ECDSA is randomised, so it
// cannot be reproduced), including the sha-512 Content-Digest of the body.
func TestRFC9421AppendixB24VerifyPublishedECDSA(t *testing.T) {
	resp, body := parseResponse(t, rfcTestResponse)
	resp.Header.Set("Signature-Input", `sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"`)
	resp.Header.Set("Signature", `sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:`)
	v := &Verifier{
		Keys: StaticKeys(mustPublicKey(t, "test-key-ecc-p256", &rfcECCKey(t).PublicKey)),
		Now:  at(1618884473),
	}
	res, err := v.VerifyResponse(context.Background(), resp.Header, resp.StatusCode, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Label != "sig-b24" || res.KeyID != "test-key-ecc-p256" || res.Algorithm != ES256 {
		t.Errorf("result = %+v", res)
	}

	// A DER re-encoding of the same (valid) signature must be rejected.
	sig, _ := base64.StdEncoding.DecodeString("wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==")
	der := rawToDER(sig)
	val, _ := FormatSignature("sig-b24", der)
	resp.Header.Set("Signature", val)
	_, err = v.VerifyResponse(context.Background(), resp.Header, resp.StatusCode, body, nil)
	wantErr(t, err, ErrSignatureInvalid)
}

// B.2.6: Ed25519 is deterministic, so signing reproduces the published
// Signature-Input and Signature fields exactly.
func TestRFC9421AppendixB26SignAndVerifyEd25519(t *testing.T) {
	r, body := parseRequest(t, rfcTestRequest)
	s := &Signer{
		Key:        rfcEd25519Key(t),
		KeyID:      "test-key-ed25519",
		Label:      "sig-b26",
		Components: []string{"date", "@method", "@path", "@authority", "content-type", "content-length"},
		Created:    at(1618884473),
	}
	if err := s.SignRequest(r, body); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Header.Get("Signature-Input"), `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`; got != want {
		t.Errorf("Signature-Input = %s, want %s", got, want)
	}
	if got, want := r.Header.Get("Signature"), `sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:`; got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
	v := &Verifier{Keys: StaticKeys(mustPublicKey(t, "test-key-ed25519", rfcEd25519Key(t))), Now: at(1618884473)}
	if _, err := v.VerifyRequest(context.Background(), r, body); err != nil {
		t.Fatal(err)
	}
}

// Section 2.4: a response signature covering request components with req;
// the published ECDSA signature verifies against the request and response.
func TestRFC9421Section24RequestResponseBinding(t *testing.T) {
	req, _ := parseRequest(t, rfcTestRequest)
	resp, body := parseResponse(t, `HTTP/1.1 503 Service Unavailable
Date: Tue, 20 Apr 2021 02:07:56 GMT
Content-Type: application/json
Content-Length: 62
Content-Digest: sha-512=:0Y6iCBzGg5rZtoXS95Ijz03mslf6KAMCloESHObfwnHJDbkkWWQz6PhhU9kxsTbARtY2PTBOzq24uJFpHsMuAg==:

{"busy": true, "message": "Your call is very important to us"}`)
	input := `reqres=("@status" "content-digest" "content-type" "@authority";req "@method";req "@path";req "content-digest";req);created=1618884479;keyid="test-key-ecc-p256"`
	wantBase := strings.Join([]string{
		`"@status": 503`,
		`"content-digest": sha-512=:0Y6iCBzGg5rZtoXS95Ijz03mslf6KAMCloESHObfwnHJDbkkWWQz6PhhU9kxsTbARtY2PTBOzq24uJFpHsMuAg==:`,
		`"content-type": application/json`,
		`"@authority";req: example.com`,
		`"@method";req: POST`,
		`"@path";req: /foo`,
		`"content-digest";req: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:`,
		`"@signature-params": ("@status" "content-digest" "content-type" "@authority";req "@method";req "@path";req "content-digest";req);created=1618884479;keyid="test-key-ecc-p256"`,
	}, "\n")
	got, err := ResponseSignatureBase(resp.Header, resp.StatusCode, req, mustParseInput(t, input))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wantBase {
		t.Fatalf("base mismatch\n got: %q\nwant: %q", got, wantBase)
	}

	resp.Header.Set("Signature-Input", input)
	resp.Header.Set("Signature", `reqres=:dMT/A/76ehrdBTD/2Xx8QuKV6FoyzEP/I9hdzKN8LQJLNgzU4W767HK05rx1i8meNQQgQPgQp8wq2ive3tV5Ag==:`)
	v := &Verifier{
		Keys:         StaticKeys(mustPublicKey(t, "test-key-ecc-p256", &rfcECCKey(t).PublicKey)),
		Now:          at(1618884479),
		Requirements: []Requirement{Require("@status", "content-digest", "@method;req")},
	}
	if _, err := v.VerifyResponse(context.Background(), resp.Header, resp.StatusCode, body, req); err != nil {
		t.Fatal(err)
	}
	// Without the request the req components cannot be rebuilt.
	_, err = v.VerifyResponse(context.Background(), resp.Header, resp.StatusCode, body, nil)
	wantErr(t, err, ErrSignatureInvalid)
	wantErr(t, err, ErrComponentMissing)
}

const rfcClientCert = `:MIIBqDCCAU6gAwIBAgIBBzAKBggqhkjOPQQDAjA6MRswGQYDVQQKDBJMZXQncyBBdXRoZW50aWNhdGUxGzAZBgNVBAMMEkxBIEludGVybWVkaWF0ZSBDQTAeFw0yMDAxMTQyMjU1MzNaFw0yMTAxMjMyMjU1MzNaMA0xCzAJBgNVBAMMAkJDMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YnXXfaUgmnMtOXU/IncWalRhebrXmckC8vdgJ1p5Be5F/3YC8OthxM4+k1M6aEAEFcGzkJiNy6J84y7uzo9M6NyMHAwCQYDVR0TBAIwADAfBgNVHSMEGDAWgBRm3WjLa38lbEYCuiCPct0ZaSED2DAOBgNVHQ8BAf8EBAMCBsAwEwYDVR0lBAwwCgYIKwYBBQUHAwIwHQYDVR0RAQH/BBMwEYEPYmRjQGV4YW1wbGUuY29tMAoGCCqGSM49BAMCA0gAMEUCIBHda/r1vaL6G3VliL4/Di6YK0Q6bMjeSkC3dFCOOB8TAiEAx/kHSB4urmiZ0NX5r5XarmPk0wmuydBVoU4hBVZ1yhk=:`

// B.3: a TLS-terminating proxy signs the forwarded request with
// test-key-ecc-p256; the published signature verifies.
func TestRFC9421AppendixB3TLSTerminatingProxy(t *testing.T) {
	r, body := parseRequest(t, `POST /foo?param=Value&Pet=dog HTTP/1.1
Host: service.internal.example
Date: Tue, 20 Apr 2021 02:07:55 GMT
Content-Type: application/json
Content-Length: 18
Client-Cert: `+rfcClientCert+`
Signature-Input: ttrp=("@path" "@query" "@method" "@authority" "client-cert");created=1618884473;keyid="test-key-ecc-p256"
Signature: ttrp=:xVMHVpawaAC/0SbHrKRs9i8I3eOs5RtTMGCWXm/9nvZzoHsIg6Mce9315T6xoklyy0yzhD9ah4JHRwMLOgmizw==:

{"hello": "world"}`)
	got, err := RequestSignatureBase(r, mustParseInput(t, r.Header.Get("Signature-Input")))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`"@path": /foo`,
		`"@query": ?param=Value&Pet=dog`,
		`"@method": POST`,
		`"@authority": service.internal.example`,
		`"client-cert": ` + rfcClientCert,
		`"@signature-params": ("@path" "@query" "@method" "@authority" "client-cert");created=1618884473;keyid="test-key-ecc-p256"`,
	}, "\n")
	if string(got) != want {
		t.Fatalf("base mismatch\n got: %q\nwant: %q", got, want)
	}
	v := &Verifier{
		Keys: StaticKeys(mustPublicKey(t, "test-key-ecc-p256", &rfcECCKey(t).PublicKey)),
		Now:  at(1618884473),
	}
	if _, err := v.VerifyRequest(context.Background(), r, body); err != nil {
		t.Fatal(err)
	}
}

// B.4: which transformations a signature survives. Ed25519 reproduces the
// published signature; safe transformations still verify, unsafe ones fail.
func TestRFC9421AppendixB4Transformations(t *testing.T) {
	const (
		input = `transform=("@method" "@path" "@authority" "accept");created=1618884473;keyid="test-key-ed25519"`
		sig   = `transform=:ZT1kooQsEHpZ0I1IjCqtQppOmIqlJPeo7DHR3SoMn0s5JZ1eRGS0A+vyYP9t/LXlh5QMFFQ6cpLt2m0pmj3NDA==:`
	)
	orig, _ := parseRequest(t, "GET /demo?name1=Value1&Name2=value2 HTTP/1.1\nHost: example.org\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nAccept: application/json\nAccept: */*\n\n")
	s := &Signer{
		Key:        rfcEd25519Key(t),
		KeyID:      "test-key-ed25519",
		Label:      "transform",
		Components: []string{"@method", "@path", "@authority", "accept"},
		Created:    at(1618884473),
	}
	if err := s.SignRequest(orig, nil); err != nil {
		t.Fatal(err)
	}
	if got := orig.Header.Get("Signature"); got != sig {
		t.Fatalf("Signature = %s, want %s", got, sig)
	}
	v := &Verifier{Keys: StaticKeys(mustPublicKey(t, "test-key-ed25519", rfcEd25519Key(t))), Now: at(1618884473)}
	signed := "Signature-Input: " + input + "\nSignature: " + sig + "\n\n"
	for _, tt := range []struct {
		name string
		msg  string
		ok   bool
	}{
		{"original", "GET /demo?name1=Value1&Name2=value2 HTTP/1.1\nHost: example.org\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nAccept: application/json\nAccept: */*\n", true},
		{"query and header added", "GET /demo?name1=Value1&Name2=value2&param=added HTTP/1.1\nHost: example.org\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nAccept: application/json\nAccept: */*\nAccept-Language: en-US,en;q=0.5\n", true},
		{"accept lines combined, date removed", "GET /demo?name1=Value1&Name2=value2 HTTP/1.1\nHost: example.org\nReferer: https://developer.example.org/demo\nAccept: application/json, */*\n", true},
		{"fields reordered", "GET /demo?name1=Value1&Name2=value2 HTTP/1.1\nAccept: application/json\nAccept: */*\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nHost: example.org\n", true},
		{"method and authority changed", "POST /demo?name1=Value1&Name2=value2 HTTP/1.1\nHost: example.com\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nAccept: application/json\nAccept: */*\n", false},
		{"accept lines reordered", "GET /demo?name1=Value1&Name2=value2 HTTP/1.1\nHost: example.org\nDate: Fri, 15 Jul 2022 14:24:55 GMT\nAccept: */*\nAccept: application/json\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, body := parseRequest(t, tt.msg+signed)
			_, err := v.VerifyRequest(context.Background(), r, body)
			if tt.ok && err != nil {
				t.Fatal(err)
			}
			if !tt.ok {
				wantErr(t, err, ErrSignatureInvalid)
			}
		})
	}
}

// Section 2.1: field values are trimmed, obs-folds unfolded, repeated lines
// combined; sf re-serialises, key selects a dictionary member, bs wraps each
// line as a byte sequence.
func TestRFC9421Section21FieldComponents(t *testing.T) {
	h := http.Header{}
	h.Set("Date", "Tue, 20 Apr 2021 02:07:56 GMT")
	h["X-Ows-Header"] = []string{"   Leading and trailing whitespace.   "}
	h["X-Obs-Fold-Header"] = []string{"Obsolete\r\n    line folding."}
	h["Cache-Control"] = []string{"max-age=60", "   must-revalidate"}
	h["Example-Dict"] = []string{" a=1,    b=2;x=1;y=2,   c=(a   b   c)"}
	h["X-Empty-Header"] = []string{""}
	h["Example-Header"] = []string{"value, with, lots", "of, commas"}
	h["Example-Dict-2"] = []string{"a=1, b=2;x=1;y=2, c=(a b c), d"}
	r, err := http.NewRequest(http.MethodGet, "https://www.example.com/", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header = h
	m, err := requestMessage(r, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ id, want string }{
		{"host", "www.example.com"},
		{"date", "Tue, 20 Apr 2021 02:07:56 GMT"},
		{"x-ows-header", "Leading and trailing whitespace."},
		{"x-obs-fold-header", "Obsolete line folding."},
		{"cache-control", "max-age=60, must-revalidate"},
		{"example-dict", "a=1,    b=2;x=1;y=2,   c=(a   b   c)"},
		{"x-empty-header", ""},
		{`"example-dict";sf`, "a=1, b=2;x=1;y=2, c=(a b c)"},
		{`"example-dict-2";key="a"`, "1"},
		{`"example-dict-2";key="d"`, "?1"},
		{`"example-dict-2";key="b"`, "2;x=1;y=2"},
		{`"example-dict-2";key="c"`, "(a b c)"},
		{"example-header", "value, with, lots, of, commas"},
		{`"example-header";bs`, ":dmFsdWUsIHdpdGgsIGxvdHM=:, :b2YsIGNvbW1hcw==:"},
	} {
		c, err := parseComponentString(tt.id)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		got, err := m.fieldValue(c)
		if err != nil {
			t.Errorf("%s: %v", tt.id, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s = %q, want %q", tt.id, got, tt.want)
		}
	}
	for _, id := range []string{"x-missing", `"example-dict-2";key="zz"`} {
		c, _ := parseComponentString(id)
		_, err := m.fieldValue(c)
		wantErr(t, err, ErrComponentMissing)
	}
}

// Section 2.2: derived components.
func TestRFC9421Section22DerivedComponents(t *testing.T) {
	tests := []struct {
		raw    string
		scheme string
		id     string
		want   string
	}{
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "https", "@method", "POST"},
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "https", "@target-uri", "https://www.example.com/path?param=value"},
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "https", "@authority", "www.example.com"},
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "http", "@scheme", "http"},
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "https", "@request-target", "/path?param=value"},
		{"POST /path?param=value HTTP/1.1\nHost: www.example.com\n\n", "https", "@path", "/path"},
		{"POST /path?param=value&foo=bar&baz=bat%2Dman HTTP/1.1\nHost: www.example.com\n\n", "https", "@query", "?param=value&foo=bar&baz=bat%2Dman"},
		{"POST /path?queryString HTTP/1.1\nHost: www.example.com\n\n", "https", "@query", "?queryString"},
		{"GET /path HTTP/1.1\nHost: www.example.com\n\n", "https", "@query", "?"},
		{"GET /path?param=value&foo=bar&baz=bat%2Dman&qux= HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="baz"`, "bat-man"},
		{"GET /path?param=value&foo=bar&baz=bat%2Dman&qux= HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="qux"`, ""},
		{"GET /path?param=value&foo=bar&baz=bat%2Dman&qux= HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="param"`, "value"},
		{"GET /parameters?var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="var"`, "this%20is%20a%20big%0Amultiline%20value"},
		{"GET /parameters?var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="bar"`, "with%20plus%20whitespace"},
		{"GET /parameters?var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something HTTP/1.1\nHost: www.example.com\n\n", "https", `"@query-param";name="fa%C3%A7ade%22%3A%20"`, "something"},
		{"OPTIONS * HTTP/1.1\nHost: www.example.com\n\n", "https", "@request-target", "*"},
		{"CONNECT www.example.com:80 HTTP/1.1\nHost: www.example.com\n\n", "https", "@request-target", "www.example.com:80"},
		// Authority normalisation (RFC 9110 §4.2.3).
		{"GET / HTTP/1.1\nHost: WWW.Example.COM:443\n\n", "https", "@authority", "www.example.com"},
		{"GET / HTTP/1.1\nHost: www.example.com:80\n\n", "http", "@authority", "www.example.com"},
		{"GET / HTTP/1.1\nHost: www.example.com:443\n\n", "http", "@authority", "www.example.com:443"},
		{"GET / HTTP/1.1\nHost: www.example.com:8443\n\n", "https", "@authority", "www.example.com:8443"},
		{"GET / HTTP/1.1\nHost: [2001:DB8::1]:443\n\n", "https", "@authority", "[2001:db8::1]"},
		{"GET / HTTP/1.1\nHost: [2001:db8::1]\n\n", "https", "@authority", "[2001:db8::1]"},
		{"GET / HTTP/1.1\nHost: Example.com:443\n\n", "https", "@target-uri", "https://example.com/"},
	}
	for _, tt := range tests {
		r, _ := parseRequest(t, tt.raw)
		m, err := requestMessage(r, tt.scheme)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseComponentString(tt.id)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		got, err := m.derivedValue(c)
		if err != nil {
			t.Errorf("%s on %q: %v", tt.id, tt.raw, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s on %q = %q, want %q", tt.id, tt.raw, got, tt.want)
		}
	}

	resp := responseMessage(http.Header{}, 200, nil)
	c, _ := parseComponentString("@status")
	if got, err := resp.derivedValue(c); err != nil || got != "200" {
		t.Errorf("@status = %q, %v", got, err)
	}
}

// Component rules that make base construction fail.
func TestSignatureBaseErrors(t *testing.T) {
	r, _ := parseRequest(t, rfcTestRequest)
	tests := []struct {
		name  string
		input string
		want  error
	}{
		{"missing field", `s=("x-missing");keyid="k"`, ErrComponentMissing},
		{"status on request", `s=("@status");keyid="k"`, ErrMalformed},
		{"req on request", `s=("@method";req);keyid="k"`, ErrMalformed},
		{"missing query param", `s=("@query-param";name="nope");keyid="k"`, ErrComponentMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RequestSignatureBase(r, mustParseInput(t, tt.input))
			wantErr(t, err, tt.want)
		})
	}
	dup, _ := parseRequest(t, "GET /p?a=1&a=2 HTTP/1.1\nHost: example.com\n\n")
	_, err := RequestSignatureBase(dup, mustParseInput(t, `s=("@query-param";name="a");keyid="k"`))
	wantErr(t, err, ErrMalformed)

	// A bare LF smuggled into a hand-built header must not forge a line.
	r.Header["X-Evil"] = []string{"ok\n\"@method\": GET"}
	_, err = RequestSignatureBase(r, mustParseInput(t, `s=("x-evil");keyid="k"`))
	wantErr(t, err, ErrMalformed)

	// Request components on a response need req.
	_, err = ResponseSignatureBase(http.Header{}, 200, nil, mustParseInput(t, `s=("@method");keyid="k"`))
	wantErr(t, err, ErrMalformed)
}

// Identifiers that Signature-Input must not carry.
func TestParseSignatureInputRejects(t *testing.T) {
	for _, in := range []string{
		`sig1=("Content-Type");keyid="k"`,               // upper-case field name
		`sig1=("@method" "@method");keyid="k"`,          // repeated component
		`sig1=("a";sf "a";sf);keyid="k"`,                // repeated with params
		`sig1=("@signature-params");keyid="k"`,          // never covered
		`sig1=("@foo");keyid="k"`,                       // unknown derived component
		`sig1=("@query-param");keyid="k"`,               // name required
		`sig1=("@method";name="x");keyid="k"`,           // name only on @query-param
		`sig1=("x";tr);keyid="k"`,                       // trailers unsupported
		`sig1=("x";bs;sf);keyid="k"`,                    // bs excludes sf
		`sig1=("x";unknown);keyid="k"`,                  // unknown parameter
		`sig1=("x";key=1);keyid="k"`,                    // key must be a string
		`sig1=(x);keyid="k"`,                            // token, not string
		`sig1=("@method");created="now"`,                // created must be an integer
		`sig1=("@method");keyid=1`,                      // keyid must be a string
		`sig1="@method"`,                                // not an inner list
		`sig1=("@method"`,                               // syntax
		`sig1=("@method");keyid="k", sig2=("@path";sf)`, // sf on a derived component
	} {
		_, err := ParseSignatureInput([]string{in})
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseSignatureInput(%s) = %v, want ErrMalformed", in, err)
		}
	}
}
