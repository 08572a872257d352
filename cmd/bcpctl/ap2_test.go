package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/services/edge"
)

// bcpctl ap2 on|off|status switches the merchant's AP2 mandates and its
// profile follows; bcpctl agent mandate is a wallet whose mandates verify.
func TestAP2Commands(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{3}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out)
		return out.String(), err
	}
	advertised := func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.PublicAddr+"/.well-known/bcp", nil)
		req.Host = "ap2.localhost"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return bytes.Contains(b, []byte(`"br.dev.bcp.shopping.ap2_mandate":[{"version":"2026-07-28"`)) && bytes.Contains(b, []byte(`"vp_formats_supported":{"dc+sd-jwt":{}}`))
	}
	if _, err := ctl("tenant", "create", "--name", "Loja AP2", "--domain", "ap2.localhost"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		verb, want string
		on         bool
	}{{"status", "AP2 mandates off", false}, {"on", "AP2 mandates on", true}, {"status", "AP2 mandates on", true}, {"off", "AP2 mandates off", false}} {
		out, err := ctl("ap2", step.verb, "ap2.localhost")
		if err != nil || !strings.Contains(out, step.want) {
			t.Fatalf("ap2 %s: %q %v", step.verb, out, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for advertised() != step.on {
			if time.Now().After(deadline) {
				t.Fatalf("after ap2 %s the profile advertises AP2: %v", step.verb, !step.on)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := ctl("ap2", "on", "nope.localhost"); exitCode(err) != 2 || !strings.Contains(errorMessage(err), "tenant_not_found") {
		t.Fatalf("unknown tenant: %v", err)
	}

	// The wallet: a JSON-RPC answer in, a mandate out that verifies with
	// the key's JWK (kid: its thumbprint) for the audience and checkout.
	dir := t.TempDir()
	key, _ := agentclient.GenerateES256()
	pemBytes, _ := agentclient.MarshalPrivateKeyPEM(key)
	keyFile := filepath.Join(dir, "wallet.pem")
	_ = os.WriteFile(keyFile, pemBytes, 0o600)
	answer := filepath.Join(dir, "answer.json")
	_ = os.WriteFile(answer, []byte(`{"jsonrpc":"2.0","id":4,"result":{"content":[],"structuredContent":{"id":"chk_w","currency":"BRL","ap2":{"merchant_authorization":"aGVhZGVy..c2ln"}}}}`), 0o600)
	out, err := ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://ap2.localhost:8080", "--checkout", answer)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := agentclient.PublicJWK(key, "")
	m, err := ap2.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Verify(ap2.VerifyOptions{IssuerKeys: []json.RawMessage{pub}, Audience: "http://ap2.localhost:8080", Nonce: "chk_w", Now: time.Now()})
	if err != nil {
		t.Fatalf("the wallet's mandate: %v", err)
	}
	cm, err := v.CheckoutMandate(time.Now())
	if err != nil {
		t.Fatalf("the wallet's checkout mandate: %v", err)
	}
	// checkout_jwt is the merchant authorization with the checkout's JCS
	// form re-attached.
	wantJWT := "aGVhZGVy." + base64.RawURLEncoding.EncodeToString([]byte(`{"currency":"BRL","id":"chk_w"}`)) + ".c2ln"
	if cm.CheckoutJWT != wantJWT || v.VCT != "mandate.checkout.1" {
		t.Fatalf("checkout mandate %q %q", v.VCT, cm.CheckoutJWT)
	}
	validatesAgainstAP2(t, strings.TrimSpace(out), "checkout_mandate.json")
	// The payment mandate for the same checkout.
	out, err = ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://ap2.localhost:8080", "--checkout", answer,
		"--payment-instrument", "pi_1", "--payment-type", "pix", "--payment-description", "Pix")
	if err == nil || !strings.Contains(err.Error(), "no total") {
		t.Fatalf("a payment mandate for a checkout without a total: %q %v", out, err)
	}
	_ = os.WriteFile(answer, []byte(`{"id":"chk_w","currency":"BRL","totals":[{"type":"subtotal","amount":100},{"type":"total","amount":9072}],"ap2":{"merchant_authorization":"aGVhZGVy..c2ln"}}`), 0o600)
	out, err = ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://ap2.localhost:8080", "--checkout", answer,
		"--payment-instrument", "pi_1", "--payment-type", "pix", "--payment-description", "Pix")
	if err != nil {
		t.Fatal(err)
	}
	claims := validatesAgainstAP2(t, strings.TrimSpace(out), "payment_mandate.json")
	jwt := "aGVhZGVy." + base64.RawURLEncoding.EncodeToString([]byte(`{"currency":"BRL","id":"chk_w","totals":[{"amount":100,"type":"subtotal"},{"amount":9072,"type":"total"}]}`)) + ".c2ln"
	sum := sha256.Sum256([]byte(jwt))
	if claims["transaction_id"] != base64.RawURLEncoding.EncodeToString(sum[:]) || fmt.Sprint(claims["payment_amount"]) != "map[amount:9072 currency:BRL]" ||
		fmt.Sprint(claims["payment_instrument"]) != "map[description:Pix id:pi_1 type:pix]" || fmt.Sprint(claims["payee"]) != "map[id:http://ap2.localhost:8080 name:ap2.localhost website:http://ap2.localhost:8080]" {
		t.Fatalf("payment mandate claims %v", claims)
	}
	for _, bad := range [][]string{{"--payment-instrument", "pi_1"}, {"--payment-type", "pix"}} {
		if _, err := ctl(append([]string{"agent", "mandate", "--key-file", keyFile, "--audience", "http://x", "--checkout", answer}, bad...)...); exitCode(err) != 2 {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	_ = os.WriteFile(answer, []byte(`{"id":"chk_w"}`), 0o600)
	if _, err := ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://x", "--checkout", answer); exitCode(err) != 2 || !strings.Contains(errorMessage(err), "merchant_authorization") {
		t.Fatalf("a checkout without authorization: %v", err)
	}
	if _, err := ctl("agent", "mandate", "--checkout", answer); exitCode(err) != 2 {
		t.Fatalf("no key: %v", err)
	}
}

// validatesAgainstAP2 decodes an SD-JWT+kb by hand (RFC 9901: the issuer
// JWT's payload with each disclosure put in the place its digest has in
// _sd) and validates the claims against AP2's schema file, as published
// (protocol/ap2/schemas holds AP2's files unmodified); it returns them.
func validatesAgainstAP2(t *testing.T, mandate, schemaFile string) map[string]any {
	t.Helper()
	parts := strings.Split(mandate, "~")
	if len(parts) < 2 || strings.Count(parts[len(parts)-1], ".") != 2 {
		t.Fatalf("not an SD-JWT+kb: %q", mandate)
	}
	seg := strings.Split(parts[0], ".")
	payload, err := base64.RawURLEncoding.DecodeString(seg[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&claims); err != nil {
		t.Fatal(err)
	}
	if claims["_sd_alg"] != "sha-256" {
		t.Fatalf("_sd_alg %v", claims["_sd_alg"])
	}
	digests := map[string]bool{}
	for _, x := range claims["_sd"].([]any) {
		digests[x.(string)] = true
	}
	for _, disc := range parts[1 : len(parts)-1] {
		sum := sha256.Sum256([]byte(disc))
		if !digests[base64.RawURLEncoding.EncodeToString(sum[:])] {
			t.Fatalf("disclosure %q not in _sd", disc)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(disc)
		var arr []any
		if err := json.Unmarshal(raw, &arr); err != nil || len(arr) != 3 {
			t.Fatalf("disclosure %s", raw)
		}
		claims[arr[1].(string)] = arr[2]
	}
	delete(claims, "_sd")
	delete(claims, "_sd_alg")
	c := jsonschema.NewCompiler()
	dir := filepath.Join("..", "..", "protocol", "ap2", "schemas")
	for _, f := range []string{schemaFile, "types/merchant.json", "types/amount.json", "types/payment_instrument.json", "types/pisp.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err := c.AddResource(doc.(map[string]any)["$id"].(string), doc); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, schemaFile))
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	sch, err := c.Compile(doc.(map[string]any)["$id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(func() []byte { b, _ := json.Marshal(claims); return b }()))
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("the wallet's mandate does not follow AP2's %s: %v\n%v", schemaFile, err, claims)
	}
	return claims
}
