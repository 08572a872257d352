package httpsig

import (
	"time"

	"github.com/dunglas/httpsfv"
)

// Limits that keep a hostile Signature-Input from making the verifier do
// unbounded work (key lookups, base construction, signature checks).
const (
	maxSignatures = 16
	maxComponents = 64
)

// SignatureParams is one Signature-Input member (RFC 9421 §4.1): the
// covered components and the signature parameters of one signature.
//
// Values returned by ParseSignatureInput keep their exact received
// serialisation (parameter order, unknown parameters), which is what the
// signature covers; changing their exported fields does not change Value.
// A SignatureParams built by hand is serialised from its fields.
type SignatureParams struct {
	Label      string
	Components []string  // serialised component identifiers, in order
	Created    time.Time // zero when absent
	Expires    time.Time // zero when absent
	KeyID      string
	Alg        string // RFC 9421 algorithm name, e.g. "ecdsa-p256-sha256"
	Nonce      string
	Tag        string

	comps  []component
	inner  httpsfv.InnerList
	value  string // serialised inner list, the @signature-params value
	parsed bool
}

// Value returns the @signature-params component value: the serialised
// inner list with its parameters.
func (p SignatureParams) Value() (string, error) {
	if p.parsed {
		return p.value, nil
	}
	q, err := p.built()
	if err != nil {
		return "", err
	}
	return q.value, nil
}

// parseSignatureParams validates one Signature-Input member.
func parseSignatureParams(label string, m httpsfv.Member) (SignatureParams, error) {
	il, ok := m.(httpsfv.InnerList)
	if !ok {
		return SignatureParams{}, errorf(ErrMalformed, "Signature-Input member %q is not an inner list", label)
	}
	if il.Params == nil {
		il.Params = httpsfv.NewParams()
	}
	if len(il.Items) > maxComponents {
		return SignatureParams{}, errorf(ErrMalformed, "Signature-Input member %q covers more than %d components", label, maxComponents)
	}
	p := SignatureParams{Label: label, inner: il, parsed: true}
	for _, it := range il.Items {
		c, err := parseComponentItem(it)
		if err != nil {
			return SignatureParams{}, withLabel(err, label)
		}
		if err := p.add(c); err != nil {
			return SignatureParams{}, withLabel(err, label)
		}
		p.Components = append(p.Components, c.id)
	}
	for _, name := range il.Params.Names() {
		v, _ := il.Params.Get(name)
		switch name {
		case "created", "expires":
			n, ok := v.(int64)
			if !ok {
				return SignatureParams{}, &Error{Kind: ErrMalformed, Label: label, Detail: "parameter " + name + " must be an integer"}
			}
			if name == "created" {
				p.Created = time.Unix(n, 0)
			} else {
				p.Expires = time.Unix(n, 0)
			}
		case "keyid", "alg", "nonce", "tag":
			s, ok := v.(string)
			if !ok {
				return SignatureParams{}, &Error{Kind: ErrMalformed, Label: label, Detail: "parameter " + name + " must be a string"}
			}
			switch name {
			case "keyid":
				p.KeyID = s
			case "alg":
				p.Alg = s
			case "nonce":
				p.Nonce = s
			case "tag":
				p.Tag = s
			}
		}
		// Other parameters are kept: they are covered via @signature-params.
	}
	v, err := httpsfv.Marshal(il)
	if err != nil {
		return SignatureParams{}, &Error{Kind: ErrMalformed, Label: label, Detail: "cannot serialise signature parameters", Err: err}
	}
	p.value = v
	return p, nil
}

// add appends a covered component, rejecting repeats (RFC 9421 §2.5: a
// component identifier may be covered only once).
func (p *SignatureParams) add(c component) error {
	for _, o := range p.comps {
		if o.same(c) {
			return errorf(ErrMalformed, "component %s covered twice", c.id)
		}
	}
	p.comps = append(p.comps, c)
	return nil
}

// built serialises hand-made params; parameters are emitted in the order
// created, expires, keyid, alg, nonce, tag (the order of RFC 9421's examples).
func (p SignatureParams) built() (SignatureParams, error) {
	q := SignatureParams{Label: p.Label, Created: p.Created, Expires: p.Expires, KeyID: p.KeyID, Alg: p.Alg, Nonce: p.Nonce, Tag: p.Tag}
	if len(p.Components) > maxComponents {
		return SignatureParams{}, errorf(ErrMalformed, "more than %d covered components", maxComponents)
	}
	for _, s := range p.Components {
		c, err := parseComponentString(s)
		if err != nil {
			return SignatureParams{}, err
		}
		if err := q.add(c); err != nil {
			return SignatureParams{}, err
		}
		q.Components = append(q.Components, c.id)
	}
	il := httpsfv.InnerList{Items: make([]httpsfv.Item, 0, len(q.comps)), Params: httpsfv.NewParams()}
	for _, c := range q.comps {
		il.Items = append(il.Items, c.item)
	}
	if !p.Created.IsZero() {
		il.Params.Add("created", p.Created.Unix())
	}
	if !p.Expires.IsZero() {
		il.Params.Add("expires", p.Expires.Unix())
	}
	for _, kv := range [][2]string{{"keyid", p.KeyID}, {"alg", p.Alg}, {"nonce", p.Nonce}, {"tag", p.Tag}} {
		if kv[1] != "" {
			il.Params.Add(kv[0], kv[1])
		}
	}
	v, err := httpsfv.Marshal(il)
	if err != nil {
		return SignatureParams{}, wrapError(ErrMalformed, err, "cannot serialise signature parameters")
	}
	q.inner, q.value, q.parsed = il, v, true
	return q, nil
}

// resolved returns params ready for base construction.
func (p SignatureParams) resolved() (SignatureParams, error) {
	if p.parsed {
		return p, nil
	}
	return p.built()
}
