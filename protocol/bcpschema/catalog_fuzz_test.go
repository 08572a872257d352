package bcpschema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzValidateCatalogToolInput is FuzzValidateToolInput for the catalog
// tools: never a panic, every rejection a *ValidationError with JSONPaths.
func FuzzValidateCatalogToolInput(f *testing.F) {
	meta := `"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}}`
	f.Add(uint8(0), []byte(`{`+meta+`,"catalog":{"query":"caneca","filters":{"categories":["Cozinha"],"price":{"min":0,"max":5000}},"pagination":{"cursor":"x","limit":10}}}`))
	f.Add(uint8(1), []byte(`{`+meta+`,"catalog":{"ids":["var_1","prd_2"]}}`))
	f.Add(uint8(2), []byte(`{`+meta+`,"catalog":{"id":"prd_1","selected":[{"name":"Cor","label":"Azul"}],"preferences":["Cor"]}}`))
	f.Add(uint8(0), []byte(`{"catalog":{"pagination":{"limit":1e400}}}`))
	f.Add(uint8(1), []byte(`[]`))
	tools := toolsOf(RootCatalogSearch, RootCatalogLookup, RootCatalogProduct)
	v, err := NewToolValidator(tools)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := tools[int(which)%len(tools)].Name
		err := v.ValidateToolInput(tool, args)
		if err == nil {
			if !json.Valid(args) {
				t.Fatalf("%s accepted invalid JSON %q", tool, args)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: rejection is %T, not *ValidationError: %v", tool, err, err)
		}
		for _, viol := range ve.Violations {
			if !strings.HasPrefix(viol.Path, "$") {
				t.Fatalf("%s: violation path %q is not a JSONPath", tool, viol.Path)
			}
		}
	})
}
