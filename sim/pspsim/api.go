package pspsim

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/protocol/brcode"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// Field rules of the API Pix.
var (
	txidCob     = regexp.MustCompile(`^[a-zA-Z0-9]{26,35}$`)
	txidAny     = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)
	endToEndID  = regexp.MustCompile(`^[a-zA-Z0-9]{32}$`)
	devolucaoID = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)
	valorRegexp = regexp.MustCompile(`^\d{1,10}\.\d{2}$`)
)

const (
	statusAtiva      = "ATIVA"
	statusConcluida  = "CONCLUIDA"
	statusRemovida   = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
	devolvido        = "DEVOLVIDO"
	naoRealizado     = "NAO_REALIZADO"
	naturezaOriginal = "ORIGINAL"
	// refundWindow: devoluções are allowed up to 90 days after the Pix.
	refundWindow = 90 * 24 * time.Hour
	// defaultExpiracao is the spec's default charge lifetime.
	defaultExpiracao = 86400
)

// parseValor reads an API Pix amount ("123.45") into centavos.
func parseValor(s string) (int64, bool) {
	if !valorRegexp.MatchString(s) {
		return 0, false
	}
	c, err := brcode.ParseAmount(s)
	return c, err == nil
}

func formatValor(cents int64) string {
	return strconv.FormatInt(cents/100, 10) + "." + fmt.Sprintf("%02d", cents%100)
}

// decodeBody reads a JSON object into v. A body that is not JSON is
// RequisicaoInvalida; a field of the wrong type is a violation of t on
// that field (prefix names the object, e.g. "cob").
func decodeBody(r *http.Request, v any, t tipo, prefix string) *problem {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		prop := prefix + "." + te.Field
		return violations(t, "A requisição não respeita o schema.", []violacao{{
			Razao: fmt.Sprintf("O campo %s não respeita o schema (esperado %s).", prop, te.Type), Propriedade: prop}})
	}
	return problemf(tRequisicaoInvalida, "O corpo da requisição não é um objeto JSON válido.")
}

// cobBody is CobSolicitada (PUT) and CobRevisada (PATCH). Pointers tell
// absent fields from zero ones.
type cobBody struct {
	Calendario *struct {
		Expiracao *int64 `json:"expiracao"`
	} `json:"calendario"`
	Valor *struct {
		Original            *string `json:"original"`
		ModalidadeAlteracao *int64  `json:"modalidadeAlteracao"`
	} `json:"valor"`
	Chave              *string         `json:"chave"`
	SolicitacaoPagador *string         `json:"solicitacaoPagador"`
	Loc                json.RawMessage `json:"loc"`
	Status             *string         `json:"status"`
	// Devedor and InfoAdicionais are accepted and not kept.
	Devedor        json.RawMessage `json:"devedor"`
	InfoAdicionais json.RawMessage `json:"infoAdicionais"`
}

// cobTerms are what a charge is made of; a PUT with the same terms is a
// retry and changes nothing.
type cobTerms struct {
	valor       string
	cents       int64
	modalidade  int32
	expiracao   int32
	chave       string
	solicitacao string
}

func termsOf(c pspsimdb.PspsimCharge) cobTerms {
	cents, _ := parseValor(c.Valor)
	return cobTerms{valor: c.Valor, cents: cents, modalidade: c.ModalidadeAlteracao, expiracao: c.Expiracao, chave: c.Chave, solicitacao: c.Solicitacao}
}

