package bcpschema

import (
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkValidateCreateCheckout measures the per-request cost on the edge:
// decoding the binding's create_checkout arguments and validating them.
func BenchmarkValidateCreateCheckout(b *testing.B) {
	v, err := NewToolValidator(checkoutTools)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("testdata/binding_create_checkout.request.json")
	if err != nil {
		b.Fatal(err)
	}
	var req struct {
		Params struct{ Arguments json.RawMessage }
	}
	if err := json.Unmarshal(data, &req); err != nil {
		b.Fatal(err)
	}
	args := req.Params.Arguments
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.ValidateToolInput("create_checkout", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateCheckedCreateCheckout is the edge's share of it: the
// input guard has run already (the executor runs it for every operation).
func BenchmarkValidateCheckedCreateCheckout(b *testing.B) {
	v, err := NewToolValidator(checkoutTools)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("testdata/binding_create_checkout.request.json")
	if err != nil {
		b.Fatal(err)
	}
	var req struct {
		Params struct{ Arguments json.RawMessage }
	}
	if err := json.Unmarshal(data, &req); err != nil {
		b.Fatal(err)
	}
	args := req.Params.Arguments
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.ValidateCheckedToolInput("create_checkout", args); err != nil {
			b.Fatal(err)
		}
	}
}
