package bcpschema

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ToolValidator validates the arguments and results of a set of tools (the
// edge's operation table) for one negotiated checkout capability set.
// Compile one per set and share it; it is safe for concurrent use.
type ToolValidator struct {
	tools map[string]*compiledTool
	// Results are compiled on first use: the edge validates arguments
	// only, and checkout results cost as much again to compile.
	mu   sync.Mutex
	c    *compiler
	st   *store
	caps []string
}

type compiledTool struct {
	tool Tool
	in   *jsonschema.Schema
	out  *jsonschema.Schema // nil until ValidateResult needs it
}

// NewToolValidator compiles the schemas of tools for the checkout
// capabilities (DefaultCheckoutCapabilities when none are given; only
// checkout tools depend on them). Compiling takes tens of milliseconds.
func NewToolValidator(tools []Tool, capabilities ...string) (*ToolValidator, error) {
	if len(capabilities) == 0 {
		capabilities = DefaultCheckoutCapabilities()
	}
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	c := &compiler{c: jsonschema.NewCompiler(), seen: map[string]*jsonschema.Schema{}}
	c.c.DefaultDraft(jsonschema.Draft2020)
	// 2020-12 treats format as an annotation by default; BCP relies on it
	// (profile is a URI, idempotency-key a UUID, timestamps date-time).
	c.c.AssertFormat()
	v := &ToolValidator{tools: map[string]*compiledTool{}, c: c, st: st, caps: capabilities}
	for _, t := range tools {
		r, err := rootOf(t)
		if err != nil {
			return nil, err
		}
		if _, dup := v.tools[t.Name]; dup {
			return nil, fmt.Errorf("bcpschema: tool %s given twice", t.Name)
		}
		in, err := r.in(st, t, capabilities)
		if err != nil {
			return nil, err
		}
		ct := &compiledTool{tool: t}
		if ct.in, err = c.compile(in); err != nil {
			return nil, fmt.Errorf("bcpschema: compiling %s input: %w", t.Name, err)
		}
		v.tools[t.Name] = ct
	}
	return v, nil
}

func (v *ToolValidator) tool(name string) (*compiledTool, error) {
	t, ok := v.tools[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return t, nil
}

// ValidateToolInput validates the arguments of an MCP tool call. args is the
// raw params.arguments; empty input counts as {}. It returns a
// *ValidationError, or an error wrapping ErrUnknownTool. Before the schema,
// every tool's arguments pass the input guard (CheckInput): invalid JSON
// is keyword "json" at $; a NUL character, text that is not UTF-8 and
// sizes beyond the guard's limits are keywords "nul", "utf8" and "size"
// at the offending string's or value's path.
func (v *ToolValidator) ValidateToolInput(tool string, args json.RawMessage) error {
	t, err := v.tool(tool)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return validate(t.in, map[string]any{})
	}
	if e := CheckInput(args); e != nil {
		return e
	}
	inst, err := decodeJSON(args)
	if err != nil {
		return jsonError(err)
	}
	return validate(t.in, inst)
}

// ValidateCheckedToolInput is ValidateToolInput for arguments the input
// guard has already accepted (CheckInput returned nil for them, as the
// edge's executor does for every operation before the tool's own
// validation): the same answers without a second guard walk.
func (v *ToolValidator) ValidateCheckedToolInput(tool string, args json.RawMessage) error {
	t, err := v.tool(tool)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return validate(t.in, map[string]any{})
	}
	inst, err := decodeJSON(args)
	if err != nil {
		return jsonError(err)
	}
	return validate(t.in, inst)
}

// ValidateToolInputValue is ValidateToolInput for arguments already decoded
// into map[string]any/[]any/string/bool/nil and float64 or json.Number
// (json.Number keeps integers above 2^53 exact).
func (v *ToolValidator) ValidateToolInputValue(tool string, args any) error {
	t, err := v.tool(tool)
	if err != nil {
		return err
	}
	if args == nil {
		args = map[string]any{}
	}
	// Decoded text is UTF-8 already (invalid input became U+FFFD on the
	// way): only NULs are left to find.
	if e := nulError(args); e != nil {
		return e
	}
	return validate(t.in, args)
}

// ValidateResult validates a tool's structuredContent.
func (v *ToolValidator) ValidateResult(tool string, doc json.RawMessage) error {
	t, err := v.tool(tool)
	if err != nil {
		return err
	}
	v.mu.Lock()
	if t.out == nil {
		var out map[string]any
		if out, err = roots[t.tool.Root].out(v.st, t.tool, v.caps); err == nil {
			if t.out, err = v.c.compile(out); err != nil {
				err = fmt.Errorf("bcpschema: compiling %s result: %w", tool, err)
			}
		}
	}
	s := t.out
	v.mu.Unlock()
	if err != nil {
		return err
	}
	return validateRaw(s, doc)
}
