package ap2

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// apExamplePaymentMandate is the closed payment mandate of AP2's
// payment_mandate.md ("Closed Payment Mandate SD-JWT plus disclosures",
// encoded token): its claims are the one disclosed element of
// delegate_payload.
const apExamplePaymentMandate = "eyJhbGciOiAiRVMyNTYiLCAidHlwIjogImtiK3NkLWp3dCJ9.eyJkZWxlZ2F0ZV9wYXlsb2FkIjogW3siLi4uIjogIkcyRHVVNklqeURrRC05SXRTdGRzVW80OEM1dUpxRHMxRTlIZjVHVDNUZ00ifV0sICJpYXQiOiAxNzc3MzQyMzcwLCAiYXVkIjogImNyZWRlbnRpYWwtcHJvdmlkZXIiLCAibm9uY2UiOiAiYThiN2M2ZDVlNGYzYTJiMWMwZDllOGY3YTZiNWM0ZDMiLCAic2RfaGFzaCI6ICJ1aXhvSGVtbWZyckNTYlBSRW85ai16aUx1TWtxRXhzUGVXcndBLVBLMENrIiwgIl9zZF9hbGciOiAic2hhLTI1NiJ9.TgI6w9zeL993uzAYE9fnAJXjnrpliDY5DpDKTSQoioH3msapVIz0Ex23ncQXwmsSmT3xOqkSpigQD1EYKck-dQ~WyJmVzZNY0JKSW1xT0R1aFFscEk0SWR3IiwgeyJ2Y3QiOiAibWFuZGF0ZS5wYXltZW50LjEiLCAidHJhbnNhY3Rpb25faWQiOiAiTml2V2h1cWZ6Y3ZaTmFwdklFSjItM3RzZFFMa2l1SWN5ZTJnNDZXVmdYOCIsICJwYXllZSI6IHsiaWQiOiAibWVyY2hhbnRfMSIsICJuYW1lIjogIkRlbW8gTWVyY2hhbnQiLCAid2Vic2l0ZSI6ICJodHRwczovL2RlbW8tbWVyY2hhbnQuZXhhbXBsZSJ9LCAicGF5bWVudF9hbW91bnQiOiB7ImFtb3VudCI6IDE5OTAwLCAiY3VycmVuY3kiOiAiVVNEIn0sICJwYXltZW50X2luc3RydW1lbnQiOiB7ImlkIjogInN0dWIiLCAidHlwZSI6ICJjYXJkIiwgImRlc2NyaXB0aW9uIjogIkNhcmQgXHUyMDIyXHUyMDIyXHUyMDIyNDI0MiJ9fV0~"

// AP2's own example resolves to claims that follow payment_mandate.json
// (its signature is by a key of the example, not checked here).
func TestResolveAP2Example(t *testing.T) {
	m, err := Parse(apExamplePaymentMandate)
	if err != nil {
		t.Fatal(err)
	}
	claims, alg, err := m.resolve(m.issuer.UnsafePayloadWithoutVerification())
	if err != nil {
		t.Fatal(err)
	}
	if alg != "sha-256" || claims["vct"] != VCTPayment || claims["transaction_id"] != "NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8" {
		t.Fatalf("claims %v", claims)
	}
	if err := ValidateClaims(VCTPayment, marshalClaims(claims)); err != nil {
		t.Fatal(err)
	}
	v := &Verified{VCT: VCTPayment, SDAlg: alg, claims: claims}
	pm, err := v.PaymentMandate()
	if err != nil || pm.Amount != 19900 || pm.Currency != "USD" || pm.Instrument.ID != "stub" || pm.Instrument.Type != "card" {
		t.Fatalf("%+v %v", pm, err)
	}
	if !(Merchant{IDs: []string{"merchant_1"}}).Is(pm.Payee) || !(Merchant{Hosts: []string{"demo-merchant.example"}}).Is(pm.Payee) || (Merchant{IDs: []string{"x"}, Hosts: []string{"x.example"}}).Is(pm.Payee) {
		t.Fatalf("payee %s", pm.Payee)
	}
	// Schema violations name the location, not the value.
	delete(claims, "payee")
	if err := ValidateClaims(VCTPayment, marshalClaims(claims)); err == nil || !strings.Contains(err.Error(), "payment_mandate.json") {
		t.Fatalf("no payee: %v", err)
	}
}

// The line_items constraint as checkout_mandate.md's example evaluates it.
func TestLineItemsExample(t *testing.T) {
	reqs := []lineRequirement{{id: "shoes", acceptable: []string{"BAB1234", "FAF1234"}, quantity: 1}, {id: "socks", acceptable: []string{"QRT1234"}, quantity: 1}}
	for _, c := range []struct {
		lines []Line
		unmet int
	}{
		{[]Line{{"BAB1234", 1}, {"QRT1234", 1}}, 0},
		{[]Line{{"FAF1234", 1}, {"QRT1234", 1}}, 0},
		{[]Line{{"BAB1234", 1}, {"FAF1234", 1}}, 2}, // socks missing, one shoe too many
		{[]Line{{"BAB1234", 1}}, 1},
		{[]Line{{"FAF1234", 1}}, 1},
		{[]Line{{"QRT1234", 1}}, 1},
		{[]Line{{"BAB1234", 2}, {"QRT1234", 1}}, 1},
	} {
		if got := unmetLineItems(reqs, c.lines); len(got) != c.unmet {
			t.Errorf("%v: %q", c.lines, got)
		}
	}
	cm := &CheckoutMandate{Constraints: []json.RawMessage{json.RawMessage(`{"type":"checkout.allowed_merchants","allowed":[]}`), json.RawMessage(`{"type":"checkout.line_items","items":[{"id":"a","acceptable_items":[],"quantity":1}]}`)}}
	got := cm.Unmet(Merchant{IDs: []string{"m"}}, []Line{{"x", 1}})
	if !slices.Equal(got, []string{"checkout.allowed_merchants reveals no merchant, so no merchant is allowed", `checkout.line_items requirement "a" reveals no acceptable item`, `the checkout has 1 of item "x" that checkout.line_items does not allow`}) {
		t.Fatalf("%q", got)
	}
}
