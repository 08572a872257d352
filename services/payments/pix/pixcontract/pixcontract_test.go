package pixcontract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/bcpdev/bcp/protocol/brcode"
	"github.com/bcpdev/bcp/services/payments/pix"
)

const (
	baseURL = "https://psp.example/api/v2"
	txid    = "7978c0c97ea847e78e8849634473c1f1" // 32, from the document's examples
	e2eid   = "E12345678202009091221abcdef12345"
	chave   = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
)

var (
	jsonHeader    = http.Header{"Content-Type": {"application/json"}}
	problemHeader = http.Header{"Content-Type": {"application/problem+json"}}
)

func contract(t testing.TB) *Contract {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// example is the value of the document's components/examples/<name>.
func example(t *testing.T, c *Contract, name string) []byte {
	t.Helper()
	ex := c.doc.Components.Examples[name]
	if ex == nil || ex.Value == nil {
		t.Fatalf("no example %s", name)
	}
	b, err := json.Marshal(ex.Value.Value)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit decodes a JSON object, lets fn change it, and encodes it again.
func edit(t *testing.T, b []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func request(method, path string, body []byte) *http.Request {
	r := httptest.NewRequest(method, baseURL+path, bytes.NewReader(body))
	if len(body) > 0 {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: want valid, got %v", what, err)
	}
}

func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: want error %q, got none", what, want)
		return
	}
	if err.Error() != want {
		t.Errorf("%s:\n got %s\nwant %s", what, err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("%s: error is %T, not *Error", what, err)
	}
}

// fixLoc adds to loc what CobGerada requires of it and the document's
// examples omit (txid, tipoCob, criacao).
func fixLoc(m map[string]any) {
	loc := m["loc"].(map[string]any)
	loc["txid"] = m["txid"]
	loc["tipoCob"] = "cob"
	loc["criacao"] = "2020-09-09T20:15:00.358Z"
}

func TestLoadParsesOnce(t *testing.T) {
	a, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("Load parsed the document twice")
	}
}

// The document's own examples of the operations the platform uses, as
// they are where they are right; where an example breaks its own schema,
// TestSpecExampleDefects shows how, and here it is used repaired.
func TestSpecExamples(t *testing.T) {
	c := contract(t)
	cobPath := "/cob/" + txid

	wantOK(t, "PUT /cob cobBody2", c.ValidateRequest(baseURL, request("PUT", cobPath, example(t, c, "cobBody2")), example(t, c, "cobBody2")))
	created := edit(t, example(t, c, "cobResponse1"), fixLoc)
	wantOK(t, "PUT /cob 201 cobResponse1", c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, created))
	wantOK(t, "GET /cob 200 cobResponse1", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 200, jsonHeader, created))
	// CobCompleta with its pix (cobResponse2).
	withPix := edit(t, example(t, c, "cobResponse2"), fixLoc)
	if !bytes.Contains(withPix, []byte(`"pix":[{`)) {
		t.Fatalf("cobResponse2 has no pix: %s", withPix)
	}
	wantOK(t, "GET /cob 200 cobResponse2", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 200, jsonHeader, withPix))
	wantOK(t, "GET /cob?revisao=1", c.ValidateRequest(baseURL, request("GET", cobPath+"?revisao=1", nil), nil))

	remove := []byte(`{"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}`)
	if got := example(t, c, "cobBody5"); !bytes.Equal(got, remove) {
		t.Fatalf("cobBody5 = %s", got)
	}
	wantOK(t, "PATCH /cob cobBody5", c.ValidateRequest(baseURL, request("PATCH", cobPath, remove), remove))
	wantOK(t, "PATCH /cob cobBody4", c.ValidateRequest(baseURL, request("PATCH", cobPath, example(t, c, "cobBody4")), example(t, c, "cobBody4")))
	revised := edit(t, example(t, c, "cobResponse3"), fixLoc)
	wantOK(t, "PATCH /cob 200 cobResponse3", c.ValidateResponse(baseURL, request("PATCH", cobPath, remove), 200, jsonHeader, revised))
	removed := edit(t, revised, func(m map[string]any) { m["status"] = "REMOVIDA_PELO_USUARIO_RECEBEDOR" })
	wantOK(t, "PATCH /cob 200 removed", c.ValidateResponse(baseURL, request("PATCH", cobPath, remove), 200, jsonHeader, removed))

	wantOK(t, "GET /pix/{e2eid}", c.ValidateRequest(baseURL, request("GET", "/pix/"+e2eid, nil), nil))
	wantOK(t, "GET /pix/{e2eid} 200 pixResponse1", c.ValidateResponse(baseURL, request("GET", "/pix/"+e2eid, nil), 200, jsonHeader, example(t, c, "pixResponse1")))

	list := "/pix?inicio=2020-04-01T00:00:00Z&fim=2020-04-01T23:59:59Z&paginacao.paginaAtual=0&paginacao.itensPorPagina=100"
	wantOK(t, "GET /pix?inicio&fim", c.ValidateRequest(baseURL, request("GET", list, nil), nil))
	wantOK(t, "GET /pix?inicio&fim with an offset", c.ValidateRequest(baseURL, request("GET", "/pix?inicio=2020-04-01T00:00:00-03:00&fim=2020-04-01T23:59:59.999%2B01:00", nil), nil))
	wantOK(t, "GET /pix 200 getPix1", c.ValidateResponse(baseURL, request("GET", list, nil), 200, jsonHeader, getPix1(t, c)))

	devPath := "/pix/" + e2eid + "/devolucao/123456"
	sol := example(t, c, "devolucaoSolicitada1")
	wantOK(t, "PUT /devolucao devolucaoSolicitada1", c.ValidateRequest(baseURL, request("PUT", devPath, sol), sol))
	wantOK(t, "PUT /devolucao 201 devolucaoResponse1", c.ValidateResponse(baseURL, request("PUT", devPath, sol), 201, jsonHeader, example(t, c, "devolucaoResponse1")))
	for _, name := range []string{"devolucaoResponse1", "devolucaoResponse2"} {
		wantOK(t, "GET /devolucao 200 "+name, c.ValidateResponse(baseURL, request("GET", devPath, nil), 200, jsonHeader, example(t, c, name)))
	}

	hook := example(t, c, "webhookBody1")
	if !bytes.Equal(hook, []byte(`{"webhookUrl":"https://pix.example.com/api/webhook/"}`)) {
		t.Fatalf("webhookBody1 = %s", hook)
	}
	wantOK(t, "PUT /webhook webhookBody1", c.ValidateRequest(baseURL, request("PUT", "/webhook/"+chave, hook), hook))
	wantOK(t, "PUT /webhook 200", c.ValidateResponse(baseURL, request("PUT", "/webhook/"+chave, hook), 200, http.Header{}, nil))
	wantOK(t, "PUT /webhook with an e-mail key", c.ValidateRequest(baseURL, request("PUT", "/webhook/loja@example.com", hook), hook))

	for _, p := range []struct {
		status  int
		method  string
		path    string
		example string
	}{
		{404, "GET", cobPath, "NaoEncontradoExample1"},
		{403, "GET", cobPath, "AcessoNegadoExample1"},
		{503, "GET", cobPath, "ServicoIndisponivelExample1"},
		{400, "PUT", cobPath, "RequisicaoInvalidaCobExample1"},
		{400, "PATCH", cobPath, "OperacaoInvalidaCobExample1"},
		{400, "PUT", devPath, "RequisicaoInvalidaDevolucaoExample1"},
		{400, "PUT", "/webhook/" + chave, "RequisicaoInvalidaWebhookExample1"},
		{404, "GET", "/pix/" + e2eid, "NaoEncontradoExample1"},
	} {
		b := example(t, c, p.example)
		wantOK(t, p.example, c.ValidateProblem(p.status, b))
		wantOK(t, p.method+" "+p.path+" "+p.example, c.ValidateResponse(baseURL, request(p.method, p.path, nil), p.status, problemHeader, b))
	}

	wantOK(t, "webhook with two Pix", c.ValidateWebhook(webhookTwoPix(t, c)))
}

