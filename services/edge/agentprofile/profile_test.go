package agentprofile

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFixturesAreValidPlatformProfiles(t *testing.T) {
	v := testValidator(t)
	for _, name := range []string{"agent_profile.json", "agent_profile_keys.json"} {
		if err := v.ValidatePlatformProfile(fixture(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := v.ValidatePlatformProfile(fixture(t, "agent_profile_invalid.json")); err == nil {
		t.Error("agent_profile_invalid.json validates")
	}
	if err := v.ValidateBusinessProfile(fixture(t, "business_profile.json")); err != nil {
		t.Errorf("business_profile.json: %v", err)
	}
}

func TestKeys(t *testing.T) {
	p, err := Parse("https://agente.example.com/p.json", fixture(t, "agent_profile_keys.json"), testValidator(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, k := range p.SigningKeys() {
		var m map[string]any
		if err := json.Unmarshal(k, &m); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, m["kid"].(string))
		for _, priv := range privateMembers {
			if _, ok := m[priv]; ok {
				t.Errorf("kept key %s carries %s", m["kid"], priv)
			}
		}
	}
	// signing_keys first, then keys; the ES256 key listed in both is one
	// key; the unknown ML-DSA key is left to the verifier.
	if want := []string{"rel-es256", "main-ed25519", "main-future"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	reasons := map[string]string{}
	for _, s := range p.SkippedKeys() {
		reasons[s.Kid] += s.Reason + ";"
	}
	for kid, want := range map[string]string{
		"rel-enc":        "use is not sig",
		"rel-private":    "private key material (d)",
		"main-sign-only": "key_ops",
		"main-mismatch":  "does not match",
		"main-ed25519":   "duplicate kid",
		"main-symmetric": "private key material (k)",
		"":               "no kid",
	} {
		if !strings.Contains(reasons[kid], want) {
			t.Errorf("skip reason for %q = %q, want it to contain %q", kid, reasons[kid], want)
		}
	}
	if !strings.Contains(reasons[""], "not a JSON object") {
		t.Errorf("string key not reported: %q", reasons[""])
	}
	if _, ok := p.SigningKey("rel-private"); ok {
		t.Error("a published private key is usable")
	}
	if k, ok := p.SigningKey("main-ed25519"); !ok || !bytes.Contains(k, []byte("11qYAYKx")) {
		t.Errorf("first main-ed25519 must win: %s", k)
	}
}

func TestProfileIsImmutable(t *testing.T) {
	p, err := Parse("https://agente.example.com/p.json", fixture(t, "agent_profile.json"), testValidator(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caps := p.Capabilities()
	caps["br.dev.bcp.shopping.discount"][0].Extends[0] = "x.y"
	caps["br.dev.bcp.shopping.order"][0].Config[2] = 'X'
	delete(caps, "br.dev.bcp.shopping.checkout")
	h := p.PaymentHandlers()
	h["br.dev.bcp.pix"][0].AvailableInstruments[0] = '!'
	keys := p.SigningKeys()
	keys[0][0] = '!'
	k, _ := p.SigningKey("agente-2026-07")
	k[1] = '!'
	s := p.Services()
	s["br.dev.bcp.shopping"][0].Transport = "rest"

	if !p.HasCapability("br.dev.bcp.shopping.checkout") ||
		p.Capability("br.dev.bcp.shopping.discount")[0].Extends[0] != "br.dev.bcp.shopping.checkout" ||
		!json.Valid(p.Capability("br.dev.bcp.shopping.order")[0].Config) ||
		!json.Valid(p.PaymentHandlers()["br.dev.bcp.pix"][0].AvailableInstruments) ||
		!json.Valid(p.SigningKeys()[0]) ||
		p.Services()["br.dev.bcp.shopping"][0].Transport != "mcp" {
		t.Fatal("a returned value aliases the shared profile")
	}
	k2, _ := p.SigningKey("agente-2026-07")
	if !json.Valid(k2) {
		t.Fatal("SigningKey aliases the shared profile")
	}
}

func TestExtendsDecoding(t *testing.T) {
	cases := []struct {
		in   string
		want Extends
		ok   bool
	}{
		{`"br.dev.bcp.shopping.checkout"`, Extends{"br.dev.bcp.shopping.checkout"}, true},
		{`["br.dev.bcp.shopping.checkout","br.dev.bcp.shopping.cart"]`, Extends{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.cart"}, true},
		{`null`, nil, true},
		{`42`, nil, false},
		{`{"a":1}`, nil, false},
	}
	for _, c := range cases {
		var x Extends
		err := json.Unmarshal([]byte(c.in), &x)
		if (err == nil) != c.ok || !slices.Equal(x, c.want) {
			t.Errorf("%s: %q, %v", c.in, x, err)
		}
	}
}

func TestOrderWebhookURL(t *testing.T) {
	doc := func(order string) []byte {
		return []byte(`{"ucp":{"version":"2026-07-28","services":{},"payment_handlers":{},"capabilities":{
		  "br.dev.bcp.shopping.order":` + order + `}}}`)
	}
	entry := func(version, config string) string {
		return `{"version":"` + version + `","spec":"https://bcp.dev.br/draft/specification/order","schema":"https://bcp.dev.br/draft/schemas/shopping/order.json"` + config + `}`
	}
	cases := []struct {
		order, want string
	}{
		{`[` + entry("2026-07-28", `,"config":{"webhook_url":"https://a.example/hook"}`) + `]`, "https://a.example/hook"},
		{`[` + entry("2026-07-28", ``) + `]`, ""},
		{`[` + entry("2026-07-28", `,"config":{"webhook_url":42}`) + `]`, ""},
		{`[` + entry("2026-01-23", `,"config":{"webhook_url":"https://old.example/hook"}`) + `,` +
			entry("2026-07-28", `,"config":{"webhook_url":"https://new.example/hook"}`) + `]`, "https://new.example/hook"},
		{`[` + entry("2026-01-23", `,"config":{"webhook_url":"https://old.example/hook"}`) + `]`, "https://old.example/hook"},
	}
	for _, c := range cases {
		p, err := Parse("https://a.example/p.json", doc(c.order), testValidator(t), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := p.OrderWebhookURL(); got != c.want {
			t.Errorf("%s: %q, want %q", c.order, got, c.want)
		}
	}
}

func TestErrorType(t *testing.T) {
	cause := json.Unmarshal([]byte("{"), new(any))
	e := &Error{Code: CodeProfileMalformed, Message: "x", Err: cause}
	if e.Error() != "profile_malformed: x" || e.Unwrap() != cause || e.HTTPStatus() != 422 {
		t.Errorf("%v %v %d", e, e.Unwrap(), e.HTTPStatus())
	}
	for code, status := range map[string]int{CodeInvalidProfileURL: 400, CodeProfileUnreachable: 424, CodeVersionUnsupported: 422} {
		if got := (&Error{Code: code}).HTTPStatus(); got != status {
			t.Errorf("%s: %d", code, got)
		}
	}
}

func TestSummaryIsBounded(t *testing.T) {
	// Twenty capabilities without spec/schema: many violations, bounded
	// message.
	var b strings.Builder
	b.WriteString(`{"ucp":{"version":"2026-07-28","services":{},"payment_handlers":{},"capabilities":{`)
	for i := range 20 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"com.example.cap` + strings.Repeat("x", i) + `":[{"version":"2026-07-28"}]`)
	}
	b.WriteString(`}}}`)
	_, err := Parse("https://a.example/p.json", []byte(b.String()), testValidator(t), time.Now())
	pe := wantCode(t, err, CodeProfileMalformed)
	if !strings.Contains(pe.Message, "and 35 more") || len(pe.Message) > 1500 {
		t.Errorf("%d bytes: %s", len(pe.Message), pe.Message)
	}
}