// apply lays b over t (absent fields keep t's) and lists the rules the
// result breaks. put says b is a whole CobSolicitada (valor and chave
// required).
func (b *cobBody) apply(t cobTerms, acct *account, put bool) (cobTerms, []violacao) {
	var vs []violacao
	add := func(prop, format string, args ...any) {
		vs = append(vs, violacao{Propriedade: prop, Razao: fmt.Sprintf(format, args...)})
	}
	if b.Calendario != nil && b.Calendario.Expiracao != nil {
		if e := *b.Calendario.Expiracao; e <= 0 || e > math.MaxInt32 {
			add("cob.calendario.expiracao", "O campo cob.calendario.expiracao é igual ou menor que zero ou excede o schema.")
		} else {
			t.expiracao = int32(e)
		}
	}
	switch {
	case b.Valor != nil && b.Valor.Original != nil:
		cents, ok := parseValor(*b.Valor.Original)
		switch {
		case !ok:
			add("cob.valor.original", "O campo cob.valor.original não respeita o schema.")
		case cents == 0:
			add("cob.valor.original", "O campo cob.valor.original é zero.")
		default:
			t.valor, t.cents = *b.Valor.Original, cents
		}
	case put:
		add("cob.valor.original", "O campo cob.valor.original é obrigatório.")
	}
	if b.Valor != nil && b.Valor.ModalidadeAlteracao != nil {
		if m := *b.Valor.ModalidadeAlteracao; m != 0 && m != 1 {
			add("cob.valor.modalidadeAlteracao", "O campo cob.valor.modalidadeAlteracao não respeita o schema (0 ou 1).")
		} else {
			t.modalidade = int32(m)
		}
	}
	switch {
	case b.Chave != nil && (*b.Chave == "" || utf8.RuneCountInString(*b.Chave) > brcode.MaxKeyLen):
		add("cob.chave", "O campo cob.chave não respeita o schema.")
	case b.Chave != nil && *b.Chave != acct.chave:
		add("cob.chave", "O campo cob.chave corresponde a uma conta que não pertence a este usuário recebedor.")
	case b.Chave != nil:
		t.chave = *b.Chave
	case put:
		add("cob.chave", "O campo cob.chave é obrigatório.")
	}
	if b.SolicitacaoPagador != nil {
		if utf8.RuneCountInString(*b.SolicitacaoPagador) > 140 {
			add("cob.solicitacaoPagador", "O campo solicitacaoPagador não respeita o schema (até 140 caracteres).")
		} else {
			t.solicitacao = *b.SolicitacaoPagador
		}
	}
	if len(b.Loc) > 0 && string(b.Loc) != "null" {
		add("cob.loc.id", "O location referenciado por loc.id inexiste.")
	}
	return t, vs
}

// newLocation is "<host>/qr/v2/<32 hex>", at most 77 characters (checked
// at Start).
func (s *Server) newLocation() string {
	id := uuid.New()
	return s.cfg.LocationHost + locationPath + hex.EncodeToString(id[:])
}

// brCode is the charge's BR Code (dynamic: the location, no key).
func brCode(acct *account, location string, cents int64) (string, error) {
	name := cmp.Or(brcode.NormalizeName(acct.nome), "RECEBEDOR")
	city := cmp.Or(brcode.NormalizeCity(acct.cidade), "SAO PAULO")
	return brcode.Payload{URL: location, Amount: cents, MerchantName: name, MerchantCity: city}.Encode()
}

const cobInvalida = "A requisição que busca alterar ou criar uma cobrança para pagamento imediato não respeita o schema ou está semanticamente errada."