// getPix1 is the document's example of GET /pix, whose list items are
// "allOf: [$ref: …/pixResponseN/value]" (a schema construct, not a value):
// built here from pixResponse1 and pixResponse2, the latter with its
// 34-character endToEndId cut to 32.
func getPix1(t *testing.T, c *Contract) []byte {
	return edit(t, example(t, c, "getPix1"), func(m map[string]any) {
		var p1, p2 map[string]any
		json.Unmarshal(example(t, c, "pixResponse1"), &p1)
		json.Unmarshal(example(t, c, "pixResponse2"), &p2)
		p2["endToEndId"] = p2["endToEndId"].(string)[:32]
		m["pix"] = []any{p1, p2}
	})
}

// webhookTwoPix is pixWebhook1 and pixWebhook2 as one notification, the
// first one's "devolucoes" (an object in the example) made the list it is.
func webhookTwoPix(t *testing.T, c *Contract) []byte {
	var p1, p2 map[string]any
	json.Unmarshal(example(t, c, "pixWebhook1"), &p1)
	json.Unmarshal(example(t, c, "pixWebhook2"), &p2)
	p1["devolucoes"] = []any{p1["devolucoes"]}
	return mustJSON(t, map[string]any{"pix": []any{p1, p2}})
}

// The document's examples for the platform's operations that break the
// document's own schemas, exactly as they fail.
func TestSpecExampleDefects(t *testing.T) {
	c := contract(t)
	cobPath := "/cob/" + txid
	// CobGerada's loc requires id, txid, tipoCob and criacao; the examples
	// leave some out (kin-openapi reports loc's own "required" once its
	// allOf, PayloadLocation, passes: txid shows up after criacao is added).
	wantErr(t, "cobResponse1 (loc lacks criacao)",
		c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, example(t, c, "cobResponse1")),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: at /loc/criacao: property "criacao" is missing`)
	withCriacao := edit(t, example(t, c, "cobResponse1"), func(m map[string]any) {
		m["loc"].(map[string]any)["criacao"] = "2020-09-09T20:15:00.358Z"
	})
	wantErr(t, "cobResponse1 (loc lacks txid)",
		c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, withCriacao),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: at /loc/txid: property "txid" is missing`)
	wantErr(t, "cobResponse2 (loc lacks tipoCob, criacao)",
		c.ValidateResponse(baseURL, request("GET", cobPath, nil), 200, jsonHeader, example(t, c, "cobResponse2")),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) response 200: body: at /loc/tipoCob: property "tipoCob" is missing; body: at /loc/criacao: property "criacao" is missing`)
	// valor.retirada is oneOf {saque} | {troco} with neither required, so
	// any retirada matches both (Pix Saque/Troco; the platform uses neither).
	for _, name := range []string{"cobResponse5", "cobResponse6", "cobResponse7"} {
		wantErr(t, name+" (retirada)",
			c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, edit(t, example(t, c, name), fixLoc)),
			`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: at /valor/retirada: value matches more than one schema from "oneOf" (matches schemas at indices [0 1])`)
	}
	cobBody6 := example(t, c, "cobBody6")
	wantErr(t, "cobBody6 (retirada; no calendario)",
		c.ValidateRequest(baseURL, request("PUT", cobPath, cobBody6), cobBody6),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: at /valor/retirada: value matches more than one schema from "oneOf" (matches schemas at indices [0 1])`)
	noRetirada := edit(t, cobBody6, func(m map[string]any) { delete(m["valor"].(map[string]any), "retirada") })
	wantErr(t, "cobBody6 (no calendario)",
		c.ValidateRequest(baseURL, request("PUT", cobPath, noRetirada), noRetirada),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: at /calendario: property "calendario" is missing`)
	cobBody3 := example(t, c, "cobBody3")
	wantErr(t, "cobBody3 (loc.id is readOnly, loc lacks tipoCob)",
		c.ValidateRequest(baseURL, request("PATCH", cobPath, cobBody3), cobBody3),
		`API Pix contract: PATCH /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PATCH /cob/{txid}) request: body: at /loc/id: readOnly property "id" in request; body: at /loc/tipoCob: property "tipoCob" is missing`)
	pixResponse2 := example(t, c, "pixResponse2")
	wantErr(t, "pixResponse2 (34-character endToEndId)",
		c.ValidateResponse(baseURL, request("GET", "/pix/"+e2eid, nil), 200, jsonHeader, pixResponse2),
		`API Pix contract: GET /api/v2/pix/E12345678202009091221abcdef12345 (GET /pix/{e2eid}) response 200: body: at /endToEndId: maximum string length is 32; body: at /endToEndId: string doesn't match the regular expression "^(?:[a-zA-Z0-9]{32})$"`)
	wantErr(t, "getPix1 (allOf in a value)",
		c.ValidateResponse(baseURL, request("GET", "/pix?inicio=2020-04-01T00:00:00Z&fim=2020-04-01T23:59:59Z", nil), 200, jsonHeader, example(t, c, "getPix1")),
		`API Pix contract: GET /api/v2/pix (GET /pix) response 200: body: at /pix/0/endToEndId: property "endToEndId" is missing; body: at /pix/0/valor: property "valor" is missing; body: at /pix/0/horario: property "horario" is missing; body: at /pix/1/endToEndId: property "endToEndId" is missing; body: at /pix/1/valor: property "valor" is missing; body: at /pix/1/horario: property "horario" is missing; body: at /pix/2/endToEndId: property "endToEndId" is missing; body: at /pix/2/valor: property "valor" is missing; body: at /pix/2/horario: property "horario" is missing`)
	hook := mustJSON(t, map[string]any{"pix": []any{json.RawMessage(example(t, c, "pixWebhook1"))}})
	wantErr(t, "pixWebhook1 (devolucoes is an object)", c.ValidateWebhook(hook),
		`API Pix contract: webhook: body: at /pix/0/devolucoes: value must be an array`)
}

