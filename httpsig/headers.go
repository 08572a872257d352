package httpsig

import (
	"github.com/dunglas/httpsfv"
)

// Header names of RFC 9421 §4.
const (
	SignatureInputHeader = "Signature-Input"
	SignatureHeader      = "Signature"
)

// DefaultLabel is the signature label UCP and BCP use.
const DefaultLabel = "sig1"

// ParseSignatureInput parses the Signature-Input field lines: a Dictionary
// whose members are inner lists of component identifiers with signature
// parameters. Members are returned in field order. No field lines yield an
// empty result; any syntax or rule violation yields ErrMalformed.
func ParseSignatureInput(values []string) ([]SignatureParams, error) {
	if len(values) == 0 {
		return nil, nil
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, wrapError(ErrMalformed, err, "Signature-Input")
	}
	names := d.Names()
	if len(names) > maxSignatures {
		return nil, errorf(ErrMalformed, "Signature-Input has more than %d signatures", maxSignatures)
	}
	out := make([]SignatureParams, 0, len(names))
	for _, label := range names {
		m, _ := d.Get(label)
		p, err := parseSignatureParams(label, m)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseSignature parses the Signature field lines: a Dictionary of Byte
// Sequences keyed by label.
func ParseSignature(values []string) (map[string][]byte, error) {
	if len(values) == 0 {
		return map[string][]byte{}, nil
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, wrapError(ErrMalformed, err, "Signature")
	}
	if len(d.Names()) > maxSignatures {
		return nil, errorf(ErrMalformed, "Signature has more than %d signatures", maxSignatures)
	}
	out := make(map[string][]byte, len(d.Names()))
	for _, label := range d.Names() {
		m, _ := d.Get(label)
		it, ok := m.(httpsfv.Item)
		if !ok {
			return nil, &Error{Kind: ErrMalformed, Label: label, Detail: "Signature member is not an item"}
		}
		b, ok := it.Value.([]byte)
		if !ok {
			return nil, &Error{Kind: ErrMalformed, Label: label, Detail: "Signature member is not a byte sequence"}
		}
		out[label] = b
	}
	return out, nil
}

// FormatSignatureInput serialises signature parameters as a Signature-Input
// field value, one member per element, in order.
func FormatSignatureInput(params ...SignatureParams) (string, error) {
	d := httpsfv.NewDictionary()
	for _, p := range params {
		p, err := p.resolved()
		if err != nil {
			return "", err
		}
		d.Add(p.Label, p.inner)
	}
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", wrapError(ErrMalformed, err, "Signature-Input")
	}
	return s, nil
}

// FormatSignature serialises one Signature member: label=:base64:.
func FormatSignature(label string, sig []byte) (string, error) {
	d := httpsfv.NewDictionary()
	d.Add(label, httpsfv.NewItem(sig))
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", wrapError(ErrMalformed, err, "Signature")
	}
	return s, nil
}

// validLabel reports whether label is a structured-field key (RFC 8941
// §3.1.2), the only form a signature label can take.
func validLabel(label string) bool {
	if label == "" || !(label[0] >= 'a' && label[0] <= 'z' || label[0] == '*') {
		return false
	}
	for i := 1; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			return false
		}
	}
	return true
}

// setMember adds or replaces one label in a dictionary field, keeping every
// other signature already on the message (RFC 9421 §4.3 allows several).
func setMember(values []string, label string, m httpsfv.Member) (string, error) {
	d := httpsfv.NewDictionary()
	if len(values) > 0 {
		var err error
		if d, err = httpsfv.UnmarshalDictionary(values); err != nil {
			return "", wrapError(ErrMalformed, err, "existing signature field")
		}
	}
	d.Add(label, m)
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", wrapError(ErrMalformed, err, "signature field (label %q)", label)
	}
	return s, nil
}
