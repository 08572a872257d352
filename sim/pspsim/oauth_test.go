package pspsim

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/pki"
)

func TestProvisioningHandsOutWorkingCredentials(t *testing.T) {
	e := newEnv(t)
	var c Credentials
	st, body := e.control("POST", "/sim/v1/accounts", AccountRequest{Reference: "handler-1", Nome: "Loja Árvore"}, &c)
	if st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	if !regexp.MustCompile(`^pspsim_[a-z2-7]{26}$`).MatchString(c.ClientID) || len(c.ClientSecret) != 43 {
		t.Errorf("client_id %q, secret of %d characters", c.ClientID, len(c.ClientSecret))
	}
	if _, err := uuid.Parse(c.Chave); err != nil {
		t.Errorf("chave %q is not an EVP key: %v", c.Chave, err)
	}
	if c.Reference != "handler-1" || c.Nome != "Loja Árvore" || c.Cidade != "São Paulo" || c.APIURL != e.srv.PixURL() || c.TokenURL != e.srv.TokenURL() ||
		c.CAPEM != string(e.simCA.CertPEM) || !slices.Equal(c.Scopes, Scopes) {
		t.Errorf("credentials = %+v", c)
	}
	cred, err := pki.ParseCredentials([]byte(c.CertificatePEM), []byte(c.PrivateKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	if cred.Leaf.Subject.CommonName != c.ClientID {
		t.Errorf("certificate CN %q, want the client_id", cred.Leaf.Subject.CommonName)
	}
	if _, err := pki.VerifyClientChain(cred.Chain, e.simCA.Pool(), time.Now()); err != nil {
		t.Errorf("certificate not a client certificate of the simulator CA: %v", err)
	}
	p12, err := base64.StdEncoding.DecodeString(c.PKCS12Base64)
	if err != nil {
		t.Fatal(err)
	}
	fromP12, err := pki.ParsePKCS12(p12, c.ClientSecret)
	if err != nil || !fromP12.Leaf.Equal(cred.Leaf) {
		t.Fatalf("PKCS#12 (password = secret): %v", err)
	}

	// The account, without secrets.
	var info AccountInfo
	st, raw := e.control("GET", "/sim/v1/accounts/"+c.ClientID, nil, &info)
	sum := sha256.Sum256(cred.Leaf.Raw)
	if st != http.StatusOK || info.ClientID != c.ClientID || info.Chave != c.Chave || info.CertificateSHA256 != hex.EncodeToString(sum[:]) || len(info.CNPJ) != 14 {
		t.Errorf("GET account: %d %+v", st, info)
	}
	if strings.Contains(string(raw), c.ClientSecret) || strings.Contains(string(raw), "PRIVATE KEY") {
		t.Errorf("GET account shows a secret: %s", raw)
	}

	// The credentials work, and a token works on the API.
	m := e.merchant(c).login()
	if a := m.call("GET", "/cob/"+txid(1), nil); a.status != http.StatusNotFound {
		t.Fatalf("GET /cob with a fresh token: %d %s", a.status, a.body)
	}

	// Provisioning the same reference again: the same account, new
	// credentials; the old secret, certificate and tokens stop working.
	var again Credentials
	if st, body := e.control("POST", "/sim/v1/accounts", AccountRequest{Reference: "handler-1", Nome: "Loja Árvore"}, &again); st != http.StatusOK {
		t.Fatalf("again: %d %s", st, body)
	}
	if again.ClientID != c.ClientID || again.Chave != c.Chave || again.ClientSecret == c.ClientSecret || again.CertificatePEM == c.CertificatePEM {
		t.Fatalf("again = %+v, want the same account with new secret and certificate", again)
	}
	if a := m.call("GET", "/cob/"+txid(1), nil); a.status != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %d, want 401", a.status)
	}
	if resp, body := m.tokenRequest(m.hc, c.ClientID, c.ClientSecret, true, nil); resp.StatusCode != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("old secret and certificate: %d %v", resp.StatusCode, body)
	}
	if resp, body := m.tokenRequest(m.hc, c.ClientID, again.ClientSecret, true, nil); resp.StatusCode != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("new secret with the old certificate: %d %v", resp.StatusCode, body)
	}
	m2 := e.merchant(again).login()
	if a := m2.call("GET", "/cob/"+txid(1), nil); a.status != http.StatusNotFound {
		t.Errorf("new credentials: %d %s", a.status, a.body)
	}
}