func TestBrokenTrafficFails(t *testing.T) {
	c := contract(t)
	cobPath := "/cob/" + txid
	cob := func(valor string) []byte {
		return []byte(`{"calendario":{"expiracao":3600},"valor":{"original":"` + valor + `"},"chave":"` + chave + `"}`)
	}
	wantOK(t, "a right CobSolicitada", c.ValidateRequest(baseURL, request("PUT", cobPath, cob("1.00")), cob("1.00")))
	valorErr := `API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: at /valor/original: string doesn't match the regular expression "^(?:\d{1,10}\.\d{2})$"`
	for _, v := range []string{"1,00", "1.0", "1.000", "12345678901.00", "-1.00"} {
		wantErr(t, "valor.original "+v, c.ValidateRequest(baseURL, request("PUT", cobPath, cob(v)), cob(v)), valorErr)
	}

	for _, n := range []int{25, 36} {
		id := strings.Repeat("a", n)
		wantErr(t, "txid of "+id, c.ValidateRequest(baseURL, request("PUT", "/cob/"+id, cob("1.00")), cob("1.00")),
			`API Pix contract: PUT /api/v2/cob/`+id+` (PUT /cob/{txid}) request: parameter "txid" in path: string doesn't match the regular expression "^(?:[a-zA-Z0-9]{26,35})$"`)
	}

	noChave := []byte(`{"calendario":{"expiracao":3600},"valor":{"original":"1.00"}}`)
	wantErr(t, "CobSolicitada without chave", c.ValidateRequest(baseURL, request("PUT", cobPath, noChave), noChave),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: at /chave: property "chave" is missing`)
	wantErr(t, "CobSolicitada without Content-Type", c.ValidateRequest(baseURL, httptest.NewRequest("PUT", baseURL+cobPath, nil), cob("1.00")),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: header Content-Type has unexpected value ""`)
	wantErr(t, "PUT /cob without a body", c.ValidateRequest(baseURL, request("PUT", cobPath, nil), nil),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: value is required but missing`)
	wantErr(t, "GET with a body", c.ValidateRequest(baseURL, request("GET", cobPath, cob("1.00")), cob("1.00")),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) request: request body not allowed for this request`)
	wantErr(t, "PATCH to an unknown status", c.ValidateRequest(baseURL, request("PATCH", cobPath, []byte(`{"status":"CANCELADA"}`)), []byte(`{"status":"CANCELADA"}`)),
		`API Pix contract: PATCH /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PATCH /cob/{txid}) request: body: at /status: value is not one of the allowed values ["REMOVIDA_PELO_USUARIO_RECEBEDOR"]`)

	noE2E := edit(t, example(t, c, "pixResponse1"), func(m map[string]any) { delete(m, "endToEndId") })
	wantErr(t, "Pix without endToEndId", c.ValidateResponse(baseURL, request("GET", "/pix/"+e2eid, nil), 200, jsonHeader, noE2E),
		`API Pix contract: GET /api/v2/pix/E12345678202009091221abcdef12345 (GET /pix/{e2eid}) response 200: body: at /endToEndId: property "endToEndId" is missing`)
	wantErr(t, "webhook Pix without endToEndId", c.ValidateWebhook([]byte(`{"pix":[`+string(noE2E)+`]}`)),
		`API Pix contract: webhook: body: at /pix/0/endToEndId: property "endToEndId" is missing`)
	wantErr(t, "webhook with no Pix", c.ValidateWebhook([]byte(`{"pix":[]}`)),
		`API Pix contract: webhook: body: at /pix: minimum number of items is 1`)
	wantErr(t, "webhook that is not JSON", c.ValidateWebhook([]byte(`pix`)),
		`API Pix contract: webhook: body: failed to decode request body: invalid character 'p' looking for beginning of value`)

	feito := edit(t, example(t, c, "devolucaoResponse1"), func(m map[string]any) { m["status"] = "FEITO" })
	devPath := "/pix/" + e2eid + "/devolucao/123456"
	wantErr(t, "Devolucao FEITO", c.ValidateResponse(baseURL, request("GET", devPath, nil), 200, jsonHeader, feito),
		`API Pix contract: GET /api/v2/pix/E12345678202009091221abcdef12345/devolucao/123456 (GET /pix/{e2eid}/devolucao/{id}) response 200: body: at /status: value is not one of the allowed values ["EM_PROCESSAMENTO","DEVOLVIDO","NAO_REALIZADO"]`)

	for _, p := range []struct{ method, path, want string }{
		{"PUT", baseURL + "/cobranca/" + txid, `API Pix contract: PUT /api/v2/cobranca/7978c0c97ea847e78e8849634473c1f1 request: no such operation in the API Pix: PUT /cobranca/7978c0c97ea847e78e8849634473c1f1 (no matching operation was found)`},
		{"GET", baseURL + cobPath + "/pix", `API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1/pix request: no such operation in the API Pix: GET /cob/7978c0c97ea847e78e8849634473c1f1/pix (no matching operation was found)`},
		{"DELETE", baseURL + cobPath, `API Pix contract: DELETE /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 request: no such operation in the API Pix: DELETE /cob/7978c0c97ea847e78e8849634473c1f1 (no matching operation was found)`},
		{"GET", "https://psp.example/api/v1" + cobPath, `API Pix contract: GET /api/v1/cob/7978c0c97ea847e78e8849634473c1f1 request: no such operation in the API Pix: path is not below the base path "/api/v2"`},
		// A payload location is served at its own URL, not below the API.
		{"GET", baseURL + "/9d36b84fc70b478fb95c12729b90ca25", `API Pix contract: GET /api/v2/9d36b84fc70b478fb95c12729b90ca25 request: no such operation in the API Pix: GET /9d36b84fc70b478fb95c12729b90ca25 (no matching operation was found)`},
	} {
		err := c.ValidateRequest(baseURL, httptest.NewRequest(p.method, p.path, nil), nil)
		wantErr(t, p.method+" "+p.path, err, p.want)
		if !errors.Is(err, ErrNoOperation) {
			t.Errorf("%s %s: not ErrNoOperation", p.method, p.path)
		}
	}

	noType := []byte(`{"title":"Não Encontrado","status":404}`)
	wantErr(t, "problem without type", c.ValidateProblem(404, noType), `API Pix contract: problem 404: at /type: property "type" is missing`)
	wantErr(t, "404 without type", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 404, problemHeader, noType),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) response 404: body: at /type: property "type" is missing`)
	shortType := []byte(`{"type":"CobNaoEncontrado","title":"Não Encontrado","status":404}`)
	wantErr(t, "problem type without base", c.ValidateProblem(404, shortType),
		`API Pix contract: problem 404: at /type: string doesn't match the format "uri" (not an absolute URI: it has no scheme)`)
	otherType := []byte(`{"type":"https://example.com/error/CobNaoEncontrado","title":"Não Encontrado","status":404}`)
	wantErr(t, "problem type outside the API Pix", c.ValidateProblem(404, otherType),
		`API Pix contract: problem 404: at /type: problem type "https://example.com/error/CobNaoEncontrado" is not https://pix.bcb.gov.br/api/v2/error/<TipoErro>`)
	otherStatus := []byte(`{"type":"https://pix.bcb.gov.br/api/v2/error/CobNaoEncontrado","title":"Não Encontrado","status":400}`)
	both := []byte(`{"type":"https://example.com/error/CobNaoEncontrado","title":"Não Encontrado","status":400}`)
	wantErr(t, "problem type and status wrong", c.ValidateProblem(404, both),
		`API Pix contract: problem 404: at /type: problem type "https://example.com/error/CobNaoEncontrado" is not https://pix.bcb.gov.br/api/v2/error/<TipoErro>; at /status: problem status 400 differs from the HTTP status 404`)
	wantErr(t, "problem status differs", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 404, problemHeader, otherStatus),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) response 404: at /status: problem status 400 differs from the HTTP status 404`)
	wantErr(t, "problem as application/json", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 404, jsonHeader, example(t, c, "NaoEncontradoExample1")),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) response 404: response header Content-Type has unexpected value: "application/json"`)

	created := edit(t, example(t, c, "cobResponse1"), fixLoc)
	err := c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 200, jsonHeader, created)
	wantErr(t, "200 to PUT /cob", err,
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 200: status not documented for the operation (documented: 201, 400, 403, 404, 503)`)
	if !errors.Is(err, ErrUndocumentedStatus) {
		t.Error("200 to PUT /cob: not ErrUndocumentedStatus")
	}
	wantErr(t, "201 to GET /cob", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 201, jsonHeader, created),
		`API Pix contract: GET /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (GET /cob/{txid}) response 201: status not documented for the operation (documented: 200, 403, 404, 503)`)
	wantErr(t, "201 with an empty body", c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, nil),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: failed to decode response body: EOF`)
	withScheme := edit(t, created, func(m map[string]any) { m["location"] = "https://" + m["location"].(string) })
	wantErr(t, "location with its scheme", c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, withScheme),
		`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: at /location: string doesn't match the format "pix-location" (not a location: a location is written without its scheme)`)
	badTime := edit(t, created, func(m map[string]any) { m["calendario"].(map[string]any)["criacao"] = "2020-09-09 20:15:00" })
	if err := c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, badTime); err == nil || !strings.Contains(err.Error(), `body: at /calendario/criacao: string doesn't match the format "date-time"`) {
		t.Errorf("criacao not RFC 3339: got %v", err)
	}
	badHook := []byte(`{"webhookUrl":"pix.example.com/api/webhook/"}`)
	wantErr(t, "webhookUrl without scheme", c.ValidateRequest(baseURL, request("PUT", "/webhook/"+chave, badHook), badHook),
		`API Pix contract: PUT /api/v2/webhook/7d9f0335-8dcc-4054-9bf9-0dbd61d36906 (PUT /webhook/{chave}) request: body: at /webhookUrl: string doesn't match the format "uri" (not an absolute URI: it has no scheme)`)
	wantErr(t, "GET /pix without fim", c.ValidateRequest(baseURL, request("GET", "/pix?inicio=2020-04-01T00:00:00Z", nil), nil),
		`API Pix contract: GET /api/v2/pix (GET /pix) request: parameter "fim" in query: value is required but missing`)
}

