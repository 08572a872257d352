package httpsig

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
)

// KeySet is an immutable set of signature verification keys indexed by kid,
// built from a public JWK Set (a UCP/BCP profile's keys[] or signing_keys[]).
// It is safe for concurrent use.
type KeySet struct {
	keys map[string]keySetEntry
}

type keySetEntry struct {
	key PublicKey
	err error // non-nil for keys of unsupported type: lookups fail with it
}

// NewKeySet validates jwks and indexes the signature keys:
//   - any private member (d, p, q, dp, dq, qi, oth, k) rejects the whole set
//     with ErrMalformed: a profile must never publish private material;
//   - keys with use "enc" (or key_ops without "verify") are skipped;
//   - keys of unknown kty/crv are kept, and looking them up yields
//     ErrAlgorithmUnsupported, so they affect only signatures naming them;
//   - a missing kid, a duplicate kid among signature keys, bad coordinates
//     or an alg that does not pair with crv reject the set with ErrMalformed.
func NewKeySet(jwks []JWK) (*KeySet, error) {
	s := &KeySet{keys: make(map[string]keySetEntry, len(jwks))}
	for i, j := range jwks {
		if j.IsPrivate() {
			return nil, errorf(ErrMalformed, "key %d (kid %q) contains private key material", i, j.Kid)
		}
		if !j.forSigning() {
			continue
		}
		if j.Kid == "" {
			return nil, errorf(ErrMalformed, "key %d has no kid", i)
		}
		if _, dup := s.keys[j.Kid]; dup {
			return nil, errorf(ErrMalformed, "duplicate kid %q", j.Kid)
		}
		k, err := j.PublicKey()
		switch {
		case err == nil:
			s.keys[j.Kid] = keySetEntry{key: k}
		case errors.Is(err, ErrAlgorithmUnsupported):
			s.keys[j.Kid] = keySetEntry{err: err}
		default:
			return nil, err
		}
	}
	return s, nil
}

// ParseJWKSet parses a JWK Set document ({"keys": [...]}, RFC 7517 §5).
// Other top-level members are ignored, so a profile that publishes its keys
// in a top-level keys[] array can be passed as is.
func ParseJWKSet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys *[]JWK `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, asKind(err, ErrMalformed)
	}
	if doc.Keys == nil {
		return nil, errorf(ErrMalformed, "JWK Set has no keys member")
	}
	return NewKeySet(*doc.Keys)
}

// Lookup returns the key for kid.
func (s *KeySet) Lookup(kid string) (PublicKey, error) {
	if s == nil {
		return PublicKey{}, errorf(ErrKeyNotFound, "keyid %q", kid)
	}
	e, ok := s.keys[kid]
	if !ok {
		return PublicKey{}, errorf(ErrKeyNotFound, "keyid %q", kid)
	}
	if e.err != nil {
		return PublicKey{}, e.err
	}
	return e.key, nil
}

// Resolve implements KeyResolver; pass s.Resolve as Verifier.Keys.
func (s *KeySet) Resolve(_ context.Context, kid string) (PublicKey, error) {
	return s.Lookup(kid)
}

// KeyIDs lists the indexed kids in sorted order.
func (s *KeySet) KeyIDs() []string {
	if s == nil {
		return nil
	}
	ids := make([]string, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
