package httpsig

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"

	"github.com/dunglas/httpsfv"
)

// RFC 9530 digest algorithm keys accepted by this package. Deprecated
// algorithms (md5, sha, unixsum, ...) are ignored as RFC 9530 §5 requires
// in security-sensitive use.
const (
	DigestSHA256 = "sha-256"
	DigestSHA512 = "sha-512"
)

// ContentDigestHeader is the canonical header name of RFC 9530 §2.
const ContentDigestHeader = "Content-Digest"

func digestOf(alg string, body []byte) ([]byte, bool) {
	switch alg {
	case DigestSHA256:
		h := sha256.Sum256(body)
		return h[:], true
	case DigestSHA512:
		h := sha512.Sum512(body)
		return h[:], true
	}
	return nil, false
}

// ContentDigest returns the Content-Digest field value for body using
// sha-256, e.g. "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:".
// The digest is over the raw bytes: no JSON canonicalisation.
func ContentDigest(body []byte) string {
	h := sha256.Sum256(body)
	return DigestSHA256 + "=:" + base64.StdEncoding.EncodeToString(h[:]) + ":"
}

// FormatContentDigest returns a Content-Digest value with one member per
// algorithm, in the given order (default sha-256).
func FormatContentDigest(body []byte, algs ...string) (string, error) {
	if len(algs) == 0 {
		algs = []string{DigestSHA256}
	}
	d := httpsfv.NewDictionary()
	for _, alg := range algs {
		sum, ok := digestOf(alg, body)
		if !ok {
			return "", errorf(ErrAlgorithmUnsupported, "digest algorithm %q", alg)
		}
		d.Add(alg, httpsfv.NewItem(sum))
	}
	return httpsfv.Marshal(d)
}

// ParseContentDigest parses Content-Digest field lines (RFC 9530 §2): a
// Dictionary whose members are Byte Sequences, keyed by algorithm. Unknown
// algorithms are returned too; callers decide what to trust.
func ParseContentDigest(values []string) (map[string][]byte, error) {
	if len(values) == 0 {
		return nil, errorf(ErrMalformed, "no Content-Digest field")
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, wrapError(ErrMalformed, err, "Content-Digest")
	}
	out := make(map[string][]byte, len(d.Names()))
	for _, name := range d.Names() {
		m, _ := d.Get(name)
		it, ok := m.(httpsfv.Item)
		if !ok {
			return nil, errorf(ErrMalformed, "Content-Digest member %q is not an item", name)
		}
		b, ok := it.Value.([]byte)
		if !ok {
			return nil, errorf(ErrMalformed, "Content-Digest member %q is not a byte sequence", name)
		}
		out[name] = b
	}
	return out, nil
}

// VerifyContentDigest recomputes every supported digest in the field over
// body and compares in constant time. It fails with ErrDigestMismatch when a
// supported digest differs or none is present, and with ErrMalformed when
// the field cannot be parsed.
func VerifyContentDigest(values []string, body []byte) error {
	digests, err := ParseContentDigest(values)
	if err != nil {
		return err
	}
	checked := 0
	for _, alg := range []string{DigestSHA256, DigestSHA512} {
		got, ok := digests[alg]
		if !ok {
			continue
		}
		want, _ := digestOf(alg, body)
		// ConstantTimeCompare also returns 0 for a length mismatch.
		if subtle.ConstantTimeCompare(got, want) != 1 {
			return errorf(ErrDigestMismatch, "%s digest does not match the body", alg)
		}
		checked++
	}
	if checked == 0 {
		return errorf(ErrDigestMismatch, "Content-Digest has no sha-256 or sha-512 member")
	}
	return nil
}