// Each patch of the document is needed: the document as published, read
// by kin-openapi, rejects what the API means (or lets through what it
// forbids), and the patched one does not.
func TestPatchesAreNeeded(t *testing.T) {
	c := contract(t)
	raw, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	resp := append(slices.Clone(c.schemaOpts), openapi3.VisitAsResponse())
	visit := func(doc *openapi3.T, schema string, v string) error {
		t.Helper()
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			t.Fatal(err)
		}
		return doc.Components.Schemas[schema].Value.VisitJSON(x, resp...)
	}

	t.Run("document", func(t *testing.T) {
		err := raw.Validate(context.Background(), append(docValidation, openapi3.EnableMultiError())...)
		for _, want := range []string{
			`invalid components: schema "CobExpiracao": invalid default: value must be an integer`,
			`conflicting paths "/cobv/{txid}" and "/cobv/{pixUrlAccessToken}"`,
			`conflicting paths "/rec/{recUrlAccessToken}" and "/rec/{idRec}"`,
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("unpatched document: want %q in %v", want, err)
			}
		}
		if err := c.doc.Validate(context.Background(), docValidation...); err != nil {
			t.Errorf("patched document: %v", err)
		}
	})

	t.Run("cpf", func(t *testing.T) {
		fisica := `{"cpf":"12345678909","nome":"Francisco da Silva"}`
		if err := visit(raw, "PessoaFisica", fisica); err == nil || !strings.Contains(err.Error(), `Error at "/cpf": string doesn't match the regular expression "/^\d{11}$/"`) {
			t.Errorf("unpatched: want the CPF rejected, got %v", err)
		}
		if err := visit(c.doc, "PessoaFisica", fisica); err != nil {
			t.Errorf("patched: %v", err)
		}
		if err := visit(c.doc, "PessoaFisica", `{"cpf":"1234567890","nome":"F"}`); err == nil {
			t.Error("patched: a 10-digit CPF passed")
		}
		cpf := "/pix?inicio=2020-04-01T00:00:00Z&fim=2020-04-01T23:59:59Z&cpf=12345678909"
		wantOK(t, "GET /pix?cpf", c.ValidateRequest(baseURL, request("GET", cpf, nil), nil))
	})

	t.Run("PixConsultados", func(t *testing.T) {
		body := string(getPix1(t, c))
		if err := visit(raw, "PixConsultados", body); err == nil || !strings.Contains(err.Error(), `property "cobs" is missing`) {
			t.Errorf("unpatched: want cobs required, got %v", err)
		}
		if err := visit(c.doc, "PixConsultados", body); err != nil {
			t.Errorf("patched: %v", err)
		}
		noPix := string(edit(t, []byte(body), func(m map[string]any) { delete(m, "pix") }))
		if err := visit(c.doc, "PixConsultados", noPix); err == nil || !strings.Contains(err.Error(), `property "pix" is missing`) {
			t.Errorf("patched: want pix required, got %v", err)
		}
	})

	t.Run("location", func(t *testing.T) {
		body := string(edit(t, example(t, c, "cobResponse1"), fixLoc))
		err := visit(raw, "CobGerada", body)
		if err == nil || describe(err) != `at /loc/location: string doesn't match the format "uri" (not an absolute URI: it has no scheme); at /location: string doesn't match the format "uri" (not an absolute URI: it has no scheme)` {
			t.Errorf("unpatched: want location rejected as uri, got %v", err)
		}
		if err := visit(c.doc, "CobGerada", body); err != nil {
			t.Errorf("patched: %v", err)
		}
		for _, bad := range []string{"https://pix.example.com/qr/v2/x", "pix.example.com/qr v2", "/qr/v2/x"} {
			if err := validateLocation(bad); err == nil {
				t.Errorf("location %q passed", bad)
			}
		}
	})

	t.Run("uri", func(t *testing.T) {
		// kin-openapi leaves "uri" unchecked unless told how.
		var x any = map[string]any{"webhookUrl": "not a URL"}
		if err := raw.Components.Schemas["WebhookSolicitado"].Value.VisitJSON(x); err != nil {
			t.Errorf("kin-openapi checked uri by itself: %v", err)
		}
		if err := visit(c.doc, "WebhookSolicitado", `{"webhookUrl":"not a URL"}`); err == nil {
			t.Error("patched: webhookUrl \"not a URL\" passed")
		}
	})

	t.Run("anchored patterns", func(t *testing.T) {
		for _, v := range []string{`"1.001"`, `"12345678901.00"`} {
			pixBody := `{"endToEndId":"` + e2eid + `","valor":` + v + `,"horario":"2020-09-10T13:03:33.902Z"}`
			if err := visit(raw, "Pix", pixBody); err != nil {
				t.Errorf("unpatched: valor %s: %v", v, err)
			}
			if err := visit(c.doc, "Pix", pixBody); err == nil {
				t.Errorf("patched: valor %s passed", v)
			}
		}
		long := `"` + strings.Repeat("a", 36) + `"`
		if err := visit(raw, "TxId", long); err != nil {
			t.Errorf("unpatched: 36-character txid: %v", err)
		}
		if err := visit(c.doc, "TxId", long); err == nil {
			t.Error("patched: 36-character txid passed")
		}
	})

	t.Run("webhook body", func(t *testing.T) {
		rawBody, err := webhookBody(raw)
		if err != nil {
			t.Fatal(err)
		}
		schema := rawBody.Content.Get("application/json").Schema.Value
		for _, v := range []any{map[string]any{}, []any{}} {
			if err := schema.VisitJSON(v); err != nil {
				t.Errorf("unpatched: %v rejected: %v", v, err)
			}
		}
		wantErr(t, "{}", c.ValidateWebhook([]byte(`{}`)), `API Pix contract: webhook: body: at /pix: property "pix" is missing`)
		wantErr(t, "[]", c.ValidateWebhook([]byte(`[]`)), `API Pix contract: webhook: body: value must be an object`)
	})
}