// putCob is PUT /cob/{txid}: creates the charge, or revises an ATIVA one
// whose terms differ; the same terms again change nothing.
func (s *Server) putCob(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	txid := r.PathValue("txid")
	var body cobBody
	if p := decodeBody(r, &body, tCobOperacaoInvalida, "cob"); p != nil {
		writeProblem(w, p)
		return
	}
	if body.Status != nil {
		// CobSolicitada has no status.
		writeProblem(w, violations(tCobOperacaoInvalida, cobInvalida, []violacao{{Propriedade: "cob.status", Razao: "O campo cob.status não pode ser informado na criação."}}))
		return
	}
	terms, vs := body.apply(cobTerms{expiracao: defaultExpiracao}, acct, true)
	if !txidCob.MatchString(txid) {
		vs = append([]violacao{{Propriedade: "cob.txid", Razao: "O campo cob.txid não respeita o schema ([a-zA-Z0-9]{26,35})."}}, vs...)
	}
	if p := violations(tCobOperacaoInvalida, cobInvalida, vs); p != nil {
		writeProblem(w, p)
		return
	}
	now := s.clock()
	location := s.newLocation()
	code, err := brCode(acct, location, terms.cents)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var row pspsimdb.PspsimCharge
	err = s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.CreateCharge(ctx, pspsimdb.CreateChargeParams{
			TenantID: acct.id, Txid: txid, Valor: terms.valor, ModalidadeAlteracao: terms.modalidade, Expiracao: terms.expiracao,
			Chave: terms.chave, Solicitacao: terms.solicitacao, Location: location, CopiaECola: code, Criacao: now,
		})
		return err
	})
	if err == nil {
		writeJSON(w, "application/json", http.StatusCreated, toCob(row, nil))
		return
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		s.fail(w, r, err)
		return
	}
	// The txid exists (charges are never deleted): a retry or a revision.
	err = s.inAccount(ctx, acct.id, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		var err error
		if row, err = q.LockCharge(ctx, pspsimdb.LockChargeParams{TenantID: acct.id, Txid: txid}); err != nil {
			return err
		}
		if row.Status != statusAtiva {
			return notAtiva(row, "A cobrança já existe, não está no status ATIVA, e a presente requisição busca alterá-la.")
		}
		row, err = s.revise(ctx, q, acct, row, terms, now)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusCreated, toCob(row, nil))
}

func notAtiva(row pspsimdb.PspsimCharge, razao string) *problem {
	return violations(tCobOperacaoInvalida, cobInvalida, []violacao{{Propriedade: "cob.status", Razao: razao, Valor: row.Status}})
}

// revise gives an ATIVA charge new terms (revisao + 1, a new BR Code at
// the same location), or leaves it as it is when they are its own.
func (s *Server) revise(ctx context.Context, q *pspsimdb.Queries, acct *account, row pspsimdb.PspsimCharge, t cobTerms, now time.Time) (pspsimdb.PspsimCharge, error) {
	if termsOf(row) == t {
		return row, nil
	}
	code, err := brCode(acct, row.Location, t.cents)
	if err != nil {
		return row, err
	}
	return q.ReviseCharge(ctx, pspsimdb.ReviseChargeParams{
		TenantID: acct.id, Txid: row.Txid, Valor: t.valor, ModalidadeAlteracao: t.modalidade, Expiracao: t.expiracao,
		Chave: t.chave, Solicitacao: t.solicitacao, CopiaECola: code, UpdatedAt: now,
	})
}

// patchCob is PATCH /cob/{txid}: {"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}
// removes an ATIVA charge; other fields revise it. A charge no longer
// ATIVA cannot be changed.
func (s *Server) patchCob(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	txid := r.PathValue("txid")
	var body cobBody
	if p := decodeBody(r, &body, tCobOperacaoInvalida, "cob"); p != nil {
		writeProblem(w, p)
		return
	}
	var vs []violacao
	if body.Status != nil {
		if *body.Status != statusRemovida {
			vs = append(vs, violacao{Propriedade: "cob.status", Razao: "O campo cob.status não respeita o schema (só REMOVIDA_PELO_USUARIO_RECEBEDOR).", Valor: *body.Status})
		} else if body.Calendario != nil || body.Valor != nil || body.Chave != nil || body.SolicitacaoPagador != nil || len(body.Loc) > 0 || len(body.Devedor) > 0 || len(body.InfoAdicionais) > 0 {
			vs = append(vs, violacao{Propriedade: "cob.status", Razao: "A cobrança não pode ser removida juntamente com outras alterações."})
		}
	}
	if p := violations(tCobOperacaoInvalida, cobInvalida, vs); p != nil {
		writeProblem(w, p)
		return
	}
	now := s.clock()
	var row pspsimdb.PspsimCharge
	err := s.inAccount(ctx, acct.id, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		var err error
		row, err = q.LockCharge(ctx, pspsimdb.LockChargeParams{TenantID: acct.id, Txid: txid})
		if errors.Is(err, pgx.ErrNoRows) {
			return problemf(tCobNaoEncontrado, "Cobrança %s não encontrada.", txid)
		}
		if err != nil {
			return err
		}
		if row.Status != statusAtiva {
			return notAtiva(row, "A cobrança não está ATIVA, e a presente requisição busca alterá-la.")
		}
		if body.Status != nil {
			row, err = q.SetChargeStatus(ctx, pspsimdb.SetChargeStatusParams{TenantID: acct.id, Txid: txid, Status: statusRemovida, UpdatedAt: now})
			return err
		}
		terms, vs := body.apply(termsOf(row), acct, false)
		if p := violations(tCobOperacaoInvalida, cobInvalida, vs); p != nil {
			return p
		}
		row, err = s.revise(ctx, q, acct, row, terms, now)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, toCob(row, nil))
}

