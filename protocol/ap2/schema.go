package ap2

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// AP2's mandate schemas (schemas/UPSTREAM.txt), compiled once: a mandate's
// claims are validated against the schema of its vct before anything else
// reads them.

//go:embed schemas
var schemaFS embed.FS

// Mandate types (vct) of AP2 v0.2 verified here.
const (
	VCTCheckout        = "mandate.checkout.1"
	VCTCheckoutOpen    = "mandate.checkout.open.1"
	VCTPayment         = "mandate.payment.1"
	VCTPaymentOpen     = "mandate.payment.open.1"
	schemaCheckout     = "checkout_mandate.json"
	schemaCheckoutOpen = "open_checkout_mandate.json"
	schemaPayment      = "payment_mandate.json"
	schemaPaymentOpen  = "open_payment_mandate.json"
)

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// SchemaFiles returns AP2's schema files as embedded here (path under
// schemas/ → bytes), for tools and tests that validate mandates they make.
func SchemaFiles() map[string][]byte {
	out := map[string][]byte{}
	_ = fs.WalkDir(schemaFS, "schemas", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := schemaFS.ReadFile(p)
		if err == nil {
			out[strings.TrimPrefix(p, "schemas/")] = b
		}
		return err
	})
	return out
}

func compiledSchemas() (map[string]*jsonschema.Schema, error) {
	schemasOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		files := SchemaFiles()
		ids := map[string]string{}
		for name, b := range files {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				schemasErr = fmt.Errorf("ap2: schema %s: %w", name, err)
				return
			}
			// Each schema is known by its $id; "types/x.json" references
			// resolve against the $id of the schema that makes them.
			id, _ := doc.(map[string]any)["$id"].(string)
			if id == "" {
				id = "https://ap2-protocol.org/schemas/" + name
			}
			if err := c.AddResource(id, doc); err != nil {
				schemasErr = fmt.Errorf("ap2: schema %s: %w", name, err)
				return
			}
			ids[name] = id
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, name := range []string{schemaCheckout, schemaCheckoutOpen, schemaPayment, schemaPaymentOpen} {
			s, err := c.Compile(ids[name])
			if err != nil {
				schemasErr = fmt.Errorf("ap2: compiling %s: %w", name, err)
				return
			}
			schemas[name] = s
		}
	})
	return schemas, schemasErr
}

// schemaFor is the schema file of a mandate type.
func schemaFor(vct string) string {
	return map[string]string{VCTCheckout: schemaCheckout, VCTCheckoutOpen: schemaCheckoutOpen, VCTPayment: schemaPayment, VCTPaymentOpen: schemaPaymentOpen}[vct]
}

// ValidateClaims validates a mandate's claims (a JSON object, after its
// disclosures) against AP2's schema for vct. The error names the first
// violation's location and keyword, never a claim's value.
func ValidateClaims(vct string, claims []byte) error {
	all, err := compiledSchemas()
	if err != nil {
		return err
	}
	s := all[schemaFor(vct)]
	if s == nil {
		return fmt.Errorf("vct %q is not an AP2 mandate type verified here", vct)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(claims))
	if err != nil {
		return fmt.Errorf("the claims are not JSON")
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("the claims do not follow AP2's %s: %s", schemaFor(vct), firstViolation(err))
	}
	return nil
}

// firstViolation is the innermost cause of a validation error: where, and
// which keyword failed (the message may quote the value; it is the
// agent's own claim, never a secret, but kept short).
func firstViolation(err error) string {
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return "invalid"
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "$"
	for _, p := range ve.InstanceLocation {
		loc += "." + p
	}
	msg := ve.ErrorKind.LocalizedString(printer)
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return loc + ": " + msg
}

// marshalClaims is claims as JSON (numbers kept as they were sent).
func marshalClaims(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
