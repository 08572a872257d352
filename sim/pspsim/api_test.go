package pspsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/protocol/brcode"
)

var (
	e2eShape = regexp.MustCompile(`^E99999999\d{12}[A-Z2-7]{11}$`)
	rtrShape = regexp.MustCompile(`^D99999999\d{12}[A-Z2-7]{11}$`)
)

// checkBRCode parses a charge's pixCopiaECola: dynamic, at its location,
// for cents, with the account's name and city.
func checkBRCode(t *testing.T, c Cob, cents int64) {
	t.Helper()
	p, err := brcode.Parse(c.PixCopiaECola)
	if err != nil {
		t.Fatalf("pixCopiaECola %q: %v", c.PixCopiaECola, err)
	}
	if !p.IsDynamic() || p.URL != c.Location || p.Amount != cents || p.Initiation != brcode.InitiationSingleUse ||
		p.MerchantName != "LOJA ARVORE LTDA" || p.MerchantCity != "FLORIANOPOLIS" {
		t.Errorf("BR Code = %+v, want dynamic at %s for %d centavos", p, c.Location, cents)
	}
}

func TestCobLifecycle(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	id := txid(1)
	before := e.clock.Now().Add(-time.Second)

	c := m.createCob(id, "12.34")
	if c.Txid != id || c.Revisao != 0 || c.Status != "ATIVA" || c.Valor.Original != "12.34" || c.Valor.ModalidadeAlteracao != 0 ||
		c.Chave != m.creds.Chave || c.SolicitacaoPagador != "Pedido 42" || c.Calendario.Expiracao != 3600 || len(c.Pix) != 0 {
		t.Fatalf("created = %+v", c)
	}
	if c.Calendario.Criacao.Before(before) || c.Calendario.Criacao.After(e.clock.Now()) {
		t.Errorf("criacao %s is not now", c.Calendario.Criacao)
	}
	if !regexp.MustCompile(`^pix\.sandbox\.bcp\.dev\.br/qr/v2/[0-9a-f]{32}$`).MatchString(c.Location) || len(c.Location) > 77 {
		t.Errorf("location %q", c.Location)
	}
	if c.Loc.ID <= 0 || c.Loc.Location != c.Location || c.Loc.TipoCob != "cob" || !c.Loc.Criacao.Equal(c.Calendario.Criacao) {
		t.Errorf("loc = %+v", c.Loc)
	}
	checkBRCode(t, c, 1234)

	// The same PUT again (a retry) changes nothing.
	again := m.createCob(id, "12.34")
	if again.Revisao != 0 || again.Location != c.Location || again.PixCopiaECola != c.PixCopiaECola || !again.Calendario.Criacao.Equal(c.Calendario.Criacao) {
		t.Errorf("retried PUT = %+v, want the charge unchanged", again)
	}
	// Other terms revise it: revisao + 1, same location, new BR Code.
	revised := m.createCob(id, "15.00")
	if revised.Revisao != 1 || revised.Valor.Original != "15.00" || revised.Location != c.Location || revised.Loc.ID != c.Loc.ID {
		t.Errorf("revised = %+v", revised)
	}
	checkBRCode(t, revised, 1500)

	var got Cob
	r := m.call("GET", "/cob/"+id, nil)
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Revisao != 1 || got.Valor.Original != "15.00" || got.PixCopiaECola != revised.PixCopiaECola {
		t.Errorf("GET = %d %+v", r.status, got)
	}

	// PATCH revises too.
	r = m.call("PATCH", "/cob/"+id, map[string]any{"valor": map[string]any{"original": "16.00"}, "solicitacaoPagador": "outro"})
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Revisao != 2 || got.Valor.Original != "16.00" || got.SolicitacaoPagador != "outro" || got.Calendario.Expiracao != 3600 {
		t.Errorf("PATCH revision = %d %+v", r.status, got)
	}

	// Removal.
	r = m.call("PATCH", "/cob/"+id, map[string]any{"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"})
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Status != "REMOVIDA_PELO_USUARIO_RECEBEDOR" || got.Revisao != 3 {
		t.Errorf("removal = %d %+v", r.status, got)
	}
	p := problemOf(t, m.call("PATCH", "/cob/"+id, map[string]any{"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}), 400, "CobOperacaoInvalida")
	if !violated(p, "cob.status") {
		t.Errorf("second removal: %+v", p)
	}
	if p := problemOf(t, m.call("PUT", "/cob/"+id, m.cobBody("16.00")), 400, "CobOperacaoInvalida"); !violated(p, "cob.status") {
		t.Errorf("PUT on a removed charge: %+v", p)
	}
	var cantPay controlError
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/cob/"+id+"/pay", nil, nil); st != http.StatusConflict {
		t.Errorf("paying a removed charge: %d %s", st, b)
	} else if _ = json.Unmarshal(b, &cantPay); cantPay.Error != "charge_not_active" {
		t.Errorf("paying a removed charge: %s", b)
	}

	// Paid: CONCLUIDA with its Pix; no more changes.
	paid := txid(2)
	m.createCob(paid, "20.00")
	px := m.pay(paid, "")
	if !e2eShape.MatchString(px.EndToEndID) || px.Txid != paid || px.Valor != "20.00" || px.Chave != m.creds.Chave {
		t.Errorf("paid Pix = %+v", px)
	}
	r = m.call("GET", "/cob/"+paid, nil)
	got = Cob{}
	r.decode(t, &got)
	if got.Status != "CONCLUIDA" || len(got.Pix) != 1 || got.Pix[0].EndToEndID != px.EndToEndID || got.Pix[0].Valor != "20.00" || !got.Pix[0].Horario.Equal(px.Horario) {
		t.Errorf("paid charge = %+v", got)
	}
	problemOf(t, m.call("PATCH", "/cob/"+paid, map[string]any{"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}), 400, "CobOperacaoInvalida")
	problemOf(t, m.call("PUT", "/cob/"+paid, m.cobBody("20.00")), 400, "CobOperacaoInvalida")

	var p2 Pix
	r = m.call("GET", "/pix/"+px.EndToEndID, nil)
	r.decode(t, &p2)
	if r.status != http.StatusOK || p2.EndToEndID != px.EndToEndID || p2.Txid != paid || p2.Valor != "20.00" || len(p2.Devolucoes) != 0 {
		t.Errorf("GET /pix = %d %+v", r.status, p2)
	}

	// A payment of the wrong amount is what it is.
	wrong := txid(3)
	m.createCob(wrong, "30.00")
	if px := m.pay(wrong, "29.99"); px.Valor != "29.99" {
		t.Errorf("wrong-amount payment = %+v", px)
	}
	problemOf(t, m.call("GET", "/cob/"+txid(99), nil), 404, "CobNaoEncontrado")
	if st, _ := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/cob/"+txid(99)+"/pay", nil, nil); st != http.StatusNotFound {
		t.Errorf("paying an unknown charge: %d", st)
	}
}

func TestProblems(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	other := e.provision("other")
	m.createCob(txid(1), "10.00")
	px := m.pay(txid(1), "")
	with := func(f func(b map[string]any)) map[string]any {
		b := m.cobBody("10.00")
		f(b)
		return b
	}
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		status       int
		tipo, prop   string
	}{
		{"short txid", "PUT", "/cob/abc", m.cobBody("1.00"), 400, "CobOperacaoInvalida", "cob.txid"},
		{"valor shape", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["valor"] = map[string]any{"original": "1.5"} }), 400, "CobOperacaoInvalida", "cob.valor.original"},
		{"valor zero", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["valor"] = map[string]any{"original": "0.00"} }), 400, "CobOperacaoInvalida", "cob.valor.original"},
		{"no valor", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { delete(b, "valor") }), 400, "CobOperacaoInvalida", "cob.valor.original"},
		{"modalidade", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["valor"] = map[string]any{"original": "1.00", "modalidadeAlteracao": 2} }), 400, "CobOperacaoInvalida", "cob.valor.modalidadeAlteracao"},
		{"another's key", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["chave"] = other.creds.Chave }), 400, "CobOperacaoInvalida", "cob.chave"},
		{"no key", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { delete(b, "chave") }), 400, "CobOperacaoInvalida", "cob.chave"},
		{"expiracao zero", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["calendario"] = map[string]any{"expiracao": 0} }), 400, "CobOperacaoInvalida", "cob.calendario.expiracao"},
		{"expiracao type", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["calendario"] = map[string]any{"expiracao": "3600"} }), 400, "CobOperacaoInvalida", "cob.calendario.expiracao"},
		{"solicitacao", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["solicitacaoPagador"] = strings.Repeat("á", 141) }), 400, "CobOperacaoInvalida", "cob.solicitacaoPagador"},
		{"loc", "PUT", "/cob/" + txid(2), with(func(b map[string]any) { b["loc"] = map[string]any{"id": 7} }), 400, "CobOperacaoInvalida", "cob.loc.id"},
		{"malformed JSON", "PUT", "/cob/" + txid(2), `{"valor":`, 400, "RequisicaoInvalida", ""},
		{"not an object", "PUT", "/cob/" + txid(2), `[1]`, 400, "RequisicaoInvalida", ""},
		{"status value", "PATCH", "/cob/" + txid(1), map[string]any{"status": "ATIVA"}, 400, "CobOperacaoInvalida", "cob.status"},
		{"removal with changes", "PATCH", "/cob/" + txid(1), map[string]any{"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR", "solicitacaoPagador": "x"}, 400, "CobOperacaoInvalida", "cob.status"},
		{"patch unknown", "PATCH", "/cob/" + txid(9), map[string]any{"solicitacaoPagador": "x"}, 404, "CobNaoEncontrado", ""},
		{"unknown Pix", "GET", "/pix/E99999999202601010000AAAAAAAAAAA", nil, 404, "PixNaoEncontrado", ""},
		{"malformed e2eid", "GET", "/pix/nope", nil, 404, "PixNaoEncontrado", ""},
		{"refund valor", "PUT", "/pix/" + px.EndToEndID + "/devolucao/d1", map[string]any{"valor": "abc"}, 400, "PixDevolucaoInvalida", "devolucao.valor"},
		{"refund id", "PUT", "/pix/" + px.EndToEndID + "/devolucao/d-1", map[string]any{"valor": "1.00"}, 400, "PixDevolucaoInvalida", "id"},
		{"refund natureza", "PUT", "/pix/" + px.EndToEndID + "/devolucao/d1", map[string]any{"valor": "1.00", "natureza": "RETIRADA"}, 400, "PixDevolucaoInvalida", "devolucao.natureza"},
		{"refund descricao", "PUT", "/pix/" + px.EndToEndID + "/devolucao/d1", map[string]any{"valor": "1.00", "descricao": strings.Repeat("x", 141)}, 400, "PixDevolucaoInvalida", "devolucao.descricao"},
		{"refund of unknown Pix", "PUT", "/pix/E99999999202601010000AAAAAAAAAAA/devolucao/d1", map[string]any{"valor": "1.00"}, 404, "PixNaoEncontrado", ""},
		{"unknown refund", "GET", "/pix/" + px.EndToEndID + "/devolucao/d9", nil, 404, "PixDevolucaoNaoEncontrada", ""},
		{"webhook http", "PUT", "/webhook/" + m.creds.Chave, map[string]any{"webhookUrl": "http://example.com/hook"}, 400, "WebhookOperacaoInvalida", "webhook.webhookUrl"},
		{"webhook no url", "PUT", "/webhook/" + m.creds.Chave, map[string]any{}, 400, "WebhookOperacaoInvalida", "webhook.webhookUrl"},
		{"webhook another's key", "PUT", "/webhook/" + other.creds.Chave, map[string]any{"webhookUrl": "https://example.com/hook"}, 400, "WebhookOperacaoInvalida", "chave"},
		{"no webhook", "GET", "/webhook/" + m.creds.Chave, nil, 404, "WebhookNaoEncontrado", ""},
		{"delete no webhook", "DELETE", "/webhook/" + m.creds.Chave, nil, 404, "WebhookNaoEncontrado", ""},
		{"list without inicio", "GET", "/pix?fim=2026-01-01T00:00:00Z", nil, 400, "PixConsultaInvalida", "inicio"},
		{"list fim before inicio", "GET", "/pix?inicio=2026-01-02T00:00:00Z&fim=2026-01-01T00:00:00Z", nil, 400, "PixConsultaInvalida", "fim"},
		{"list page size", "GET", "/pix?inicio=2026-01-01T00:00:00Z&fim=2026-01-02T00:00:00Z&paginacao.itensPorPagina=1001", nil, 400, "PixConsultaInvalida", "paginacao.itensPorPagina"},
		{"no such resource", "GET", "/cobv/" + txid(1), nil, 404, "NaoEncontrado", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := problemOf(t, m.call(tc.method, tc.path, tc.body), tc.status, tc.tipo)
			if tc.prop != "" && !violated(p, tc.prop) {
				t.Errorf("violations %+v do not name %s", p.Violacoes, tc.prop)
			}
		})
	}
	// Nothing was created by the refused PUTs.
	problemOf(t, m.call("GET", "/cob/"+txid(2), nil), 404, "CobNaoEncontrado")
}

