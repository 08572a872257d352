package httpsig

import (
	"strings"

	"github.com/dunglas/httpsfv"
)

// Derived component names (RFC 9421 §2.2). @status is the only one that
// belongs to responses; the rest describe requests.
var derivedComponents = map[string]bool{
	"@method":         true,
	"@target-uri":     true,
	"@authority":      true,
	"@scheme":         true,
	"@request-target": true,
	"@path":           true,
	"@query":          true,
	"@query-param":    true,
	"@status":         true,
}

// component is one parsed component identifier (RFC 9421 §2): a name plus
// the parameters sf, key, bs, req, tr and name. id keeps the exact
// serialisation, parameter order included, because that is what the
// signature base line must start with.
type component struct {
	name    string
	id      string
	item    httpsfv.Item
	sf      bool
	bs      bool
	req     bool
	tr      bool
	hasKey  bool
	key     string
	hasName bool
	qname   string
}

func (c component) String() string { return c.id }

func (c component) derived() bool { return strings.HasPrefix(c.name, "@") }

// parseComponentItem validates a component identifier taken from a
// Signature-Input inner list. Unknown parameters are rejected rather than
// ignored: silently dropping one would let two different identifiers
// collide in the signature base.
func parseComponentItem(it httpsfv.Item) (component, error) {
	name, ok := it.Value.(string)
	if !ok {
		return component{}, errorf(ErrMalformed, "component identifier must be a string")
	}
	params := it.Params
	if params == nil {
		params = httpsfv.NewParams()
	}
	c := component{name: name}
	for _, p := range params.Names() {
		v, _ := params.Get(p)
		switch p {
		case "sf", "bs", "req", "tr":
			if b, ok := v.(bool); !ok || !b {
				return component{}, errorf(ErrMalformed, "component %q: parameter %q must be boolean true", name, p)
			}
			switch p {
			case "sf":
				c.sf = true
			case "bs":
				c.bs = true
			case "req":
				c.req = true
			case "tr":
				c.tr = true
			}
		case "key", "name":
			s, ok := v.(string)
			if !ok {
				return component{}, errorf(ErrMalformed, "component %q: parameter %q must be a string", name, p)
			}
			if p == "key" {
				c.hasKey, c.key = true, s
			} else {
				c.hasName, c.qname = true, s
			}
		default:
			return component{}, errorf(ErrMalformed, "component %q: unknown parameter %q", name, p)
		}
	}
	if err := c.validate(); err != nil {
		return component{}, err
	}
	c.item = httpsfv.Item{Value: name, Params: params}
	id, err := httpsfv.Marshal(c.item)
	if err != nil {
		return component{}, wrapError(ErrMalformed, err, "component %q", name)
	}
	c.id = id
	return c, nil
}

func (c component) validate() error {
	switch {
	case c.name == "":
		return errorf(ErrMalformed, "empty component name")
	case c.name == "@signature-params":
		return errorf(ErrMalformed, "@signature-params must not be a covered component")
	case c.derived():
		if !derivedComponents[c.name] {
			return errorf(ErrMalformed, "unknown derived component %q", c.name)
		}
		if c.sf || c.bs || c.hasKey || c.tr {
			return errorf(ErrMalformed, "derived component %q takes no sf, bs, key or tr parameter", c.name)
		}
		if (c.name == "@query-param") != c.hasName {
			return errorf(ErrMalformed, "the name parameter is required on @query-param and only there (component %q)", c.name)
		}
	default:
		if !isFieldName(c.name) {
			return errorf(ErrMalformed, "component %q is not a lower-case field name", c.name)
		}
		if c.hasName {
			return errorf(ErrMalformed, "field %q takes no name parameter", c.name)
		}
		if c.bs && (c.sf || c.hasKey) {
			return errorf(ErrMalformed, "field %q: bs cannot be combined with sf or key", c.name)
		}
		if c.tr {
			return errorf(ErrMalformed, "field %q: trailer fields (tr) are not supported", c.name)
		}
	}
	return nil
}

// isFieldName reports whether s is a lower-case HTTP token (RFC 9110 §5.1).
func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ParseComponent parses a component identifier as written in configuration:
// either the serialised form (`"@query-param";name="Pet"`) or a bare name
// with optional parameters (`@method`, `Content-Type`, `example-dict;key="a"`).
// Field names are lower-cased. It is exposed so callers can validate
// configuration early; Signer and Verifier call it for every string.
func ParseComponent(s string) (string, error) {
	c, err := parseComponentString(s)
	if err != nil {
		return "", err
	}
	return c.id, nil
}

func parseComponentString(s string) (component, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return component{}, errorf(ErrMalformed, "empty component identifier")
	}
	if s[0] != '"' {
		name, rest, hasParams := strings.Cut(s, ";")
		q, err := httpsfv.Marshal(httpsfv.NewItem(strings.TrimSpace(name)))
		if err != nil {
			return component{}, wrapError(ErrMalformed, err, "component identifier %q", s)
		}
		if hasParams {
			q += ";" + rest
		}
		s = q
	}
	it, err := httpsfv.UnmarshalItem([]string{s})
	if err != nil {
		return component{}, wrapError(ErrMalformed, err, "component identifier %q", s)
	}
	if name, ok := it.Value.(string); ok && !strings.HasPrefix(name, "@") {
		it.Value = strings.ToLower(name)
	}
	return parseComponentItem(it)
}

// same reports whether two identifiers denote the same component:
// equal names and equal parameter sets, whatever the parameter order.
func (c component) same(o component) bool {
	return c.name == o.name && c.sf == o.sf && c.bs == o.bs && c.req == o.req && c.tr == o.tr &&
		c.hasKey == o.hasKey && c.key == o.key && c.hasName == o.hasName && c.qname == o.qname
}

// satisfies reports whether covering c fulfils requirement r. A plain field
// requirement is also met by its sf or bs serialisation (same bytes, other
// encoding) but not by a single dictionary member (key) or by the request's
// copy of the field (req).
func (c component) satisfies(r component) bool {
	if c.name != r.name || c.req != r.req || c.tr != r.tr ||
		c.hasKey != r.hasKey || c.key != r.key || c.hasName != r.hasName || c.qname != r.qname {
		return false
	}
	return (!r.sf || c.sf) && (!r.bs || c.bs)
}
