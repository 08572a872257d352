package bcpschema

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator validates checkout, order and error responses and discovery
// profiles against the BCP schemas for one negotiated capability set (tool
// arguments: ToolValidator). Schemas are compiled once in NewValidator; all
// methods are safe for concurrent use.
type Validator struct {
	caps      []string
	checkout  map[Op]*jsonschema.Schema // checkout responses per op
	errorResp *jsonschema.Schema
	order     *jsonschema.Schema
	business  *jsonschema.Schema
	platform  *jsonschema.Schema
}

// NewValidator compiles the schemas for the given checkout capabilities
// (DefaultCheckoutCapabilities when none are given). Compiling takes tens of
// milliseconds: build one Validator per distinct capability set and reuse it.
func NewValidator(capabilities ...string) (*Validator, error) {
	if len(capabilities) == 0 {
		capabilities = DefaultCheckoutCapabilities()
	}
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	composed, used, err := composeCheckout(st, capabilities)
	if err != nil {
		return nil, err
	}
	c := &compiler{c: jsonschema.NewCompiler(), seen: map[string]*jsonschema.Schema{}}
	c.c.DefaultDraft(jsonschema.Draft2020)
	// 2020-12 treats format as an annotation by default; BCP relies on it
	// (profile is a URI, idempotency-key a UUID, timestamps date-time).
	c.c.AssertFormat()

	v := &Validator{caps: used, checkout: map[Op]*jsonschema.Schema{}}
	for _, op := range []Op{OpCreate, OpRead, OpUpdate, OpComplete, OpCancel} {
		root := func(b *bundler) (any, error) { return b.resolveComposed(composed) }
		// Identical bundles (response annotations are not per-op in this
		// release) compile once; see compiler.seen.
		if v.checkout[op], err = c.compileGraph(st, Response, op, root); err != nil {
			return nil, fmt.Errorf("bcpschema: compiling checkout %s response: %w", op, err)
		}
	}
	graph := []struct {
		dst *(*jsonschema.Schema)
		ref string
	}{
		{&v.errorResp, "schemas/shopping/types/error_response.json"},
		{&v.order, "schemas/shopping/order.json"},
		{&v.business, "discovery/profile_schema.json#/$defs/business_profile"},
		{&v.platform, "discovery/profile_schema.json#/$defs/platform_profile"},
	}
	for _, g := range graph {
		root := func(b *bundler) (any, error) { return b.resolveRootRef(g.ref) }
		if *g.dst, err = c.compileGraph(st, Response, OpRead, root); err != nil {
			return nil, fmt.Errorf("bcpschema: compiling %s: %w", g.ref, err)
		}
	}
	return v, nil
}

// Capabilities returns the checkout capabilities the validator composed
// (root first, then the extensions that apply, sorted).
func (v *Validator) Capabilities() []string {
	return append([]string(nil), v.caps...)
}

type compiler struct {
	c    *jsonschema.Compiler
	n    int
	seen map[string]*jsonschema.Schema // identical bundles compile once
}

func (c *compiler) compile(doc map[string]any) (*jsonschema.Schema, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if s, ok := c.seen[string(data)]; ok {
		return s, nil
	}
	// Re-decode so numbers are json.Number, as the compiler expects.
	inst, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	c.n++
	loc := fmt.Sprintf("urn:bcp:compiled:%d", c.n)
	if err := c.c.AddResource(loc, inst); err != nil {
		return nil, err
	}
	s, err := c.c.Compile(loc)
	if err != nil {
		return nil, err
	}
	c.seen[string(data)] = s
	return s, nil
}

// compileGraph compiles the bundle that root builds for dir and op.
func (c *compiler) compileGraph(st *store, dir Direction, op Op, root func(*bundler) (any, error)) (*jsonschema.Schema, error) {
	b, err := newBundler(st, dir, op)
	if err != nil {
		return nil, err
	}
	r, err := root(b)
	if err != nil {
		return nil, err
	}
	return c.compile(b.document(r))
}

// ValidateCheckoutResponse validates a checkout returned by op (the tool's
// structuredContent when it is a checkout, not an error_response).
func (v *Validator) ValidateCheckoutResponse(op Op, doc json.RawMessage) error {
	s, ok := v.checkout[op]
	if !ok {
		return fmt.Errorf("bcpschema: unknown op %q", string(op))
	}
	return validateRaw(s, doc)
}

// ValidateErrorResponse validates an error_response (ucp.status "error",
// messages, optional continue_url; nothing else).
func (v *Validator) ValidateErrorResponse(doc json.RawMessage) error {
	return validateRaw(v.errorResp, doc)
}

// ValidateOrder validates an order (get_order result, order webhook body).
func (v *Validator) ValidateOrder(doc json.RawMessage) error {
	return validateRaw(v.order, doc)
}

// ValidateBusinessProfile validates a business discovery profile
// (/.well-known/bcp) against the business branch of the profile schema.
func (v *Validator) ValidateBusinessProfile(doc json.RawMessage) error {
	return validateRaw(v.business, doc)
}

// ValidatePlatformProfile validates a platform (agent) profile.
func (v *Validator) ValidatePlatformProfile(doc json.RawMessage) error {
	return validateRaw(v.platform, doc)
}

func validateRaw(s *jsonschema.Schema, doc json.RawMessage) error {
	inst, err := decodeJSON(doc)
	if err != nil {
		return jsonError(err)
	}
	return validate(s, inst)
}

func validate(s *jsonschema.Schema, inst any) error {
	err := s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return convert(ve, inst)
}

func jsonError(err error) *ValidationError {
	return &ValidationError{Violations: []Violation{{Path: "$", Keyword: "json", Message: "invalid JSON: " + err.Error()}}}
}