// getCob is GET /cob/{txid}, with the charge's Pix when paid.
func (s *Server) getCob(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	txid := r.PathValue("txid")
	var row pspsimdb.GetChargeWithPixRow
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.GetChargeWithPix(ctx, pspsimdb.GetChargeWithPixParams{TenantID: acct.id, Txid: txid})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		writeProblem(w, problemf(tCobNaoEncontrado, "Cobrança %s não encontrada.", txid))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pix, err := decodePixList(row.Pix)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, toCob(row.PspsimCharge, pix))
}

// getPix is GET /pix/{e2eid}, with its devoluções.
func (s *Server) getPix(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	e2eid := r.PathValue("e2eid")
	if !endToEndID.MatchString(e2eid) {
		writeProblem(w, problemf(tPixNaoEncontrado, "Pix %s não encontrado.", e2eid))
		return
	}
	var raw json.RawMessage
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		raw, err = q.GetPixJSON(ctx, pspsimdb.GetPixJSONParams{TenantID: acct.id, E2eID: e2eid})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		writeProblem(w, problemf(tPixNaoEncontrado, "Pix %s não encontrado.", e2eid))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := decodePix(raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, p)
}

// PixConsultados is GET /pix's answer.
type PixConsultados struct {
	Parametros ParametrosConsultaPix `json:"parametros"`
	Pix        []Pix                 `json:"pix"`
}

// ParametrosConsultaPix echoes the query, with the paging.
type ParametrosConsultaPix struct {
	Inicio            time.Time `json:"inicio"`
	Fim               time.Time `json:"fim"`
	Txid              string    `json:"txid,omitempty"`
	TxIDPresente      *bool     `json:"txIdPresente,omitempty"`
	DevolucaoPresente *bool     `json:"devolucaoPresente,omitempty"`
	CPF               string    `json:"cpf,omitempty"`
	CNPJ              string    `json:"cnpj,omitempty"`
	Paginacao         Paginacao `json:"paginacao"`
}

// Paginacao is a page of a list.
type Paginacao struct {
	PaginaAtual            int   `json:"paginaAtual"`
	ItensPorPagina         int   `json:"itensPorPagina"`
	QuantidadeDePaginas    int64 `json:"quantidadeDePaginas"`
	QuantidadeTotalDeItens int64 `json:"quantidadeTotalDeItens"`
}

var (
	cpfRegexp  = regexp.MustCompile(`^\d{11}$`)
	cnpjRegexp = regexp.MustCompile(`^[0-9A-Z]{14}$`)
)

