package httpsig

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rfcTestRequest is the test-request message of RFC 9421 Appendix B.2.
const rfcTestRequest = `POST /foo?param=Value&Pet=dog HTTP/1.1
Host: example.com
Date: Tue, 20 Apr 2021 02:07:55 GMT
Content-Type: application/json
Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
Content-Length: 18

{"hello": "world"}`

// rfcTestResponse is the test-response message of RFC 9421 Appendix B.2.
const rfcTestResponse = `HTTP/1.1 200 OK
Date: Tue, 20 Apr 2021 02:07:56 GMT
Content-Type: application/json
Content-Digest: sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:
Content-Length: 23

{"message": "good dog"}`

// crlf turns a message written with LF line ends into wire form; the body
// (after the first empty line) is left untouched.
func crlf(raw string) string {
	head, body, _ := strings.Cut(raw, "\n\n")
	return strings.ReplaceAll(head, "\n", "\r\n") + "\r\n\r\n" + body
}

// parseRequest reads raw as a server would, returning the request and body.
func parseRequest(t testing.TB, raw string) (*http.Request, []byte) {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(crlf(raw))))
	if err != nil {
		t.Fatalf("ReadRequest: %v", err)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return r, body
}

// parseResponse reads raw as a client would.
func parseResponse(t testing.TB, raw string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(crlf(raw))), nil)
	if err != nil {
		t.Fatalf("ReadResponse: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, body
}

// wire sends a client request through net/http's serialisation and parses
// it back as a server would, without any network.
func wire(t testing.TB, r *http.Request, body []byte) *http.Request {
	t.Helper()
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatalf("Request.Write: %v", err)
	}
	s, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatalf("ReadRequest: %v", err)
	}
	return s
}

func readPEM(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", name)
	}
	return block.Bytes
}

// rfcECCKey is test-key-ecc-p256 (RFC 9421 Appendix B.1.3).
func rfcECCKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := x509.ParseECPrivateKey(readPEM(t, "rfc9421-test-key-ecc-p256.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rfcEd25519Key is test-key-ed25519 (RFC 9421 Appendix B.1.4).
func rfcEd25519Key(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	k, err := x509.ParsePKCS8PrivateKey(readPEM(t, "rfc9421-test-key-ed25519.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

func mustPublicKey(t testing.TB, kid string, pub any) PublicKey {
	t.Helper()
	k, err := NewPublicKey(kid, pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func at(unix int64) func() time.Time {
	return func() time.Time { return time.Unix(unix, 0) }
}

func wantErr(t testing.TB, err, sentinel error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want %v", err, sentinel)
	}
}

func mustParseInput(t testing.TB, value string) SignatureParams {
	t.Helper()
	ps, err := ParseSignatureInput([]string{value})
	if err != nil {
		t.Fatalf("ParseSignatureInput(%q): %v", value, err)
	}
	if len(ps) != 1 {
		t.Fatalf("ParseSignatureInput(%q): %d members", value, len(ps))
	}
	return ps[0]
}

// rawToDER re-encodes a raw r||s ECDSA signature as ASN.1 DER.
func rawToDER(sig []byte) []byte {
	half := len(sig) / 2
	var v struct{ R, S *big.Int }
	v.R = new(big.Int).SetBytes(sig[:half])
	v.S = new(big.Int).SetBytes(sig[half:])
	der, err := asn1.Marshal(v)
	if err != nil {
		panic(err)
	}
	return der
}
