// Package derivation turns the upstream UCP 2026-04-08 JSON Schemas into the
// BCP schemas embedded by package bcpschema. It is a pure function of the
// upstream tree so a test can re-run it and detect drift in the committed copy.
package derivation

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// BaseURL is the BCP URL prefix that corresponds to the root of the derived
// tree (upstream's source/ directory): schemas/x.json is published at
// BaseURL+"schemas/x.json", exactly as the binding document references them.
const BaseURL = "https://bcp.dev.br/draft/"

// Upstream identifies the pinned upstream release recorded in NOTICE.
const (
	UpstreamRepo    = "https://github.com/Universal-Commerce-Protocol/ucp"
	UpstreamTag     = "v2026-04-08"
	UpstreamCommit  = "a2d8bf0b8f5a6fc790f677899c2c7da0684fe33d"
	UpstreamRelease = "2026-04-08"
)

// rule is one textual rename applied to every JSON string and object key.
type rule struct {
	name string
	re   *regexp.Regexp
	repl string
}

// rules are applied in order. The JSON member "ucp" and the resolver keywords
// ucp_request / ucp_response / ucp_shared_request are deliberately untouched:
// architecture §2 keeps the wire key "ucp", and the annotations are tooling
// vocabulary shared with upstream's ucp-schema resolver.
var rules = []rule{
	// Every ucp.dev URL (schemas, specification, services; dated or "draft"
	// variants) moves under the BCP draft tree.
	{"url https://ucp.dev/ -> https://bcp.dev.br/draft/", regexp.MustCompile(`https://ucp\.dev/(?:(?:draft|\d{4}-\d{2}-\d{2})/)?`), BaseURL},
	// Reverse-domain names: capabilities, services, signals, consent purposes,
	// scopes. The left guard keeps e.g. "foo.dev.ucp.x" (a foreign name) intact.
	{"namespace dev.ucp. -> br.dev.bcp.", regexp.MustCompile(`(^|[^A-Za-z0-9_.-])dev\.ucp\.`), "${1}br.dev.bcp."},
	{"header UCP-Agent -> BCP-Agent", regexp.MustCompile(`\bUCP-Agent\b`), "BCP-Agent"},
	{"discovery /.well-known/ucp -> /.well-known/bcp", regexp.MustCompile(`/\.well-known/ucp\b`), "/.well-known/bcp"},
	// Protocol name in titles and descriptions ("UCP Metadata" -> "BCP Metadata").
	{"prose UCP -> BCP", regexp.MustCompile(`\bUCP\b`), "BCP"},
}

// leftovers must not survive the renames; finding one means upstream grew a
// new spelling that needs a rule, so derivation fails instead of leaking it.
var leftovers = regexp.MustCompile(`ucp\.dev|(^|[^A-Za-z0-9_.-])dev\.ucp\.|\bUCP\b|well-known/ucp\b`)

// patch is a deliberate BCP deviation from upstream, applied after renaming
// and listed in NOTICE.
type patch struct {
	file string
	desc string
	fn   func(doc *node) error
}

var patches = []patch{
	{
		file: "schemas/shopping/types/fulfillment_destination.json",
		desc: "oneOf -> anyOf: shipping_destination is an open object whose only required member is id, so every " +
			"retail_location (id + name) also matches it and oneOf rejected all pickup destinations (requests and responses); " +
			"upstream main fixed this with a type discriminator that the 2026-04-08 shape lacks",
		fn: func(doc *node) error {
			for i := range doc.members {
				if doc.members[i].key == "oneOf" {
					doc.members[i].key = "anyOf"
					return nil
				}
			}
			return fmt.Errorf("no oneOf member")
		},
	},
	{
		file: "schemas/shopping/ap2_mandate.json",
		desc: "checkout_mandate pattern: upstream's allows no \".\" after a \"~\", so no SD-JWT with key binding " +
			"(<issuer JWT>~<disclosure>~...~<key-binding JWT>, RFC 9901), which the description and the platform require, " +
			"and no SD-JWT ending in \"~\" matched it; an optional \"~\" and key-binding JWT may now end the string " +
			"(what upstream's pattern accepted still matches)",
		fn: func(doc *node) error {
			p := doc.get("$defs").get("checkout_mandate").get("pattern")
			if p == nil || p.kind != kindString {
				return fmt.Errorf("no $defs.checkout_mandate.pattern")
			}
			if p.str != upstreamMandatePattern {
				return fmt.Errorf("$defs.checkout_mandate.pattern is %q, not upstream's %q: review the patch", p.str, upstreamMandatePattern)
			}
			p.str = MandatePattern
			return nil
		},
	},
}