// listPix is GET /pix?inicio&fim: the Pix received in [inicio, fim], page
// by page, oldest first.
func (s *Server) listPix(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	q := r.URL.Query()
	var vs []violacao
	add := func(prop, razao string) { vs = append(vs, violacao{Propriedade: prop, Razao: razao}) }
	par := ParametrosConsultaPix{Paginacao: Paginacao{ItensPorPagina: 100}}
	parseTime := func(name string, dst *time.Time) {
		v := q.Get(name)
		if v == "" {
			add(name, "O parâmetro "+name+" é obrigatório.")
			return
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			add(name, "O parâmetro "+name+" não respeita o schema (RFC 3339).")
			return
		}
		*dst = t
	}
	parseTime("inicio", &par.Inicio)
	parseTime("fim", &par.Fim)
	if !par.Inicio.IsZero() && !par.Fim.IsZero() && par.Fim.Before(par.Inicio) {
		add("fim", "O timestamp representado pelo parâmetro fim é anterior ao timestamp representado pelo parâmetro inicio.")
	}
	parseBool := func(name string) *bool {
		if !q.Has(name) {
			return nil
		}
		b, err := strconv.ParseBool(q.Get(name))
		if err != nil {
			add(name, "O parâmetro "+name+" não respeita o schema (true ou false).")
			return nil
		}
		return &b
	}
	par.TxIDPresente = parseBool("txIdPresente")
	par.DevolucaoPresente = parseBool("devolucaoPresente")
	if q.Has("txid") {
		if par.Txid = q.Get("txid"); !txidAny.MatchString(par.Txid) {
			add("txid", "O parâmetro txid não respeita o schema.")
		}
	}
	par.CPF, par.CNPJ = q.Get("cpf"), q.Get("cnpj")
	switch {
	case par.CPF != "" && par.CNPJ != "":
		add("cpf", "Ambos os parâmetros cpf e cnpj estão preenchidos.")
	case par.CPF != "" && !cpfRegexp.MatchString(par.CPF):
		add("cpf", "O parâmetro cpf não respeita o schema.")
	case par.CNPJ != "" && !cnpjRegexp.MatchString(par.CNPJ):
		add("cnpj", "O parâmetro cnpj não respeita o schema.")
	}
	parseInt := func(name string, dst *int, lo, hi int) {
		if !q.Has(name) {
			return
		}
		n, err := strconv.Atoi(q.Get(name))
		if err != nil || n < lo || n > hi {
			add(name, fmt.Sprintf("O parâmetro %s não respeita o schema (de %d a %d).", name, lo, hi))
			return
		}
		*dst = n
	}
	parseInt("paginacao.paginaAtual", &par.Paginacao.PaginaAtual, 0, math.MaxInt32)
	parseInt("paginacao.itensPorPagina", &par.Paginacao.ItensPorPagina, 1, 1000)
	if p := violations(tPixConsultaInvalida, "Os parâmetros de consulta à lista de pix recebidos não respeitam o schema ou não fazem sentido semanticamente.", vs); p != nil {
		writeProblem(w, p)
		return
	}
	out := PixConsultados{Parametros: par, Pix: []Pix{}}
	// The simulator's Pix have no payer documents: a cpf or cnpj filter
	// matches none.
	if par.CPF == "" && par.CNPJ == "" {
		off := min(int64(par.Paginacao.PaginaAtual)*int64(par.Paginacao.ItensPorPagina), math.MaxInt32)
		params := pspsimdb.ListPixParams{TenantID: acct.id, Inicio: par.Inicio, Fim: par.Fim, Lim: int32(par.Paginacao.ItensPorPagina), Off: int32(off),
			TxidPresente: par.TxIDPresente, DevolucaoPresente: par.DevolucaoPresente}
		if par.Txid != "" {
			params.Txid = &par.Txid
		}
		var row pspsimdb.ListPixRow
		err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
			var err error
			row, err = q.ListPix(ctx, params)
			return err
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if out.Pix, err = decodePixList(row.Pix); err != nil {
			s.fail(w, r, err)
			return
		}
		out.Parametros.Paginacao.QuantidadeTotalDeItens = row.Total
	}
	n := int64(out.Parametros.Paginacao.ItensPorPagina)
	// The schema's minimum is one page, even an empty one.
	out.Parametros.Paginacao.QuantidadeDePaginas = max(1, (out.Parametros.Paginacao.QuantidadeTotalDeItens+n-1)/n)
	writeJSON(w, "application/json", http.StatusOK, out)
}

// devolucaoBody is DevolucaoSolicitada.
type devolucaoBody struct {
	Valor     *string `json:"valor"`
	Natureza  *string `json:"natureza"`
	Descricao *string `json:"descricao"`
}

const devolucaoInvalida = "A presente requisição de devolução não respeita o schema ou não faz sentido semanticamente."