// collector gathers what a Transport or Middleware reports.
type collector struct {
	mu   sync.Mutex
	errs []error
}

func (c *collector) report(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

func (c *collector) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.errs {
		out = append(out, e.Error())
	}
	c.errs = nil
	return out
}

func TestTransport(t *testing.T) {
	c := contract(t)
	good := edit(t, example(t, c, "cobResponse1"), fixLoc)
	bad := edit(t, good, func(m map[string]any) { m["valor"].(map[string]any)["original"] = "37,00" })
	var reply []byte
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(reply)
	}))
	defer srv.Close()
	var col collector
	hc := &http.Client{Transport: c.Transport(srv.URL+"/api/v2", srv.Client().Transport, col.report)}

	put := func(body []byte) []byte {
		t.Helper()
		req, err := http.NewRequest("PUT", srv.URL+"/api/v2/cob/"+txid, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %d", resp.StatusCode)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sol := example(t, c, "cobBody2")

	reply = good
	if got := put(sol); !bytes.Equal(got, good) || !bytes.Equal(gotBody, sol) {
		t.Errorf("traffic changed: client got %s, server got %s", got, gotBody)
	}
	if errs := col.take(); len(errs) != 0 {
		t.Errorf("right traffic reported: %q", errs)
	}

	reply = bad
	if got := put(sol); !bytes.Equal(got, bad) {
		t.Errorf("client got %s", got)
	}
	want := []string{`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) response 201: body: at /valor/original: string doesn't match the regular expression "^(?:\d{1,10}\.\d{2})$"`}
	if errs := col.take(); !slices.Equal(errs, want) {
		t.Errorf("reported %q, want %q", errs, want)
	}

	reply = good
	badSol := edit(t, sol, func(m map[string]any) { delete(m, "chave") })
	if put(badSol); !bytes.Equal(gotBody, badSol) {
		t.Errorf("server got %s", gotBody)
	}
	want = []string{`API Pix contract: PUT /api/v2/cob/7978c0c97ea847e78e8849634473c1f1 (PUT /cob/{txid}) request: body: at /chave: property "chave" is missing`}
	if errs := col.take(); !slices.Equal(errs, want) {
		t.Errorf("reported %q, want %q", errs, want)
	}

	// Without report, a failure is the call's error.
	strict := &http.Client{Transport: c.Transport(srv.URL+"/api/v2", srv.Client().Transport, nil)}
	do := func(body []byte) error {
		req, _ := http.NewRequest("PUT", srv.URL+"/api/v2/cob/"+txid, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := strict.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	reply, gotBody = good, nil
	if err := do(sol); err != nil {
		t.Errorf("strict, right traffic: %v", err)
	}
	gotBody = nil
	err := do(badSol)
	var ce *Error
	if !errors.As(err, &ce) || ce.Part != "request" || gotBody != nil {
		t.Errorf("strict, bad request: err %v, server got %s", err, gotBody)
	}
	reply = bad
	if err := do(sol); !errors.As(err, &ce) || ce.Part != "response" || ce.Status != 201 || ce.Operation != "PUT /cob/{txid}" {
		t.Errorf("strict, bad response: %v", err)
	}
}

func TestMiddleware(t *testing.T) {
	c := contract(t)
	good := example(t, c, "devolucaoResponse1")
	bad := edit(t, good, func(m map[string]any) { m["status"] = "FEITO" })
	var reply []byte
	var gotBody []byte
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Trace", "abc")
		w.WriteHeader(http.StatusCreated)
		w.Write(reply)
	})
	var col collector
	srv := httptest.NewServer(c.Middleware("/api/v2", handler, col.report))
	defer srv.Close()
	sol := example(t, c, "devolucaoSolicitada1")
	put := func(path string) []byte {
		t.Helper()
		req, err := http.NewRequest("PUT", srv.URL+path, bytes.NewReader(sol))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Trace") != "abc" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("status %d, header %v", resp.StatusCode, resp.Header)
		}
		b, _ := io.ReadAll(resp.Body)
		if !bytes.Equal(gotBody, sol) {
			t.Errorf("handler got %s", gotBody)
		}
		return b
	}
	path := "/api/v2/pix/" + e2eid + "/devolucao/123456"

	reply = good
	if got := put(path); !bytes.Equal(got, good) {
		t.Errorf("client got %s", got)
	}
	if errs := col.take(); len(errs) != 0 {
		t.Errorf("right traffic reported: %q", errs)
	}

	reply = bad
	if got := put(path); !bytes.Equal(got, bad) {
		t.Errorf("client got %s", got)
	}
	want := []string{`API Pix contract: PUT /api/v2/pix/E12345678202009091221abcdef12345/devolucao/123456 (PUT /pix/{e2eid}/devolucao/{id}) response 201: body: at /status: value is not one of the allowed values ["EM_PROCESSAMENTO","DEVOLVIDO","NAO_REALIZADO"]`}
	if errs := col.take(); !slices.Equal(errs, want) {
		t.Errorf("reported %q, want %q", errs, want)
	}

	// Without report, the client gets a 500 naming the failure.
	strict := httptest.NewServer(c.Middleware("/api/v2", handler, nil))
	defer strict.Close()
	resp, err := strict.Client().Post(strict.URL+path, "application/json", bytes.NewReader(sol))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want500 := `API Pix contract: POST /api/v2/pix/E12345678202009091221abcdef12345/devolucao/123456 request: no such operation in the API Pix: POST /pix/E12345678202009091221abcdef12345/devolucao/123456 (no matching operation was found)` + "\n"
	if resp.StatusCode != http.StatusInternalServerError || string(b) != want500 {
		t.Errorf("strict: %d %q", resp.StatusCode, b)
	}

	reply = good
	put("/api/v2/pix/" + e2eid + "/devolucao/no-dashes")
	want = []string{`API Pix contract: PUT /api/v2/pix/E12345678202009091221abcdef12345/devolucao/no-dashes (PUT /pix/{e2eid}/devolucao/{id}) request: parameter "id" in path: string doesn't match the regular expression "^(?:[a-zA-Z0-9]{1,35})$"`}
	if errs := col.take(); !slices.Equal(errs, want) {
		t.Errorf("reported %q, want %q", errs, want)
	}
}