func TestProvisioningRefusals(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		body any
		code string
	}{
		{map[string]any{"nome": "x"}, "invalid_reference"},
		{map[string]any{"reference": "r"}, "invalid_nome"},
		{map[string]any{"reference": "r", "nome": "x", "scopes": []string{"cobv.write"}}, "invalid_scope"},
		{map[string]any{"reference": "r", "nome": "x", "escopos": []string{}}, "invalid_request"},
	} {
		var got controlError
		st, b := e.control("POST", "/sim/v1/accounts", tc.body, nil)
		_ = json.Unmarshal(b, &got)
		if st != http.StatusBadRequest || got.Error != tc.code {
			t.Errorf("%v: %d %s, want 400 %s", tc.body, st, b, tc.code)
		}
	}
	req, _ := http.NewRequest("GET", e.srv.ControlURL()+"/sim/v1/faults", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := e.ctl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("wrong admin token: %d", resp.StatusCode)
	}
	if st, _ := e.control("GET", "/sim/v1/accounts/pspsim_nobody", nil, nil); st != http.StatusNotFound {
		t.Errorf("unknown account: %d", st)
	}
}

func TestTokenEndpoint(t *testing.T) {
	e := newEnv(t)
	a := e.provision("a")
	b := e.provision("b", "cob.read", "cob.write")

	for _, basic := range []bool{true, false} {
		resp, body := a.tokenRequest(a.hc, a.creds.ClientID, a.creds.ClientSecret, basic, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("basic=%v: %d %v", basic, resp.StatusCode, body)
		}
		if body["token_type"] != "Bearer" || body["expires_in"] != float64(3600) || body["scope"] != strings.Join(Scopes, " ") ||
			len(body["access_token"].(string)) != 43 {
			t.Errorf("basic=%v: token answer %v", basic, body)
		}
	}
	// A subset of the granted scopes.
	resp, body := a.tokenRequest(a.hc, a.creds.ClientID, a.creds.ClientSecret, true, url.Values{"grant_type": {"client_credentials"}, "scope": {"cob.read pix.read"}})
	if resp.StatusCode != http.StatusOK || body["scope"] != "cob.read pix.read" {
		t.Errorf("scoped token: %d %v", resp.StatusCode, body)
	}

	for _, tc := range []struct {
		name       string
		hc         *http.Client
		id, secret string
		basic      bool
		form       url.Values
		status     int
		code       string
	}{
		{"wrong secret", a.hc, a.creds.ClientID, "x" + a.creds.ClientSecret, true, nil, 401, "invalid_client"},
		{"wrong secret, post", a.hc, a.creds.ClientID, "x", false, nil, 401, "invalid_client"},
		{"unknown client", a.hc, "pspsim_nobody", "x", true, nil, 401, "invalid_client"},
		{"certificate of another account", b.hc, a.creds.ClientID, a.creds.ClientSecret, true, nil, 401, "invalid_client"},
		{"scope not granted", b.hc, b.creds.ClientID, b.creds.ClientSecret, true, url.Values{"grant_type": {"client_credentials"}, "scope": {"pix.read"}}, 400, "invalid_scope"},
		{"unknown scope", a.hc, a.creds.ClientID, a.creds.ClientSecret, true, url.Values{"grant_type": {"client_credentials"}, "scope": {"cobv.write"}}, 400, "invalid_scope"},
		{"other grant", a.hc, a.creds.ClientID, a.creds.ClientSecret, true, url.Values{"grant_type": {"password"}}, 400, "unsupported_grant_type"},
		{"no grant", a.hc, a.creds.ClientID, a.creds.ClientSecret, true, url.Values{}, 400, "invalid_request"},
	} {
		resp, body := a.tokenRequest(tc.hc, tc.id, tc.secret, tc.basic, tc.form)
		if resp.StatusCode != tc.status || body["error"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
		if tc.status == 401 && resp.Header.Get("WWW-Authenticate") != `Basic realm="pspsim"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// No client authentication at all.
	req, _ := http.NewRequest("POST", e.srv.TokenURL(), strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := a.hc.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no client authentication: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// No client certificate: the handshake fails, as at a real PSP.
	noCert := e.httpClient(tls.Certificate{})
	req, _ = http.NewRequest("POST", e.srv.TokenURL(), strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(a.creds.ClientID, a.creds.ClientSecret)
	if resp, err := noCert.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("no client certificate: %d, want a failed handshake", resp.StatusCode)
	}
	// Underneath, the server's alert says why.
	u, _ := url.Parse(e.srv.PixURL())
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: e.devCA.Pool()})
	if err == nil {
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("TLS without a client certificate: %v, want the certificate required alert", err)
	}
	// A certificate from another CA: refused by the handshake too.
	other, err := pki.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.IssueClient(a.creds.ClientID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.httpClient(stranger.TLS()).Get(e.srv.PixURL() + "/cob/" + txid(1)); err == nil {
		t.Error("a certificate of another CA was accepted")
	}
}

func TestAPIAuthentication(t *testing.T) {
	e := newEnv(t)
	a := e.provision("a").login()
	b := e.provision("b").login()
	path := "/cob/" + txid(1)

	noToken := &merchant{e: e, creds: a.creds, hc: a.hc}
	if r := noToken.call("GET", path, nil); r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != `Bearer realm="pspsim"` {
		t.Errorf("no token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	bogus := &merchant{e: e, creds: a.creds, hc: a.hc, token: "bogus"}
	if r := bogus.call("GET", path, nil); r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("unknown token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	// A's token over B's certificate.
	crossed := &merchant{e: e, creds: a.creds, hc: b.hc, token: a.token}
	if r := crossed.call("GET", path, nil); r.status != http.StatusUnauthorized {
		t.Errorf("token of A with the certificate of B: %d", r.status)
	}
	if r := a.call("GET", path, nil); r.status != http.StatusNotFound {
		t.Fatalf("A's own token: %d %s", r.status, r.body)
	}

	// Revoked: every token of the account stops working.
	var rev map[string]int64
	if st, body := e.control("POST", "/sim/v1/accounts/"+a.creds.ClientID+"/revoke-tokens", nil, &rev); st != http.StatusOK || rev["revoked"] != 1 {
		t.Fatalf("revoke: %d %s", st, body)
	}
	if r := a.call("GET", path, nil); r.status != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", r.status)
	}
	if r := b.call("GET", path, nil); r.status != http.StatusNotFound {
		t.Errorf("B after A's revocation: %d", r.status)
	}

	// Expired.
	a.login()
	e.clock.Advance(time.Hour + time.Second)
	if r := a.call("GET", path, nil); r.status != http.StatusUnauthorized {
		t.Errorf("expired token: %d", r.status)
	}

	// A scope the token lacks: 403 AcessoNegado naming it.
	ro := e.provision("read-only", "cob.read").login()
	p := problemOf(t, ro.call("PUT", path, ro.cobBody("1.00")), http.StatusForbidden, "AcessoNegado")
	if !strings.Contains(p.Detail, "cob.write") {
		t.Errorf("AcessoNegado detail %q does not name cob.write", p.Detail)
	}
	if r := ro.call("GET", path, nil); r.status != http.StatusNotFound {
		t.Errorf("granted scope: %d", r.status)
	}
}
