package agentprofile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// Extends is a capability's parent list. The wire form is a single name or
// a non-empty array (multi-parent extension); both decode to a slice.
type Extends []string

// MarshalJSON writes one parent as a string, several as an array.
func (x Extends) MarshalJSON() ([]byte, error) {
	if len(x) == 1 {
		return json.Marshal(x[0])
	}
	return json.Marshal([]string(x))
}

// UnmarshalJSON accepts a string or an array of strings.
func (x *Extends) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*x = Extends{s}
		return nil
	}
	if string(b) == "null" {
		*x = nil
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return errors.New("extends must be a string or an array of strings")
	}
	*x = ss
	return nil
}

// ServiceEntry is one transport binding of a service.
type ServiceEntry struct {
	Version   string          `json:"version"`
	Spec      string          `json:"spec,omitempty"`
	Schema    string          `json:"schema,omitempty"`
	ID        string          `json:"id,omitempty"`
	Transport string          `json:"transport"`
	Endpoint  string          `json:"endpoint,omitempty"`
	Config    json.RawMessage `json:"config,omitempty"`
}

// CapabilityEntry is one advertised version of a capability.
type CapabilityEntry struct {
	Version string          `json:"version"`
	Spec    string          `json:"spec,omitempty"`
	Schema  string          `json:"schema,omitempty"`
	ID      string          `json:"id,omitempty"`
	Extends Extends         `json:"extends,omitempty"`
	Config  json.RawMessage `json:"config,omitempty"`
}

// HandlerEntry is one payment handler instance.
type HandlerEntry struct {
	ID                   string          `json:"id"`
	Version              string          `json:"version"`
	Spec                 string          `json:"spec,omitempty"`
	Schema               string          `json:"schema,omitempty"`
	AvailableInstruments json.RawMessage `json:"available_instruments,omitempty"`
	Config               json.RawMessage `json:"config,omitempty"`
}

// SkippedKey records a published key that was not kept, and why.
type SkippedKey struct {
	Kid    string // "" when the key had none
	Reason string
}

// Profile is a validated agent (platform) profile. It is immutable: every
// accessor that returns a map, slice or raw JSON returns a copy, so one
// *Profile is shared by all requests of an agent.
type Profile struct {
	url        string
	fetchedAt  time.Time
	version    string
	services   map[string][]ServiceEntry
	caps       map[string][]CapabilityEntry
	handlers   map[string][]HandlerEntry
	keys       []json.RawMessage
	kids       map[string]int // kid -> index in keys
	skipped    []SkippedKey
	webhookURL string
}

// wireProfile is the decoded document. The release 2026-04-08 profile
// carries signing_keys, main carries keys (a JWK Set); both are read.
type wireProfile struct {
	UCP struct {
		Version         string                       `json:"version"`
		Services        map[string][]ServiceEntry    `json:"services"`
		Capabilities    map[string][]CapabilityEntry `json:"capabilities"`
		PaymentHandlers map[string][]HandlerEntry    `json:"payment_handlers"`
	} `json:"ucp"`
	SigningKeys []json.RawMessage `json:"signing_keys"`
	Keys        json.RawMessage   `json:"keys"`
}

// Parse validates doc as a BCP platform profile and builds a Profile.
// profileURL is recorded, not fetched. Failures are *Error with code
// profile_malformed. It is exported for profiles obtained another way (a
// tenant's pre-approved agent registry).
func Parse(profileURL string, doc []byte, v *bcpschema.Validator, now time.Time) (*Profile, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, &Error{Code: CodeProfileMalformed, Message: "profile body is empty"}
	}
	if !json.Valid(doc) {
		return nil, &Error{Code: CodeProfileMalformed, Message: "profile is not valid JSON (starts with " + excerpt(doc) + ")"}
	}
	if err := v.ValidatePlatformProfile(doc); err != nil {
		var ve *bcpschema.ValidationError
		if errors.As(err, &ve) {
			return nil, &Error{Code: CodeProfileMalformed, Message: "profile fails the BCP platform profile schema: " + summarize(ve), Err: err}
		}
		return nil, &Error{Code: CodeProfileMalformed, Message: "profile could not be validated", Err: err}
	}
	var w wireProfile
	if err := json.Unmarshal(doc, &w); err != nil {
		// The schema accepted it, so this is a shape the schema leaves
		// open but we cannot represent (e.g. an extends of wrong type).
		return nil, &Error{Code: CodeProfileMalformed, Message: "profile cannot be decoded: " + clip(err.Error(), 200), Err: err}
	}
	p := &Profile{
		url:       profileURL,
		fetchedAt: now,
		version:   w.UCP.Version,
		services:  orEmpty(w.UCP.Services),
		caps:      orEmpty(w.UCP.Capabilities),
		handlers:  orEmpty(w.UCP.PaymentHandlers),
		kids:      map[string]int{},
	}
	for _, k := range w.SigningKeys {
		p.addKey(k)
	}
	// keys (main) is outside the release schema, so it arrives unchecked:
	// anything but an array is ignored rather than failing the profile.
	var mainKeys []json.RawMessage
	if len(w.Keys) > 0 && json.Unmarshal(w.Keys, &mainKeys) == nil {
		for _, k := range mainKeys {
			p.addKey(k)
		}
	} else if len(w.Keys) > 0 && string(w.Keys) != "null" {
		p.skipped = append(p.skipped, SkippedKey{Reason: "keys is not an array"})
	}
	p.webhookURL = p.findWebhookURL()
	return p, nil
}

func orEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// privateMembers are the JWK members that carry secret key material
// (RFC 7518 §6.2.2, §6.3.2, §6.4.1).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// algCurve pairs a JWS alg with the key type and curve it requires (digest
// §2.1). Unknown algs are left to the signature verifier.
var algCurve = map[string][2]string{
	"ES256": {"EC", "P-256"},
	"ES384": {"EC", "P-384"},
	"EdDSA": {"OKP", "Ed25519"},
}

// addKey keeps a published JWK usable for verifying signatures. Per digest
// §2.1 a key we cannot or must not use is skipped, never a reason to reject
// the whole profile (the agent's other keys keep working).
func (p *Profile) addKey(raw json.RawMessage) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		p.skipped = append(p.skipped, SkippedKey{Reason: "key is not a JSON object"})
		return
	}
	str := func(name string) (string, bool) {
		v, ok := m[name]
		if !ok {
			return "", false
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", true
		}
		return s, true
	}
	kid, _ := str("kid")
	skip := func(reason string) { p.skipped = append(p.skipped, SkippedKey{Kid: clip(kid, 100), Reason: reason}) }
	for _, name := range privateMembers {
		if _, ok := m[name]; ok {
			// A private key published in a profile is compromised: anyone
			// can sign as this agent with it. It must verify nothing, so it
			// is skipped (and its bytes are not kept, so the secret never
			// reaches memory we share, logs or caches). The rest of the
			// profile stays usable, as §2.1 asks for unusable keys; the
			// reason is recorded for the operator.
			skip("key carries private key material (" + name + "); the key is compromised and ignored")
			return
		}
	}
	if kid == "" {
		skip("key has no kid")
		return
	}
	kty, _ := str("kty")
	if kty == "" {
		skip("key has no kty")
		return
	}
	if use, ok := str("use"); ok && use != "sig" {
		skip("key use is not sig")
		return
	}
	if ops, ok := m["key_ops"]; ok {
		var list []string
		if json.Unmarshal(ops, &list) != nil || !slices.Contains(list, "verify") {
			skip("key_ops does not allow verify")
			return
		}
	}
	if alg, ok := str("alg"); ok {
		if want, known := algCurve[alg]; known {
			crv, _ := str("crv")
			if kty != want[0] || crv != want[1] {
				skip("alg " + alg + " does not match kty/crv")
				return
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		skip("key is not valid JSON")
		return
	}
	if i, dup := p.kids[kid]; dup {
		// The same key listed under both signing_keys and keys (an agent
		// migrating between releases) is one key; two different keys
		// under one kid are ambiguous, and the first one wins.
		if !bytes.Equal(p.keys[i], buf.Bytes()) {
			skip("duplicate kid with different key material")
		}
		return
	}
	p.kids[kid] = len(p.keys)
	p.keys = append(p.keys, json.RawMessage(buf.Bytes()))
}

// findWebhookURL reads capabilities[order][].config.webhook_url, preferring
// the entry of the profile's own version.
func (p *Profile) findWebhookURL() string {
	entries := p.caps[bcpnames.Order]
	read := func(e CapabilityEntry) string {
		var c struct {
			WebhookURL json.RawMessage `json:"webhook_url"`
		}
		if len(e.Config) == 0 || json.Unmarshal(e.Config, &c) != nil {
			return ""
		}
		var s string
		if json.Unmarshal(c.WebhookURL, &s) != nil {
			return ""
		}
		return s
	}
	for _, e := range entries {
		if e.Version == p.version {
			if s := read(e); s != "" {
				return s
			}
		}
	}
	for _, e := range entries {
		if s := read(e); s != "" {
			return s
		}
	}
	return ""
}

// URL is the address the profile was fetched from.
func (p *Profile) URL() string { return p.url }

// FetchedAt is when the profile was fetched (per Options.Now).
func (p *Profile) FetchedAt() time.Time { return p.fetchedAt }

// Version is the agent's ucp.version.
func (p *Profile) Version() string { return p.version }

// HasCapability reports whether the agent lists name (any version).
func (p *Profile) HasCapability(name string) bool { return len(p.caps[name]) > 0 }

// OrderWebhookURL is the order capability's config.webhook_url, or "". It
// is returned as published: whoever delivers webhooks must apply the same
// URL and dial-time address checks as the profile fetch.
func (p *Profile) OrderWebhookURL() string { return p.webhookURL }

// Services returns a copy of the service registry.
func (p *Profile) Services() map[string][]ServiceEntry {
	out := make(map[string][]ServiceEntry, len(p.services))
	for k, es := range p.services {
		cp := slices.Clone(es)
		for i := range cp {
			cp[i].Config = bytes.Clone(cp[i].Config)
		}
		out[k] = cp
	}
	return out
}

// Capabilities returns a copy of the capability registry.
func (p *Profile) Capabilities() map[string][]CapabilityEntry {
	out := make(map[string][]CapabilityEntry, len(p.caps))
	for k := range p.caps {
		out[k] = p.Capability(k)
	}
	return out
}

// Capability returns a copy of the entries advertised for name.
func (p *Profile) Capability(name string) []CapabilityEntry {
	es := p.caps[name]
	if es == nil {
		return nil
	}
	cp := slices.Clone(es)
	for i := range cp {
		cp[i].Extends = slices.Clone(cp[i].Extends)
		cp[i].Config = bytes.Clone(cp[i].Config)
	}
	return cp
}

// PaymentHandlers returns a copy of the payment handler registry.
func (p *Profile) PaymentHandlers() map[string][]HandlerEntry {
	out := make(map[string][]HandlerEntry, len(p.handlers))
	for k, es := range p.handlers {
		out[k] = cloneHandlers(es)
	}
	return out
}

func cloneHandlers(es []HandlerEntry) []HandlerEntry {
	cp := slices.Clone(es)
	for i := range cp {
		cp[i].AvailableInstruments = bytes.Clone(cp[i].AvailableInstruments)
		cp[i].Config = bytes.Clone(cp[i].Config)
	}
	return cp
}

// SigningKeys returns copies of the usable public keys as compact JWK JSON,
// signing_keys first, then keys.
func (p *Profile) SigningKeys() []json.RawMessage {
	out := make([]json.RawMessage, len(p.keys))
	for i, k := range p.keys {
		out[i] = bytes.Clone(k)
	}
	return out
}

// SigningKey returns a copy of the usable key with this kid.
func (p *Profile) SigningKey(kid string) (json.RawMessage, bool) {
	i, ok := p.kids[kid]
	if !ok {
		return nil, false
	}
	return bytes.Clone(p.keys[i]), true
}

// SkippedKeys lists the published keys that were not kept, for logs.
func (p *Profile) SkippedKeys() []SkippedKey { return slices.Clone(p.skipped) }

// summarize renders at most a few violations, bounded in length: enough
// for the agent's developer to fix the profile, not an echo of it.
func summarize(ve *bcpschema.ValidationError) string {
	const maxShown = 5
	var b strings.Builder
	for i, v := range ve.Violations {
		if i == maxShown {
			fmt.Fprintf(&b, "; and %d more", len(ve.Violations)-maxShown+ve.Omitted)
			return b.String()
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(clip(v.Path, 120))
		b.WriteString(": ")
		b.WriteString(clip(v.Message, 160))
	}
	if ve.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", ve.Omitted)
	}
	return b.String()
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// excerpt quotes the first bytes of a body, escaped, for error messages.
func excerpt(b []byte) string {
	const n = 32
	return fmt.Sprintf("%q", clip(string(b[:min(len(b), 2*n)]), n))
}
