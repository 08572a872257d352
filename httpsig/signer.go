package httpsig

import (
	"crypto"
	"crypto/ed25519"
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

// Signer signs requests and responses. Its fields are read on every call
// and never modified, so one Signer may be shared across goroutines.
type Signer struct {
	// Key is an *ecdsa.PrivateKey (P-256, P-384), an ed25519.PrivateKey or
	// any crypto.Signer backed by such a key (HSM, KMS).
	Key crypto.Signer
	// KeyID is the keyid parameter: the JWK kid in the signer's profile.
	KeyID string
	// Alg, when set, must match the key; it is otherwise derived from Key.
	Alg Algorithm
	// Label defaults to DefaultLabel ("sig1").
	Label string

	// Components are the covered component identifiers, in order (see
	// ParseComponent for the syntax). Nil selects the UCP/BCP defaults:
	// for requests @method, @authority, @path, @query when the URL has a
	// query, content-digest and content-type when the body is non-empty;
	// for responses @status, content-digest and content-type when the body
	// is non-empty.
	Components []string
	// CoverIfPresent lists header fields appended to the covered components
	// when the message carries them (e.g. "ucp-agent", "idempotency-key").
	CoverIfPresent []string

	// Created returns the signing time; nil means time.Now. Returning the
	// zero time omits the created parameter.
	Created func() time.Time
	// Expires, when positive, sets expires = created + Expires.
	Expires time.Duration
	// Nonce, when set, supplies a fresh nonce parameter per signature.
	Nonce func() (string, error)
	// Tag, when set, is the tag parameter (e.g. "web-bot-auth").
	Tag string
	// IncludeAlg emits the alg parameter. UCP derives the algorithm from
	// the key and forbids alg, so it is off by default.
	IncludeAlg bool
}

// SignRequest signs r and adds Signature-Input and Signature fields,
// keeping signatures already present under other labels. body must be the
// exact bytes that will be sent: when content-digest is covered the
// Content-Digest field is (re)computed over it (sha-256).
func (s *Signer) SignRequest(r *http.Request, body []byte) error {
	m, err := requestMessage(r, "")
	if err != nil {
		return err
	}
	if r.Header == nil {
		r.Header = make(http.Header)
		m.header = r.Header
	}
	var defaults []string
	if s.Components == nil {
		defaults = []string{"@method", "@authority", "@path"}
		if m.hasQuery {
			defaults = append(defaults, "@query")
		}
		if len(body) > 0 {
			defaults = append(defaults, "content-digest", "content-type")
		}
	}
	return s.sign(m, defaults, body)
}

// SignResponse signs a response whose header is h (for a handler,
// w.Header() before WriteHeader) and whose status and body are given. req
// is needed only when a component uses the req parameter.
func (s *Signer) SignResponse(h http.Header, status int, body []byte, req *http.Request) error {
	if h == nil {
		return errorf(ErrMalformed, "nil response header")
	}
	m, err := responseWithRequest(h, status, req, "")
	if err != nil {
		return err
	}
	var defaults []string
	if s.Components == nil {
		defaults = []string{"@status"}
		if len(body) > 0 {
			defaults = append(defaults, "content-digest", "content-type")
		}
	}
	return s.sign(m, defaults, body)
}

func (s *Signer) sign(m *message, defaults []string, body []byte) error {
	if s.Key == nil {
		return errorf(ErrMalformed, "signer has no key")
	}
	if k, ok := s.Key.(ed25519.PrivateKey); ok && len(k) != ed25519.PrivateKeySize {
		// ed25519.PrivateKey.Sign panics on a wrong-length key.
		return errorf(ErrMalformed, "Ed25519 private key of %d bytes", len(k))
	}
	pub := publicOf(s.Key)
	if pub == nil {
		return errorf(ErrMalformed, "signer key has no public half")
	}
	alg, err := algorithmOf(pub)
	if err != nil {
		return err
	}
	if s.Alg != "" && s.Alg != alg {
		return errorf(ErrAlgorithmUnsupported, "signer Alg %s does not match its %s key", s.Alg, alg)
	}
	if s.KeyID == "" {
		return errorf(ErrMalformed, "signer has no KeyID")
	}
	label := s.Label
	if label == "" {
		label = DefaultLabel
	}
	if !validLabel(label) {
		return errorf(ErrMalformed, "label %q is not a structured-field key", label)
	}

	// Check existing signature fields before touching the message, so a
	// failure leaves it as it was.
	for _, name := range []string{SignatureInputHeader, SignatureHeader} {
		if v := m.header.Values(name); len(v) > 0 {
			if _, err := httpsfv.UnmarshalDictionary(v); err != nil {
				return wrapError(ErrMalformed, err, "existing %s field", name)
			}
		}
	}

	comps := s.Components
	if comps == nil {
		comps = defaults
	}
	p := SignatureParams{Label: label, Components: append([]string(nil), comps...), KeyID: s.KeyID, Tag: s.Tag}
	for _, f := range s.CoverIfPresent {
		c, err := parseComponentString(f)
		if err != nil {
			return err
		}
		if _, ok := m.headerValues(c.name); ok && !listed(p.Components, c) {
			p.Components = append(p.Components, c.id)
		}
	}
	now := time.Now
	if s.Created != nil {
		now = s.Created
	}
	created := now()
	p.Created = created
	if s.Expires > 0 && !created.IsZero() {
		p.Expires = created.Add(s.Expires)
	}
	if s.IncludeAlg {
		p.Alg = alg.HTTPSigName()
	}
	if s.Nonce != nil {
		if p.Nonce, err = s.Nonce(); err != nil {
			return err
		}
	}
	if p, err = p.built(); err != nil {
		return err
	}

	// Never trust a Content-Digest already on the message: recompute it
	// over the bytes actually sent.
	for _, c := range p.comps {
		if c.name == "content-digest" && !c.req {
			m.header.Set(ContentDigestHeader, ContentDigest(body))
			break
		}
	}
	base, err := buildBase(m, p)
	if err != nil {
		return withLabel(err, label)
	}
	sig, err := sign(s.Key, alg, base)
	if err != nil {
		return err
	}
	input, err := setMember(m.header.Values(SignatureInputHeader), label, p.inner)
	if err != nil {
		return err
	}
	value, err := setMember(m.header.Values(SignatureHeader), label, httpsfv.NewItem(sig))
	if err != nil {
		return err
	}
	m.header.Set(SignatureInputHeader, input)
	m.header.Set(SignatureHeader, value)
	return nil
}

// listed reports whether c already appears among identifiers.
func listed(ids []string, c component) bool {
	for _, id := range ids {
		if o, err := parseComponentString(id); err == nil && o.same(c) {
			return true
		}
	}
	return false
}
