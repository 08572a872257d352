package edge

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// RESTSchema is the OpenAPI document of the REST binding, as advertised in
// the profile's rest service entry; the edge serves the same document at
// {base}/bcp/rest/openapi.json.
const RESTSchema = "https://bcp.dev.br/draft/services/shopping/rest.openapi.json"

// restOpenAPI is DeriveOpenAPI applied to UCP release 2026-04-08
// services/shopping/rest.openapi.json; TestOpenAPIDrift re-derives it.
//
//go:embed openapi/rest.openapi.json
var restOpenAPI []byte

func openAPIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Content-Length", strconv.Itoa(len(restOpenAPI)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(restOpenAPI)
	})
}

// restPaths are the upstream operations this platform implements.
var restPaths = []string{"/checkout-sessions", "/checkout-sessions/{id}", "/checkout-sessions/{id}/complete", "/checkout-sessions/{id}/cancel", "/orders/{id}",
	"/catalog/search", "/catalog/lookup", "/catalog/product", "/carts", "/carts/{id}", "/carts/{id}/cancel"}

// openAPIRenames are the BCP renames of protocol/bcpschema's derivation
// (schemas/NOTICE), applied to every string and member name.
var openAPIRenames = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`https://ucp\.dev/(?:(?:draft|\d{4}-\d{2}-\d{2})/)?`), "https://bcp.dev.br/draft/"},
	{regexp.MustCompile(`(^|[^A-Za-z0-9_.-])dev\.ucp\.`), "${1}br.dev.bcp."},
	{regexp.MustCompile(`\bUCP-Agent\b`), "BCP-Agent"},
	{regexp.MustCompile(`/\.well-known/ucp\b`), "/.well-known/bcp"},
	{regexp.MustCompile(`\bUCP\b`), "BCP"},
}

// DeriveOpenAPI turns upstream's REST OpenAPI document into the one this
// platform implements:
//   - only the checkout-session, order, catalog and cart paths (restPaths), and only the
//     components they (and the webhooks) still reference;
//   - relative schema $refs (../../schemas/…) become absolute BCP schema
//     URLs (https://bcp.dev.br/draft/schemas/…);
//   - the BCP renames (UCP-Agent → BCP-Agent, dev.ucp. → br.dev.bcp., …);
//   - the server placeholder's default is {merchant}/bcp/rest;
//   - what the platform requires: Request-Id is optional (echoed when
//     sent), Idempotency-Key is required on complete and cancel and
//     optional on create and update.
//
// The output is indented JSON with sorted member names.
func DeriveOpenAPI(upstream []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(upstream, &doc); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	kept := map[string]any{}
	for _, p := range restPaths {
		v, ok := paths[p]
		if !ok {
			return nil, fmt.Errorf("upstream has no path %s", p)
		}
		kept[p] = v
	}
	doc["paths"] = kept
	comps, _ := doc["components"].(map[string]any)
	params, _ := comps["parameters"].(map[string]any)
	idem, ok := params["idempotency_key"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("upstream has no idempotency_key parameter")
	}
	optional := map[string]any{}
	for k, v := range idem {
		optional[k] = v
	}
	optional["required"] = false
	optional["description"] = "Honoured when sent: a retry with the same key and body gets the stored response; another body gets 409."
	params["idempotency_key_optional"] = optional
	if rid, ok := params["request_id"].(map[string]any); ok {
		rid["required"] = false
		rid["description"] = "For tracing; echoed in the response when sent."
	}
	for p, item := range kept {
		if p == "/checkout-sessions/{id}/complete" || p == "/checkout-sessions/{id}/cancel" || p == "/carts/{id}/cancel" {
			continue
		}
		for _, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			list, _ := o["parameters"].([]any)
			for _, prm := range list {
				if m, ok := prm.(map[string]any); ok && m["$ref"] == "#/components/parameters/idempotency_key" {
					m["$ref"] = "#/components/parameters/idempotency_key_optional"
				}
			}
		}
	}
	// The server placeholder points at the REST endpoint the profile lists.
	if servers, ok := doc["servers"].([]any); ok && len(servers) > 0 {
		if srv, ok := servers[0].(map[string]any); ok {
			if vars, ok := srv["variables"].(map[string]any); ok {
				if ep, ok := vars["endpoint"].(map[string]any); ok {
					ep["default"] = "https://merchant.example.com" + restBase
				}
			}
		}
	}
	// Prune components nothing references any more (to a fixed point).
	for {
		refs := map[string]bool{}
		collectRefs(map[string]any{"paths": doc["paths"], "webhooks": doc["webhooks"], "components": comps}, refs)
		removed := false
		for _, kind := range []string{"schemas", "parameters", "headers"} {
			m, _ := comps[kind].(map[string]any)
			for name := range m {
				if !refs["#/components/"+kind+"/"+name] {
					delete(m, name)
					removed = true
				}
			}
		}
		// A component referenced only by a removed one goes in the next round.
		if !removed {
			break
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rename(doc)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func collectRefs(n any, refs map[string]bool) {
	switch v := n.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "$ref" {
				refs[s] = true
			}
			collectRefs(c, refs)
		}
	case []any:
		for _, c := range v {
			collectRefs(c, refs)
		}
	}
}

// rename applies the BCP renames to every string and member name and makes
// relative schema references absolute.
func rename(n any) any {
	switch v := n.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			c := v[k]
			if s, ok := c.(string); ok && k == "$ref" && strings.HasPrefix(s, "../../") {
				c = "https://bcp.dev.br/draft/" + strings.TrimPrefix(s, "../../")
			}
			out[renameString(k)] = rename(c)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = rename(c)
		}
		return out
	case string:
		return renameString(v)
	}
	return n
}

func renameString(s string) string {
	for _, r := range openAPIRenames {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}