// putDevolucao is PUT /pix/{e2eid}/devolucao/{id}: idempotent by id. The
// simulated SPI settles at once: DEVOLVIDO (or NAO_REALIZADO under the
// refund_rejected fault), notified like a Pix.
func (s *Server) putDevolucao(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	e2eid, id := r.PathValue("e2eid"), r.PathValue("id")
	var body devolucaoBody
	if p := decodeBody(r, &body, tDevolucaoInvalida, "devolucao"); p != nil {
		writeProblem(w, p)
		return
	}
	var vs []violacao
	add := func(prop, razao string) { vs = append(vs, violacao{Propriedade: prop, Razao: razao}) }
	if !devolucaoID.MatchString(id) {
		add("id", "O campo id não respeita o schema ([a-zA-Z0-9]{1,35}).")
	}
	var cents int64
	if body.Valor == nil {
		add("devolucao.valor", "O campo devolucao.valor é obrigatório.")
	} else if c, ok := parseValor(*body.Valor); !ok || c == 0 {
		add("devolucao.valor", "O campo devolucao.valor não respeita o schema.")
	} else {
		cents = c
	}
	natureza := naturezaOriginal
	if body.Natureza != nil {
		switch *body.Natureza {
		case naturezaOriginal:
		case "RETIRADA":
			add("devolucao.natureza", "A natureza RETIRADA só se aplica a Pix Saque ou Pix Troco.")
		default:
			add("devolucao.natureza", "O campo devolucao.natureza não respeita o schema.")
		}
	}
	descricao := ""
	if body.Descricao != nil {
		if descricao = *body.Descricao; utf8.RuneCountInString(descricao) > 140 {
			add("devolucao.descricao", "O campo devolucao.descricao não respeita o schema (até 140 caracteres).")
		}
	}
	if p := violations(tDevolucaoInvalida, devolucaoInvalida, vs); p != nil {
		writeProblem(w, p)
		return
	}
	now := s.clock()
	rejected := false
	var out pspsimdb.PspsimRefund
	var notified bool
	err := s.inAccount(ctx, acct.id, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		// The Pix row lock serialises the devoluções of one Pix.
		p, err := q.LockPix(ctx, pspsimdb.LockPixParams{TenantID: acct.id, E2eID: e2eid})
		if errors.Is(err, pgx.ErrNoRows) {
			return problemf(tPixNaoEncontrado, "Pix %s não encontrado.", e2eid)
		}
		if err != nil {
			return err
		}
		existing, err := q.GetRefund(ctx, pspsimdb.GetRefundParams{TenantID: acct.id, E2eID: e2eid, ID: id})
		if err == nil {
			if existing.Valor != *body.Valor || existing.Natureza != natureza {
				return violations(tDevolucaoInvalida, devolucaoInvalida, []violacao{{Propriedade: "id",
					Razao: "A presente requisição de devolução apresenta um id já utilizado por outra requisição de devolução para o e2eid em questão."}})
			}
			out = existing // a retry
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if now.Sub(p.Horario) > refundWindow {
			return violations(tDevolucaoInvalida, devolucaoInvalida, []violacao{{Propriedade: "devolucao",
				Razao: "A presente requisição de devolução viola a janela de 90 dias desde a liquidação do pix."}})
		}
		paid, _ := parseValor(p.Valor)
		refunded, err := q.RefundedSum(ctx, pspsimdb.RefundedSumParams{TenantID: acct.id, E2eID: e2eid})
		if err != nil {
			return err
		}
		if refunded+cents > paid {
			return violations(tDevolucaoInvalida, devolucaoInvalida, []violacao{{Propriedade: "devolucao.valor", Valor: *body.Valor,
				Razao: fmt.Sprintf("A presente requisição de devolução, em conjunto com as demais prévias devoluções (%s), excederia o valor do pix originário (%s).", formatValor(refunded), p.Valor)}})
		}
		params := pspsimdb.InsertRefundParams{TenantID: acct.id, E2eID: e2eid, ID: id, RtrID: newE2E("D", now), Valor: *body.Valor,
			Natureza: natureza, Descricao: descricao, Status: devolvido, Solicitacao: now, Liquidacao: &now}
		if rejected = s.faults.hit(FaultRefundRejected, s.faults.settings().RefundRejected); rejected {
			params.Status, params.Motivo, params.Liquidacao = naoRealizado, "Devolução não realizada (falha simulada).", nil
		}
		if out, err = q.InsertRefund(ctx, params); err != nil {
			return err
		}
		// A devolução reached a final status: notified like the Pix, if
		// the Pix carries a txid (only those are notified).
		if p.Txid != nil {
			notified = true
			_, err = q.InsertDelivery(ctx, pspsimdb.InsertDeliveryParams{TenantID: acct.id, Chave: p.Chave, E2eIds: []string{e2eid}, Reason: "devolucao", Now: now})
		}
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if notified {
		s.kick()
	}
	writeJSON(w, "application/json", http.StatusCreated, toDevolucao(out))
}

// getDevolucao is GET /pix/{e2eid}/devolucao/{id}.
func (s *Server) getDevolucao(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	e2eid, id := r.PathValue("e2eid"), r.PathValue("id")
	var row pspsimdb.PspsimRefund
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.GetRefund(ctx, pspsimdb.GetRefundParams{TenantID: acct.id, E2eID: e2eid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		writeProblem(w, problemf(tDevolucaoNaoEncontrada, "Devolução %s do Pix %s não encontrada.", id, e2eid))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, toDevolucao(row))
}

const webhookInvalido = "A presente requisição busca criar um webhook sem respeitar o schema ou, ainda, apresenta semântica inválida."

// putWebhook is PUT /webhook/{chave} {"webhookUrl":"https://…"}.
func (s *Server) putWebhook(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	chave := r.PathValue("chave")
	var body struct {
		WebhookURL *string `json:"webhookUrl"`
	}
	if p := decodeBody(r, &body, tWebhookOperacaoInvalida, "webhook"); p != nil {
		writeProblem(w, p)
		return
	}
	var vs []violacao
	if chave != acct.chave {
		vs = append(vs, violacao{Propriedade: "chave", Razao: "O parâmetro chave não corresponde a uma chave DICT pertencente a este usuário recebedor."})
	}
	if body.WebhookURL == nil {
		vs = append(vs, violacao{Propriedade: "webhook.webhookUrl", Razao: "O campo webhook.webhookUrl é obrigatório."})
	} else if u, err := url.Parse(*body.WebhookURL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || len(*body.WebhookURL) > 2000 {
		vs = append(vs, violacao{Propriedade: "webhook.webhookUrl", Razao: "O campo webhook.webhookUrl não respeita o schema (uma URL https://)."})
	}
	if p := violations(tWebhookOperacaoInvalida, webhookInvalido, vs); p != nil {
		writeProblem(w, p)
		return
	}
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		return q.UpsertWebhook(ctx, pspsimdb.UpsertWebhookParams{TenantID: acct.id, Chave: chave, Url: *body.WebhookURL, Criacao: s.clock()})
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// getWebhook is GET /webhook/{chave}.
func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	chave := r.PathValue("chave")
	var row pspsimdb.PspsimWebhook
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.GetWebhook(ctx, pspsimdb.GetWebhookParams{TenantID: acct.id, Chave: chave})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		writeProblem(w, problemf(tWebhookNaoEncontrado, "O webhook da chave %s não está estabelecido.", chave))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, Webhook{WebhookURL: row.Url, Chave: row.Chave, CNPJ: acct.cnpj, Criacao: row.Criacao.UTC()})
}

// deleteWebhook is DELETE /webhook/{chave}.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, acct *account) {
	ctx := r.Context()
	chave := r.PathValue("chave")
	var n int64
	err := s.single(ctx, acct.id, func(q *pspsimdb.Queries) error {
		var err error
		n, err = q.DeleteWebhook(ctx, pspsimdb.DeleteWebhookParams{TenantID: acct.id, Chave: chave})
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n == 0 {
		writeProblem(w, problemf(tWebhookNaoEncontrado, "O webhook da chave %s não está estabelecido.", chave))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// kick wakes the delivery worker (a delivery was just queued).
func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
