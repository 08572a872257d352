package httpsig

import (
	"bytes"
	"net/http"
)

// buildBase creates the signature base (RFC 9421 §2.5): one line
// `<component identifier>: <value>` per covered component, in order, then
// the @signature-params line, joined by LF without a trailing newline.
func buildBase(m *message, p SignatureParams) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range p.comps {
		var (
			v   string
			err error
		)
		if c.derived() {
			v, err = m.derivedValue(c)
		} else {
			v, err = m.fieldValue(c)
		}
		if err != nil {
			return nil, err
		}
		if i := bytes.IndexFunc([]byte(v), isBaseControl); i >= 0 {
			// A CR or LF would let a value forge extra base lines.
			return nil, errorf(ErrMalformed, "component %s contains control character %#x", c.id, v[i])
		}
		b.WriteString(c.id)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(p.value)
	return b.Bytes(), nil
}

func isBaseControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// RequestSignatureBase returns the signature base that p covers for r. It is
// the exact byte string that is signed, exposed for debugging interop
// problems and for test vectors.
func RequestSignatureBase(r *http.Request, p SignatureParams) ([]byte, error) {
	m, err := requestMessage(r, "")
	if err != nil {
		return nil, err
	}
	if p, err = p.resolved(); err != nil {
		return nil, err
	}
	return buildBase(m, p)
}

// ResponseSignatureBase returns the signature base that p covers for a
// response with header h and status; req (optional) supplies components
// marked with the req parameter.
func ResponseSignatureBase(h http.Header, status int, req *http.Request, p SignatureParams) ([]byte, error) {
	m, err := responseWithRequest(h, status, req, "")
	if err != nil {
		return nil, err
	}
	if p, err = p.resolved(); err != nil {
		return nil, err
	}
	return buildBase(m, p)
}

func responseWithRequest(h http.Header, status int, req *http.Request, scheme string) (*message, error) {
	var rm *message
	if req != nil {
		var err error
		if rm, err = requestMessage(req, scheme); err != nil {
			return nil, err
		}
	}
	return responseMessage(h, status, rm), nil
}
