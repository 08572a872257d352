package pspsim

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// errorTypeBase prefixes every API Pix error type.
const errorTypeBase = "https://pix.bcb.gov.br/api/v2/error/"

// tipo is an API Pix error type with its HTTP status and title (the
// spec's examples' titles).
type tipo struct {
	name   string
	status int
	title  string
}

var (
	tRequisicaoInvalida      = tipo{"RequisicaoInvalida", 400, "Requisição inválida."}
	tAcessoNegado            = tipo{"AcessoNegado", 403, "Acesso Negado"}
	tNaoEncontrado           = tipo{"NaoEncontrado", 404, "Não Encontrado"}
	tErroInterno             = tipo{"ErroInternoDoServidor", 500, "Erro Interno do Servidor"}
	tServicoIndisponivel     = tipo{"ServicoIndisponivel", 503, "Serviço Indisponível"}
	tCobNaoEncontrado        = tipo{"CobNaoEncontrado", 404, "Cobrança não encontrada."}
	tCobOperacaoInvalida     = tipo{"CobOperacaoInvalida", 400, "Cobrança inválida."}
	tPixNaoEncontrado        = tipo{"PixNaoEncontrado", 404, "Pix não encontrado."}
	tPixConsultaInvalida     = tipo{"PixConsultaInvalida", 400, "Consulta inválida."}
	tDevolucaoInvalida       = tipo{"PixDevolucaoInvalida", 400, "Devolução inválida."}
	tDevolucaoNaoEncontrada  = tipo{"PixDevolucaoNaoEncontrada", 404, "Devolução não encontrada."}
	tWebhookOperacaoInvalida = tipo{"WebhookOperacaoInvalida", 400, "Webhook inválido."}
	tWebhookNaoEncontrado    = tipo{"WebhookNaoEncontrado", 404, "Webhook não encontrado."}
)

// problem is an RFC 7807 answer of the API Pix (schema Problema).
type problem struct {
	Type          string     `json:"type"`
	Title         string     `json:"title"`
	Status        int        `json:"status"`
	Detail        string     `json:"detail,omitempty"`
	CorrelationID string     `json:"correlationId,omitempty"`
	Violacoes     []violacao `json:"violacoes,omitempty"`
}

// violacao is one rule a request broke.
type violacao struct {
	Razao       string `json:"razao"`
	Propriedade string `json:"propriedade"`
	Valor       string `json:"valor,omitempty"`
}

func (p *problem) Error() string { return p.Type + ": " + p.Detail }

func problemf(t tipo, format string, args ...any) *problem {
	return &problem{Type: errorTypeBase + t.name, Title: t.title, Status: t.status, Detail: fmt.Sprintf(format, args...)}
}

// violations is a problem of type t listing vs (nil when vs is empty).
func violations(t tipo, detail string, vs []violacao) *problem {
	if len(vs) == 0 {
		return nil
	}
	p := problemf(t, "%s", detail)
	p.Violacoes = vs
	return p
}

// fail answers err: a *problem as it is, anything else as an internal
// error, logged with its correlation id and never shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem
	if !errors.As(err, &p) {
		p = problemf(tErroInterno, "Condição inesperada ao processar a requisição.")
		p.CorrelationID = rand.Text()[:16]
		s.log.ErrorContext(r.Context(), "pspsim: internal error", "method", r.Method, "path", r.URL.Path, "correlation_id", p.CorrelationID, "err", err)
	}
	writeProblem(w, p)
}

// writeProblem answers p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *problem) {
	if p.CorrelationID == "" {
		p.CorrelationID = rand.Text()[:16]
	}
	writeJSON(w, "application/problem+json", p.Status, p)
}

func writeJSON(w http.ResponseWriter, contentType string, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "pspsim: cannot encode the answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