// The platform's Go types (package pix) as the API Pix client reads and
// writes them.
func TestPlatformTypes(t *testing.T) {
	c := contract(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	location := "pix.sandbox.bcp.dev.br/sim/pix/qr/0b8f7f0e-3c56-4a7e-9d1b-2f5a8e1c4d3b"
	code, err := brcode.Payload{URL: location, Amount: 1000, MerchantName: "LOJA", MerchantCity: "SAO PAULO"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cob := pix.Cob{Txid: txid, Revisao: 0, Status: pix.StatusAtiva, Chave: chave, Location: location, PixCopiaECola: code}
	cob.Calendario.Criacao = now
	cob.Calendario.Expiracao = 3600
	cob.Valor.Original = "10.00"
	cobPath := "/cob/" + txid
	wantOK(t, "Cob as toCob makes it, 201", c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, mustJSON(t, cob)))

	liq := now.Add(time.Second)
	dev := pix.Devolucao{ID: "r1", RtrID: "D99999999202603040506abcdefghijk", Valor: "4.00", Natureza: pix.NaturezaOriginal, Status: pix.DevolucaoDevolvido}
	dev.Horario.Solicitacao = now
	dev.Horario.Liquidacao = &liq
	paid := pix.Pix{EndToEndID: "E99999999202603040506abcdefghijk", Txid: txid, Valor: "10.00", Horario: now, InfoPagador: "Pagamento simulado", Devolucoes: []pix.Devolucao{dev}}
	concluida := cob
	concluida.Status = pix.StatusConcluida
	concluida.Pix = []pix.Pix{paid}
	wantOK(t, "paid Cob, GET 200", c.ValidateResponse(baseURL, request("GET", cobPath, nil), 200, jsonHeader, mustJSON(t, concluida)))
	removed := cob
	removed.Status = pix.StatusRemovidaRecebedor
	removed.Revisao = 1
	wantOK(t, "removed Cob, PATCH 200", c.ValidateResponse(baseURL, request("PATCH", cobPath, nil), 200, jsonHeader, mustJSON(t, removed)))
	wantOK(t, "Pix, GET 200", c.ValidateResponse(baseURL, request("GET", "/pix/"+paid.EndToEndID, nil), 200, jsonHeader, mustJSON(t, paid)))
	devPath := "/pix/" + paid.EndToEndID + "/devolucao/r1"
	wantOK(t, "Devolucao, PUT 201", c.ValidateResponse(baseURL, request("PUT", devPath, nil), 201, jsonHeader, mustJSON(t, dev)))
	wantOK(t, "Notification", c.ValidateWebhook(mustJSON(t, pix.Notification{Pix: []pix.Pix{paid}})))

	var sol pix.CobSolicitada
	sol.Calendario.Expiracao = 3600
	sol.Valor.Original = "10.00"
	sol.Chave = chave
	sol.SolicitacaoPagador = "Pedido 123"
	wantOK(t, "CobSolicitada", c.ValidateRequest(baseURL, request("PUT", cobPath, mustJSON(t, sol)), mustJSON(t, sol)))
	ds := pix.DevolucaoSolicitada{Valor: "4.00", Natureza: pix.NaturezaOriginal, Descricao: "Devolução"}
	wantOK(t, "DevolucaoSolicitada", c.ValidateRequest(baseURL, request("PUT", devPath, mustJSON(t, ds)), mustJSON(t, ds)))

	// A Cob with its loc (which CobGerada requires to carry its txid), and
	// a problem as RFC 7807 writes it.
	withLoc := cob
	withLoc.Loc = &pix.Loc{ID: 789, Txid: txid, Location: location, TipoCob: "cob", Criacao: now}
	wantOK(t, "Cob with Loc", c.ValidateResponse(baseURL, request("PUT", cobPath, nil), 201, jsonHeader, mustJSON(t, withLoc)))
	problem := mustJSON(t, pix.ErrCobNaoEncontrado)
	if string(problem) != `{"type":"https://pix.bcb.gov.br/api/v2/error/CobNaoEncontrado","title":"CobNaoEncontrado","status":404}` {
		t.Fatalf("pix.Problem marshals as %s", problem)
	}
	wantOK(t, "pix.Problem", c.ValidateProblem(404, problem))
}

// BenchmarkLoad measures one parse, patch and validation of the document
// (what Load does once per process).
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := load(); err != nil {
			b.Fatal(err)
		}
	}
}
