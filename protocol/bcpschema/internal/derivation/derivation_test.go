package derivation

import "testing"

func TestRenameString(t *testing.T) {
	cases := map[string]string{
		"dev.ucp.shopping.checkout":                      "br.dev.bcp.shopping.checkout",
		"e.g. 'dev.ucp.shopping.order:read'":             "e.g. 'br.dev.bcp.shopping.order:read'",
		"com.example.dev.ucp.thing":                      "com.example.dev.ucp.thing", // foreign namespace
		"https://ucp.dev/schemas/shopping/checkout.json": "https://bcp.dev.br/draft/schemas/shopping/checkout.json",
		"https://ucp.dev/specification/checkout":         "https://bcp.dev.br/draft/specification/checkout",
		"https://ucp.dev/2026-04-08/specification/ref":   "https://bcp.dev.br/draft/specification/ref",
		"https://ucp.dev/draft/schemas/ucp.json":         "https://bcp.dev.br/draft/schemas/ucp.json",
		"Maps to HTTP UCP-Agent header.":                 "Maps to HTTP BCP-Agent header.",
		"hosted at /.well-known/ucp; UCP profile":        "hosted at /.well-known/bcp; BCP profile",
		"the ucp member, ucp_request, UCPX, xUCP":        "the ucp member, ucp_request, UCPX, xUCP",
		"BCP metadata": "BCP metadata",
	}
	for in, want := range cases {
		if got := renameString(in, make([]int, len(rules))); got != want {
			t.Errorf("renameString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOrderedRoundTrip(t *testing.T) {
	in := `{"z":1,"a":[true,null,{"<&>":"—"}],"e":{},"n":1.50,"l":[]}`
	n, err := parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    {\n      \"<&>\": \"—\"\n    }\n  ],\n  \"e\": {},\n  \"n\": 1.50,\n  \"l\": []\n}\n"
	if got := string(render(n)); got != want {
		t.Errorf("render = %s", got)
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{} {}`, `[`} {
		if _, err := parse([]byte(bad)); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}
