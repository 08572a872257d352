package bcpschema

import (
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ToolValidator validates one family of tools' arguments and results (the
// catalog tools, the cart tools). Compile one and share it; it is safe for
// concurrent use.
type ToolValidator struct {
	in, out map[string]*jsonschema.Schema
}

// toolDoc builds a tool's self-contained input or output schema.
type toolDoc func(st *store, tool string, caps []string) (map[string]any, error)

func newToolValidator(tools []string, inDoc, outDoc toolDoc) (*ToolValidator, error) {
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	c := &compiler{c: jsonschema.NewCompiler(), seen: map[string]*jsonschema.Schema{}}
	c.c.DefaultDraft(jsonschema.Draft2020)
	c.c.AssertFormat()
	v := &ToolValidator{in: map[string]*jsonschema.Schema{}, out: map[string]*jsonschema.Schema{}}
	for _, tool := range tools {
		in, err := inDoc(st, tool, nil)
		if err != nil {
			return nil, err
		}
		if v.in[tool], err = c.compile(in); err != nil {
			return nil, fmt.Errorf("bcpschema: compiling %s input: %w", tool, err)
		}
		out, err := outDoc(st, tool, nil)
		if err != nil {
			return nil, err
		}
		if v.out[tool], err = c.compile(out); err != nil {
			return nil, fmt.Errorf("bcpschema: compiling %s result: %w", tool, err)
		}
	}
	return v, nil
}

// ValidateToolInput validates a tool's raw arguments (empty counts as {});
// failures are a *ValidationError with JSONPaths ($.catalog.ids, $.cart...).
func (v *ToolValidator) ValidateToolInput(tool string, args json.RawMessage) error {
	s, ok := v.in[tool]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	if len(args) == 0 {
		return validate(s, map[string]any{})
	}
	inst, err := decodeJSON(args)
	if err != nil {
		return jsonError(err)
	}
	return validate(s, inst)
}

// ValidateResult validates a tool's structuredContent.
func (v *ToolValidator) ValidateResult(tool string, doc json.RawMessage) error {
	s, ok := v.out[tool]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	return validateRaw(s, doc)
}
