package derivation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// node is an order-preserving JSON value. The derivation keeps upstream's key
// order so a derived file diffs line-by-line against its upstream original;
// encoding/json maps would sort keys and hide the actual renames in noise.
type node struct {
	kind    nodeKind
	members []member // object
	items   []*node  // array
	str     string   // string
	num     string   // number, verbatim
	boolean bool
}

type member struct {
	key   string
	value *node
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// get returns the member value for key, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// parse decodes one JSON document, rejecting duplicate keys and trailing data:
// both would make the derived output ambiguous.
func parse(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON document")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				if seen[key] {
					return nil, fmt.Errorf("duplicate key %q", key)
				}
				seen[key] = true
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, member{key, v})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: kindArray}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %q", t)
	case string:
		return &node{kind: kindString, str: t}, nil
	case json.Number:
		return &node{kind: kindNumber, num: t.String()}, nil
	case bool:
		return &node{kind: kindBool, boolean: t}, nil
	case nil:
		return &node{kind: kindNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// render pretty-prints n with two-space indentation and a trailing newline.
// HTML escaping is off so descriptions keep their literal '<', '>' and '&'.
func render(n *node) []byte {
	var b bytes.Buffer
	writeNode(&b, n, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func writeNode(b *bytes.Buffer, n *node, depth int) {
	switch n.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		if n.boolean {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case kindNumber:
		b.WriteString(n.num)
	case kindString:
		writeString(b, n.str)
	case kindArray:
		if len(n.items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, it := range n.items {
			indent(b, depth+1)
			writeNode(b, it, depth+1)
			if i < len(n.items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		indent(b, depth)
		b.WriteByte(']')
	case kindObject:
		if len(n.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range n.members {
			indent(b, depth+1)
			writeString(b, m.key)
			b.WriteString(": ")
			writeNode(b, m.value, depth+1)
			if i < len(n.members)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		indent(b, depth)
		b.WriteByte('}')
	}
}

func indent(b *bytes.Buffer, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
}

func writeString(b *bytes.Buffer, s string) {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail for a string
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
}
