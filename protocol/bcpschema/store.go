package bcpschema

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
)

// BaseURL is where the root of the derived tree is published: the file
// schemas/shopping/checkout.json has $id BaseURL+"schemas/shopping/checkout.json".
const BaseURL = "https://bcp.dev.br/draft/"

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// The derived tree (see schemas/NOTICE); regenerate with internal/derive.
//
//go:embed schemas
var schemaFS embed.FS

// FS returns the embedded derived tree: schemas/**, discovery/profile_schema.json,
// NOTICE and LICENSE-upstream, laid out as under BaseURL.
func FS() fs.FS {
	sub, err := fs.Sub(schemaFS, "schemas")
	if err != nil {
		panic(err) // static path; cannot fail
	}
	return sub
}

// store holds every embedded schema document, decoded, keyed by its $id.
// Documents are shared and must never be mutated.
type store struct {
	docs map[string]any
	// caps maps a capability name (the schemas' "name" member) to its document URL.
	caps map[string]string
}

var defaultStore = sync.OnceValues(func() (*store, error) { return loadStore(FS()) })

func loadStore(fsys fs.FS) (*store, error) {
	st := &store{docs: map[string]any{}, caps: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		doc, err := decodeJSON(data)
		if err != nil {
			return fmt.Errorf("bcpschema: %s: %w", p, err)
		}
		u := BaseURL + p
		m, ok := doc.(map[string]any)
		if !ok || m["$id"] != u {
			return fmt.Errorf("bcpschema: %s: $id must be %s", p, u)
		}
		st.docs[u] = doc
		if name, ok := m["name"].(string); ok {
			st.caps[name] = u
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// resolveRef resolves ref against base into a document URL and a JSON Pointer.
func resolveRef(base, ref string) (docURL, ptr string, err error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", "", fmt.Errorf("bcpschema: bad base %q: %w", base, err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", "", fmt.Errorf("bcpschema: bad $ref %q: %w", ref, err)
	}
	abs := b.ResolveReference(r)
	ptr = abs.Fragment
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return "", "", fmt.Errorf("bcpschema: $ref %q: only JSON Pointer fragments are supported", ref)
	}
	abs.Fragment, abs.RawFragment = "", ""
	return abs.String(), ptr, nil
}

// lookup returns the subschema at ptr inside the document docURL.
func (st *store) lookup(docURL, ptr string) (any, error) {
	doc, ok := st.docs[docURL]
	if !ok {
		return nil, fmt.Errorf("bcpschema: no schema document %s", docURL)
	}
	if ptr == "" {
		return doc, nil
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("bcpschema: %s#%s: no member %q", docURL, ptr, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("bcpschema: %s#%s: bad index %q", docURL, ptr, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("bcpschema: %s#%s: cannot descend into %T", docURL, ptr, cur)
		}
	}
	return cur, nil
}

// decodeJSON decodes one JSON value with json.Number for numbers (the
// validator needs exact integers: amounts go up to 2^53-1) and rejects
// trailing data.
func decodeJSON(data []byte) (any, error) {
	if v, ok := decodeFast(data); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid data after top-level JSON value")
	}
	return v, nil
}
