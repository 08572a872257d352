// Package httpsig implements HTTP Message Signatures (RFC 9421) and the
// Content-Digest field (RFC 9530) as profiled by UCP/BCP, on top of
// github.com/dunglas/httpsfv for structured fields.
//
// # Signing
//
// A Signer covers a list of component identifiers and adds the
// Signature-Input and Signature fields:
//
//	s := &httpsig.Signer{Key: priv, KeyID: "platform-2026",
//		CoverIfPresent: []string{"ucp-agent", "idempotency-key"}}
//	err := s.SignRequest(req, body)               // label "sig1"
//	err = s.SignResponse(w.Header(), 200, body, nil) // before WriteHeader
//
// With nil Components the Signer covers the UCP/BCP defaults (@method,
// @authority, @path, @query when present, content-digest and content-type
// when there is a body; @status for responses). Whenever content-digest is
// covered the Content-Digest field is recomputed over the body bytes.
//
// # Verifying
//
// A Verifier resolves keyids through a KeyResolver (KeySet.Resolve for a
// profile's JWK Set) and enforces a closed set of required components:
//
//	v := &httpsig.Verifier{
//		Keys:               keys.Resolve,
//		Requirements:       httpsig.RequestRequirements("ucp-agent"),
//		RejectAlgParameter: true,
//	}
//	res, err := v.VerifyRequest(ctx, r, body)
//
// The request is authenticated when at least one applicable signature
// verifies. Errors wrap one sentinel the edge maps to a protocol code:
// ErrSignatureMissing (signature_missing), ErrSignatureInvalid
// (signature_invalid), ErrKeyNotFound (key_not_found), ErrDigestMismatch
// (digest_mismatch), ErrAlgorithmUnsupported (algorithm_unsupported) and
// ErrMalformed (unparsable fields or keys). Errors returned by the
// KeyResolver that carry none of these pass through unchanged.
//
// # Algorithms and keys
//
// ES256 (mandatory), ES384 and EdDSA (Ed25519). ECDSA signature values are
// the raw big-endian r||s concatenation (64 or 96 bytes); DER encodings are
// rejected by length before any verification. The algorithm is always
// derived from the key (JWK kty/crv); an alg parameter, if allowed at all,
// must agree with it. JWK parses public EC and OKP keys, PublicJWK and
// Thumbprint (RFC 7638) produce them and their kids.
//
// # Signature base
//
// Supported components: @method, @authority (lower-cased, default port
// removed), @path, @query, @query-param, @target-uri, @scheme,
// @request-target, @status, and header fields with the sf, key, bs and req
// parameters (tr is rejected). Field values are trimmed, obs-folds
// unfolded, and multiple lines joined with ", ". Values containing control
// characters are rejected so they cannot forge base lines. No input makes
// the package panic.
package httpsig