// MandatePattern is the derived ap2_mandate.json's checkout_mandate
// pattern: an issuer JWT, disclosures, then optionally "~" and optionally
// a key-binding JWT (three dot-separated base64url parts).
const MandatePattern = `^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+(~[A-Za-z0-9_-]+)*(~([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)?)?$`

// upstreamMandatePattern is UCP 2026-04-08's checkout_mandate pattern.
const upstreamMandatePattern = `^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+(~[A-Za-z0-9_-]+)*$`

// Result is the derived tree: relative path (slash-separated) -> file bytes.
type Result struct {
	Files map[string][]byte
	// Log records what happened (rule hits, $id fixes, patches) for the CLI.
	Log []string
}

// Derive reads the upstream tree at src (a release's source/ directory) and the
// upstream license file, and returns the BCP tree.
func Derive(src, licenseFile string) (*Result, error) {
	var inputs []string
	err := filepath.WalkDir(filepath.Join(src, "schemas"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			inputs = append(inputs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	inputs = append(inputs, "discovery/profile_schema.json")
	sort.Strings(inputs)

	res := &Result{Files: map[string][]byte{}}
	hits := make([]int, len(rules))
	for _, rel := range inputs {
		data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		doc, err := parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		if doc.kind != kindObject {
			return nil, fmt.Errorf("%s: not a JSON object", rel)
		}
		renameNode(doc, hits)
		if err := fixID(doc, rel, res); err != nil {
			return nil, err
		}
		for _, p := range patches {
			if p.file == rel {
				if err := p.fn(doc); err != nil {
					return nil, fmt.Errorf("%s: patch: %w", rel, err)
				}
				res.Log = append(res.Log, fmt.Sprintf("patch %s: %s", rel, p.desc))
			}
		}
		if bad := findLeftover(doc); bad != "" {
			return nil, fmt.Errorf("%s: unrenamed upstream name in %q", rel, bad)
		}
		res.Files[rel] = render(doc)
	}
	for i, r := range rules {
		res.Log = append(res.Log, fmt.Sprintf("rule %q: %d replacements", r.name, hits[i]))
	}

	license, err := os.ReadFile(licenseFile)
	if err != nil {
		return nil, err
	}
	res.Files["LICENSE-upstream"] = license
	res.Files["NOTICE"] = notice(len(inputs))
	return res, nil
}

// fixID makes every $id equal BaseURL+rel. Relative $refs are resolved against
// $id, so an $id that disagrees with the file's place in the tree breaks them.
// Upstream's discovery/profile_schema.json declares .../schemas/discovery/profile.json
// while living in discovery/ and referencing "../schemas/ucp.json"; under its
// own $id that ref points at .../schemas/schemas/ucp.json, which does not exist.
func fixID(doc *node, rel string, res *Result) error {
	want := BaseURL + rel
	id := doc.get("$id")
	if id == nil || id.kind != kindString {
		return fmt.Errorf("%s: missing $id", rel)
	}
	if id.str != want {
		res.Log = append(res.Log, fmt.Sprintf("$id %s: %s -> %s (upstream $id did not match the file location)", rel, id.str, want))
		id.str = want
	}
	return nil
}

func renameNode(n *node, hits []int) {
	switch n.kind {
	case kindString:
		n.str = renameString(n.str, hits)
	case kindArray:
		for _, it := range n.items {
			renameNode(it, hits)
		}
	case kindObject:
		for i := range n.members {
			n.members[i].key = renameString(n.members[i].key, hits)
			renameNode(n.members[i].value, hits)
		}
	}
}

func renameString(s string, hits []int) string {
	for i, r := range rules {
		if m := r.re.FindAllStringIndex(s, -1); len(m) > 0 {
			hits[i] += len(m)
			s = r.re.ReplaceAllString(s, r.repl)
		}
	}
	return s
}

func findLeftover(n *node) string {
	switch n.kind {
	case kindString:
		if leftovers.MatchString(n.str) {
			return n.str
		}
	case kindArray:
		for _, it := range n.items {
			if s := findLeftover(it); s != "" {
				return s
			}
		}
	case kindObject:
		for _, m := range n.members {
			if leftovers.MatchString(m.key) {
				return m.key
			}
			if s := findLeftover(m.value); s != "" {
				return s
			}
		}
	}
	return ""
}

func notice(n int) []byte {
	var b bytes.Buffer
	b.WriteString("BCP JSON Schemas, derived from the Universal Commerce Protocol (UCP)\n\n")
	b.WriteString(wrap(fmt.Sprintf("The %d JSON Schema files under schemas/ and discovery/ in this directory are "+
		"derived from the machine-readable specification of the Universal Commerce Protocol, release %s "+
		"(%s, tag %s, commit %s), licensed under the Apache License, Version 2.0; a copy of the license is "+
		"in LICENSE-upstream.", n, UpstreamRelease, UpstreamRepo, UpstreamTag, UpstreamCommit), ""))
	b.WriteString("\nThey were changed mechanically by protocol/bcpschema/internal/derive:\n")
	for _, r := range rules {
		b.WriteString(wrap("- rename "+r.name, "  "))
	}
	b.WriteString(wrap("- every $id is "+BaseURL+"<path in this directory>, so relative $refs resolve both on "+
		"disk and by URL (upstream's discovery/profile_schema.json declared "+
		"https://ucp.dev/schemas/discovery/profile.json, under which its \"../schemas/ucp.json\" reference "+
		"pointed nowhere)", "  "))
	b.WriteString(wrap("- reformatted with two-space indentation; member order is upstream's", "  "))
	for _, p := range patches {
		b.WriteString(wrap("- patch "+p.file+": "+p.desc, "  "))
	}
	b.WriteString("\n")
	b.WriteString(wrap("Unchanged on purpose: the JSON member \"ucp\" (BCP keeps the wire key) and the resolver "+
		"annotations ucp_request, ucp_response and ucp_shared_request.", ""))
	b.WriteString("\nRegenerate from the repository root:\n\n" +
		"  go run ./protocol/bcpschema/internal/derive \\\n" +
		"    -src ../shared/reference/ucp/release-" + UpstreamRelease + "/source \\\n" +
		"    -out protocol/bcpschema/schemas\n")
	return b.Bytes()
}

// wrap fills text to 80 columns; continuation lines get cont as indent.
func wrap(text, cont string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && line+1+len(w) > 80 {
			b.WriteString("\n" + cont)
			line = len(cont)
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	b.WriteByte('\n')
	return b.String()
}

// Write replaces the derived files under out with res and removes files that
// are no longer produced, so the committed tree is exactly the derivation.
func Write(out string, res *Result) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var stale []string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil {
			return err
		}
		if _, ok := res.Files[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(res.Files))
	for rel := range res.Files {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, res.Files[rel], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Diff compares res with the tree at dir and describes every difference.
func Diff(dir string, res *Result) ([]string, error) {
	var diffs []string
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		want, ok := res.Files[rel]
		if !ok {
			diffs = append(diffs, rel+": not produced by the derivation")
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			diffs = append(diffs, rel+": content differs")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for rel := range res.Files {
		if !seen[rel] {
			diffs = append(diffs, rel+": missing")
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}