func TestRefunds(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	m.createCob(txid(1), "10.00")
	px := m.pay(txid(1), "")
	refund := func(id, valor string) answer {
		return m.call("PUT", "/pix/"+px.EndToEndID+"/devolucao/"+id, map[string]any{"valor": valor, "descricao": "Devolução do pedido"})
	}

	var d1 Devolucao
	r := refund("r1", "4.00")
	r.decode(t, &d1)
	if r.status != http.StatusCreated || d1.ID != "r1" || !rtrShape.MatchString(d1.RtrID) || d1.Valor != "4.00" || d1.Natureza != "ORIGINAL" ||
		d1.Descricao != "Devolução do pedido" || d1.Status != "DEVOLVIDO" || d1.Horario.Liquidacao == nil || d1.Horario.Solicitacao.IsZero() {
		t.Fatalf("refund = %d %+v", r.status, d1)
	}
	// A retried PUT answers the same devolução.
	var again Devolucao
	r = refund("r1", "4.00")
	r.decode(t, &again)
	if r.status != http.StatusCreated || again.RtrID != d1.RtrID {
		t.Errorf("retried refund = %d %+v", r.status, again)
	}
	if p := problemOf(t, refund("r1", "5.00"), 400, "PixDevolucaoInvalida"); !violated(p, "id") {
		t.Errorf("same id, other valor: %+v", p)
	}
	// The sum of the refunds never exceeds the Pix.
	if p := problemOf(t, refund("r2", "6.01"), 400, "PixDevolucaoInvalida"); !violated(p, "devolucao.valor") {
		t.Errorf("over the paid amount: %+v", p)
	}
	if r := refund("r2", "6.00"); r.status != http.StatusCreated {
		t.Fatalf("the rest: %d %s", r.status, r.body)
	}
	problemOf(t, refund("r3", "0.01"), 400, "PixDevolucaoInvalida")

	var got Pix
	r = m.call("GET", "/pix/"+px.EndToEndID, nil)
	r.decode(t, &got)
	if len(got.Devolucoes) != 2 || got.Devolucoes[0].ID != "r1" || got.Devolucoes[1].ID != "r2" || got.Devolucoes[1].Valor != "6.00" {
		t.Errorf("Pix devolucoes = %+v", got.Devolucoes)
	}
	var d2 Devolucao
	r = m.call("GET", "/pix/"+px.EndToEndID+"/devolucao/r2", nil)
	r.decode(t, &d2)
	if r.status != http.StatusOK || d2.Valor != "6.00" || d2.Status != "DEVOLVIDO" {
		t.Errorf("GET devolução = %d %+v", r.status, d2)
	}

	// 90 days after the Pix, no more refunds.
	m.createCob(txid(2), "10.00")
	old := m.pay(txid(2), "")
	e.clock.Advance(91 * 24 * time.Hour)
	m.login() // the token expired meanwhile
	p := problemOf(t, m.call("PUT", "/pix/"+old.EndToEndID+"/devolucao/late", map[string]any{"valor": "1.00"}), 400, "PixDevolucaoInvalida")
	if !violated(p, "devolucao") {
		t.Errorf("refund after 90 days: %+v", p)
	}
}

