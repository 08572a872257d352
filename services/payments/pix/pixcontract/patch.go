package pixcontract

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// locationFormat replaces "uri" on the payload locations (see patch).
const locationFormat = "pix-location"

// patch repairs, in the parsed document, the defects of openapi.yaml 2.9.0
// that make kin-openapi reject what the API means, and tightens rules the
// document states loosely. Each change is as narrow as it can be, and
// pixcontract_test.go shows each one is needed.
func patch(doc *openapi3.T) error {
	if doc.Components == nil {
		return errors.New("pixcontract: openapi.yaml has no components")
	}
	schema := func(name string) (*openapi3.Schema, error) {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			return nil, fmt.Errorf("pixcontract: openapi.yaml has no schema %s", name)
		}
		return s.Value, nil
	}

	// Defect: CobExpiracao.expiracao is an integer whose default and
	// example are the strings "86400" and "3600"; doc.Validate rejects the
	// default. Write them as the integers they mean.
	exp, err := schema("CobExpiracao")
	if err != nil {
		return err
	}
	p := exp.Properties["expiracao"]
	if p == nil || p.Value.Default != "86400" || p.Value.Example != "3600" {
		return errors.New("pixcontract: CobExpiracao.expiracao is not as patch expects")
	}
	p.Value.Default, p.Value.Example = 86400, 3600

	// Defect: PixConsultados (the response of GET /pix) requires "cobs",
	// a property it does not have, instead of its list "pix".
	pc, err := schema("PixConsultados")
	if err != nil {
		return err
	}
	i := slices.Index(pc.Required, "cobs")
	if i < 0 || pc.Properties["pix"] == nil {
		return errors.New("pixcontract: PixConsultados is not as patch expects")
	}
	pc.Required[i] = "pix"

	// Defect: the payload-location endpoints (GET /{pixUrlAccessToken},
	// /cobv/{pixUrlAccessToken}, /rec/{recUrlAccessToken}) are served on
	// their own servers (the location URL), not below the API's base path;
	// mixed in with the others they collide with GET /cobv/{txid} and
	// GET /rec/{idRec} ("conflicting paths"), and the first would match
	// any one-segment path. The client never calls them: drop them.
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for _, op := range item.Operations() {
			if op.Servers != nil && len(*op.Servers) > 0 {
				doc.Paths.Delete(path)
				break
			}
		}
	}

	var errs []error
	err = doc.WalkSchemas(func(ptr string, sr *openapi3.SchemaRef) error {
		s := sr.Value
		// Defect: the CPF (and IBGE city code) patterns are written as
		// JavaScript literals, "/^\d{11}$/"; as a pattern that needs a
		// "/" before the start of the string, so no CPF ever matches.
		if strings.HasPrefix(s.Pattern, "/^") && strings.HasSuffix(s.Pattern, "$/") {
			s.Pattern = s.Pattern[1 : len(s.Pattern)-1]
		}
		// Tightening: every other pattern is meant whole (TxId
		// "[a-zA-Z0-9]{26,35}", values "\d{1,10}\.\d{2}"), but JSON Schema
		// patterns match anywhere, so "1.001" or a 36-character txid would
		// pass. Anchor them.
		if s.Pattern != "" && !strings.HasPrefix(s.Pattern, "^") {
			s.Pattern = "^(?:" + s.Pattern + ")$"
		}
		// Defect: a payload location is written without its scheme
		// ("pix.example.com/qr/v2/…", the BR Code's rule: the URL in
		// field 26-25 omits "https://"), yet is declared "format: uri",
		// which requires one. Only properties named location get the
		// looser format.
		if loc := s.Properties["location"]; loc != nil && loc.Value.Format == "uri" {
			if loc.Value.Type.Is(openapi3.TypeString) && loc.Value.MaxLength != nil && *loc.Value.MaxLength == 77 {
				loc.Value.Format = locationFormat
			} else {
				errs = append(errs, fmt.Errorf("pixcontract: %s/properties/location is not as patch expects", ptr))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// Tightening: the webhook body (WebhookPixBody) declares its "pix"
	// list but neither the object type nor that the list is there, so any
	// JSON value would pass. The callback is fired when one or more Pix
	// arrive (or a refund of one ends), so require {"pix": [≥ 1 Pix]}.
	wb := doc.Components.RequestBodies["WebhookPixBody"]
	if wb == nil || wb.Value == nil {
		return errors.New("pixcontract: openapi.yaml has no request body WebhookPixBody")
	}
	mt := wb.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value.Properties["pix"] == nil {
		return errors.New("pixcontract: WebhookPixBody is not as patch expects")
	}
	body := mt.Schema.Value
	body.Type = &openapi3.Types{openapi3.TypeObject}
	body.Required = []string{"pix"}
	body.Properties["pix"].Value.MinItems = 1
	return nil
}

// validateURI is JSON Schema's "uri": an absolute URI (RFC 3986), so
// with a scheme. kin-openapi leaves the format unchecked.
func validateURI(s string) error {
	if strings.ContainsFunc(s, invalidURIRune) {
		return errors.New("not a URI: it contains spaces or control characters")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URI")
	}
	if u.Scheme == "" {
		return errors.New("not an absolute URI: it has no scheme")
	}
	return nil
}

// validateLocation is the payload location of the API Pix and the BR
// Code: host and path of an https URL, without the scheme.
func validateLocation(s string) error {
	if strings.ContainsFunc(s, invalidURIRune) {
		return errors.New("not a location: it contains spaces or control characters")
	}
	if strings.Contains(s, "://") {
		return errors.New("not a location: a location is written without its scheme")
	}
	u, err := url.Parse("https://" + s)
	if err != nil || u.Host == "" || u.User != nil {
		return errors.New("not a location: not host/path of a URL")
	}
	return nil
}

func invalidURIRune(r rune) bool { return r <= ' ' || r == 0x7f }
