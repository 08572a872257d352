package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
)

// ap2Set switches a merchant's AP2 mandates on or off, or shows the state
// ("ap2 on|off|status <tenant>").
func (c *cli) ap2Set(ctx context.Context, verb string, args []string) error {
	p, err := parse(newFS("ap2 "+verb), args, 1, "<tenant>")
	if err != nil {
		return err
	}
	var t *tenantsv1.Tenant
	if verb == "status" {
		r, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
		if err != nil {
			return err
		}
		t = r.Msg.GetTenant()
	} else {
		r, err := c.client.SetAP2Mandates(ctx, connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: p[0], Enabled: verb == "on"}))
		if err != nil {
			return err
		}
		t = r.Msg.GetTenant()
	}
	on := slices.Contains(t.GetCapabilities(), bcpnames.AP2Mandate)
	if c.json {
		return c.printJSON(map[string]any{"tenant": t.GetId(), "ap2_mandates": on})
	}
	state := "off"
	if on {
		state = "on: the profile advertises " + bcpnames.AP2Mandate + " (" + ap2.VPFormat + "); agents that speak it must send a checkout mandate to complete"
	}
	fmt.Fprintf(c.out, "tenant %s (%s): AP2 mandates %s\n", t.GetName(), t.GetSlug(), state)
	return nil
}

// agentMandate is the test wallet: for a checkout response (the JSON an
// AP2 merchant answered, with its ap2.merchant_authorization) it makes
// AP2's closed checkout mandate (vct mandate.checkout.1, for
// ap2.checkout_mandate) or, with --payment-instrument, AP2's payment
// mandate (vct mandate.payment.1, for the instrument's credential.token),
// signed with the agent's key (the one its profile publishes in
// signing_keys), and prints it.
func agentMandate(args []string, in io.Reader, out io.Writer) error {
	fs := newFS("agent mandate")
	keyFile := fs.String("key-file", "", "")
	kid := fs.String("kid", "", "")
	checkoutFile := fs.String("checkout", "-", "")
	audience := fs.String("audience", "", "")
	issuer := fs.String("issuer", "", "")
	lifetime := fs.Duration("lifetime", 10*time.Minute, "")
	instrument := fs.String("payment-instrument", "", "")
	instrumentType := fs.String("payment-type", "", "")
	instrumentDesc := fs.String("payment-description", "", "")
	payeeName := fs.String("payee-name", "", "")
	if _, err := parse(fs, args, 0, ""); err != nil {
		return err
	}
	if *keyFile == "" || *audience == "" {
		return usageError{"agent mandate needs --key-file (the agent's signing key) and --audience (the merchant origin, e.g. https://loja.example)"}
	}
	if (*instrument == "") != (*instrumentType == "") {
		return usageError{"a payment mandate needs both --payment-instrument (the instrument's id, e.g. pi_1) and --payment-type (its type: pix or card)"}
	}
	pemBytes, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	signer, err := agentclient.ParsePrivateKeyPEM(pemBytes)
	if err != nil {
		return err
	}
	key, ok := signer.(*ecdsa.PrivateKey)
	if !ok {
		return usageError{"agent mandate needs a P-256 (ES256) key"}
	}
	if *kid == "" {
		var j struct {
			Kid string `json:"kid"`
		}
		pub, err := agentclient.PublicJWK(key, "")
		if err != nil {
			return err
		}
		_ = json.Unmarshal(pub, &j)
		*kid = j.Kid
	}
	var raw []byte
	if *checkoutFile == "-" {
		raw, err = io.ReadAll(io.LimitReader(in, ap2.MaxMandate))
	} else {
		raw, err = os.ReadFile(*checkoutFile)
	}
	if err != nil {
		return err
	}
	checkout, err := checkoutOf(raw)
	if err != nil {
		return err
	}
	w := &ap2.Wallet{Issuer: key, IssuerKID: *kid, IssuerID: *issuer}
	var m string
	if *instrument != "" {
		inst := map[string]any{"id": *instrument, "type": *instrumentType}
		if *instrumentDesc != "" {
			inst["description"] = *instrumentDesc
		}
		d := ap2.PaymentDetails{Instrument: inst}
		if *payeeName != "" {
			d.Payee = map[string]any{"id": *audience, "name": *payeeName, "website": *audience}
		}
		m, err = w.PaymentMandate(checkout, *audience, d, ap2.MandateOptions{Lifetime: *lifetime})
	} else {
		m, err = w.Mandate(checkout, *audience, ap2.MandateOptions{Lifetime: *lifetime})
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, m)
	return nil
}

// checkoutOf accepts a checkout, an MCP tool result (structuredContent)
// or a whole JSON-RPC response holding one.
func checkoutOf(raw []byte) (json.RawMessage, error) {
	var probe struct {
		Result            json.RawMessage `json:"result"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		AP2               *struct {
			MerchantAuthorization string `json:"merchant_authorization"`
		} `json:"ap2"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, usageError{"the checkout must be JSON: a checkout response, an MCP tool result or a JSON-RPC response"}
	}
	switch {
	case len(probe.Result) > 0 && probe.Result[0] == '{':
		return checkoutOf(probe.Result)
	case len(probe.StructuredContent) > 0:
		return checkoutOf(probe.StructuredContent)
	case probe.AP2 == nil || probe.AP2.MerchantAuthorization == "":
		return nil, usageError{"the checkout has no ap2.merchant_authorization: is AP2 on for the merchant and in the agent profile?"}
	}
	return raw, nil
}