func TestAccountsAreIsolated(t *testing.T) {
	e := newEnv(t)
	a := e.provision("a").login()
	b := e.provision("b").login()
	id := txid(1)
	a.createCob(id, "10.00")
	px := a.pay(id, "")

	problemOf(t, b.call("GET", "/cob/"+id, nil), 404, "CobNaoEncontrado")
	problemOf(t, b.call("GET", "/pix/"+px.EndToEndID, nil), 404, "PixNaoEncontrado")
	problemOf(t, b.call("PUT", "/pix/"+px.EndToEndID+"/devolucao/x", map[string]any{"valor": "1.00"}), 404, "PixNaoEncontrado")
	// B's own charge under the same txid is B's alone.
	if c := b.createCob(id, "99.00"); c.Status != "ATIVA" || c.Valor.Original != "99.00" || c.Revisao != 0 {
		t.Errorf("B's charge = %+v", c)
	}
	var ac Cob
	a.call("GET", "/cob/"+id, nil).decode(t, &ac)
	if ac.Status != "CONCLUIDA" || ac.Valor.Original != "10.00" {
		t.Errorf("A's charge after B's PUT = %+v", ac)
	}
	q := url.Values{"inicio": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, "fim": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
	var list PixConsultados
	b.call("GET", "/pix?"+q.Encode(), nil).decode(t, &list)
	if len(list.Pix) != 0 || list.Parametros.Paginacao.QuantidadeTotalDeItens != 0 {
		t.Errorf("B lists A's Pix: %+v", list)
	}
	if l := b.ledger(); len(l.Charges) != 1 || len(l.Pix) != 0 {
		t.Errorf("B's ledger = %+v", l)
	}
}

func TestListPix(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	var paid []Pix
	for i := range 3 {
		m.createCob(txid(i), "1.00")
		paid = append(paid, m.pay(txid(i), ""))
	}
	var orphan Pix
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "2.50"}, &orphan); st != http.StatusCreated {
		t.Fatalf("orphan: %d %s", st, b)
	}
	if r := m.call("PUT", "/pix/"+paid[1].EndToEndID+"/devolucao/x", map[string]any{"valor": "0.50"}); r.status != http.StatusCreated {
		t.Fatal(r.status)
	}
	inicio, fim := e.clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339), e.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	list := func(extra url.Values) PixConsultados {
		t.Helper()
		q := url.Values{"inicio": {inicio}, "fim": {fim}}
		for k, v := range extra {
			q[k] = v
		}
		r := m.call("GET", "/pix?"+q.Encode(), nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /pix?%s: %d %s", q.Encode(), r.status, r.body)
		}
		var out PixConsultados
		r.decode(t, &out)
		return out
	}
	ids := func(ps []Pix) (out []string) {
		for _, p := range ps {
			out = append(out, p.EndToEndID)
		}
		return out
	}
	page0 := list(url.Values{"paginacao.itensPorPagina": {"3"}})
	pg := page0.Parametros.Paginacao
	if pg.PaginaAtual != 0 || pg.ItensPorPagina != 3 || pg.QuantidadeDePaginas != 2 || pg.QuantidadeTotalDeItens != 4 ||
		strings.Join(ids(page0.Pix), ",") != strings.Join(ids(paid), ",") {
		t.Errorf("page 0 = %+v %v", pg, ids(page0.Pix))
	}
	page1 := list(url.Values{"paginacao.itensPorPagina": {"3"}, "paginacao.paginaAtual": {"1"}})
	if len(page1.Pix) != 1 || page1.Pix[0].EndToEndID != orphan.EndToEndID || page1.Pix[0].Txid != "" || page1.Parametros.Paginacao.PaginaAtual != 1 {
		t.Errorf("page 1 = %+v", page1)
	}
	if l := list(url.Values{"txIdPresente": {"false"}}); strings.Join(ids(l.Pix), ",") != orphan.EndToEndID {
		t.Errorf("txIdPresente=false: %v", ids(l.Pix))
	}
	if l := list(url.Values{"devolucaoPresente": {"true"}}); len(l.Pix) != 1 || l.Pix[0].EndToEndID != paid[1].EndToEndID || len(l.Pix[0].Devolucoes) != 1 {
		t.Errorf("devolucaoPresente=true: %+v", l.Pix)
	}
	if l := list(url.Values{"txid": {txid(2)}}); len(l.Pix) != 1 || l.Pix[0].EndToEndID != paid[2].EndToEndID {
		t.Errorf("txid filter: %v", ids(l.Pix))
	}
	if l := list(url.Values{"cpf": {"12345678909"}}); len(l.Pix) != 0 || l.Parametros.Paginacao.QuantidadeDePaginas != 1 {
		t.Errorf("cpf filter: %+v", l)
	}
	if l := list(nil); l.Parametros.Paginacao.ItensPorPagina != 100 || len(l.Pix) != 4 {
		t.Errorf("default page: %+v", l.Parametros)
	}
}
