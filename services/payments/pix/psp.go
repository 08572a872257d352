// Package pix is the boundary between the payments service and a Pix PSP:
// the subset of the BCB API Pix (v2) a checkout needs, as a Go interface
// ([PSP]) with the API's own shapes and rules. Its one implementation is
// the HTTP client in package apipix (OAuth2 client credentials over mTLS),
// pointed at a real PSP in production and at the PSP simulator (package
// pixsim, a bcpd role speaking the same wire protocol) in the sandbox.
//
// Values cross this boundary the way the API writes them: amounts are
// decimal strings with exactly two decimals ("123.45"), made from int64
// centavos with [FormatValor] and read back with [ParseValor]; floats never
// touch money.
package pix

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/bcpdev/bcp/protocol/brcode"
)

// PSP is the API Pix subset the payments service uses, for one receiver
// (a merchant's Pix handler). Every id is chosen by the caller and stored
// before the call, so every call can be retried after a timeout.
type PSP interface {
	// CreateCharge is PUT /cob/{txid}: idempotent by txid. An ATIVA charge
	// with the same txid is revised; any other status fails with
	// ErrOperacaoInvalida.
	CreateCharge(ctx context.Context, txid string, req CobSolicitada) (Cob, error)
	// GetCharge is GET /cob/{txid}; a paid charge lists its Pix.
	GetCharge(ctx context.Context, txid string) (Cob, error)
	// RemoveCharge is PATCH /cob/{txid} {"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}.
	// It returns the charge as it stands afterwards: callers must check
	// Status, because a charge paid first stays CONCLUIDA (the API refuses
	// the PATCH; adapters then answer with GET /cob/{txid}).
	RemoveCharge(ctx context.Context, txid string) (Cob, error)
	// GetPix is GET /pix/{e2eid}.
	GetPix(ctx context.Context, e2eid string) (Pix, error)
	// ListPix is GET /pix?inicio&fim, every page: the Pix received in
	// [inicio, fim], for reconciling notifications that never came.
	ListPix(ctx context.Context, inicio, fim time.Time) ([]Pix, error)
	// Refund is PUT /pix/{e2eid}/devolucao/{id}: idempotent by id.
	Refund(ctx context.Context, e2eid, id string, req DevolucaoSolicitada) (Devolucao, error)
	// GetRefund is GET /pix/{e2eid}/devolucao/{id}.
	GetRefund(ctx context.Context, e2eid, id string) (Devolucao, error)
	// EnsureWebhook is PUT /webhook/{chave}: the PSP posts to url + "/pix".
	EnsureWebhook(ctx context.Context, chave, url string) error
	// AuthenticateWebhook checks that a notification comes from this PSP:
	// by the client certificate it presented (mTLS, what the API Pix
	// prescribes) or a PSP-specific scheme configured for it. Failures
	// wrap ErrUnauthenticated.
	AuthenticateWebhook(ctx context.Context, w Webhook) error
}

// Webhook is a notification as it arrived, for AuthenticateWebhook.
type Webhook struct {
	Header http.Header
	Body   []byte
	// ClientCertChain is the certificate chain the caller presented
	// (DER, leaf first): from the TLS handshake, or from the header a
	// TLS-terminating proxy put it in. Empty when none was presented.
	ClientCertChain [][]byte
}

// Charge statuses (CobrancaStatus). An expired charge stays ATIVA: expiry
// is computed by the receiver from calendario and enforced by removing it.
const (
	StatusAtiva              = "ATIVA"
	StatusConcluida          = "CONCLUIDA"
	StatusRemovidaRecebedor  = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
	StatusRemovidaPSP        = "REMOVIDA_PELO_PSP"
	DevolucaoEmProcessamento = "EM_PROCESSAMENTO"
	DevolucaoDevolvido       = "DEVOLVIDO"
	DevolucaoNaoRealizado    = "NAO_REALIZADO"
	NaturezaOriginal         = "ORIGINAL"
)

// CobSolicitada is the body of PUT /cob/{txid}.
type CobSolicitada struct {
	Calendario struct {
		// Expiracao is the lifetime in seconds from creation (> 0;
		// omitted: the PSP's default, 86 400).
		Expiracao int `json:"expiracao,omitempty"`
	} `json:"calendario"`
	Valor struct {
		Original string `json:"original"`
		// ModalidadeAlteracao 0: the payer cannot change the amount.
		ModalidadeAlteracao int `json:"modalidadeAlteracao"`
	} `json:"valor"`
	Chave              string `json:"chave"`
	SolicitacaoPagador string `json:"solicitacaoPagador,omitempty"`
}

// Cob is a charge as the API returns it (CobCompleta).
type Cob struct {
	Txid       string `json:"txid"`
	Revisao    int    `json:"revisao"`
	Status     string `json:"status"`
	Calendario struct {
		Criacao   time.Time `json:"criacao"`
		Expiracao int       `json:"expiracao"`
	} `json:"calendario"`
	Valor struct {
		Original string `json:"original"`
	} `json:"valor"`
	Chave              string `json:"chave"`
	SolicitacaoPagador string `json:"solicitacaoPagador,omitempty"`
	// Loc is the payload location the PSP made for the charge.
	Loc *Loc `json:"loc,omitempty"`
	// Location is the payload URL without scheme (≤ 77).
	Location      string `json:"location,omitempty"`
	PixCopiaECola string `json:"pixCopiaECola,omitempty"`
	Pix           []Pix  `json:"pix,omitempty"`
}

// Loc is a payload location (PayloadLocation).
type Loc struct {
	ID       int64     `json:"id"`
	Txid     string    `json:"txid"`
	Location string    `json:"location"`
	TipoCob  string    `json:"tipoCob"`
	Criacao  time.Time `json:"criacao"`
}

// Pix is a received Pix (GET /pix/{e2eid} and webhook items).
type Pix struct {
	EndToEndID  string      `json:"endToEndId"`
	Txid        string      `json:"txid,omitempty"`
	Valor       string      `json:"valor"`
	Horario     time.Time   `json:"horario"`
	InfoPagador string      `json:"infoPagador,omitempty"`
	Devolucoes  []Devolucao `json:"devolucoes,omitempty"`
}

// DevolucaoSolicitada is the body of PUT /pix/{e2eid}/devolucao/{id}.
type DevolucaoSolicitada struct {
	Valor     string `json:"valor"`
	Natureza  string `json:"natureza,omitempty"`
	Descricao string `json:"descricao,omitempty"`
}

// Devolucao is a refund of a received Pix.
type Devolucao struct {
	ID       string `json:"id"`
	RtrID    string `json:"rtrId"`
	Valor    string `json:"valor"`
	Natureza string `json:"natureza,omitempty"`
	Horario  struct {
		Solicitacao time.Time  `json:"solicitacao"`
		Liquidacao  *time.Time `json:"liquidacao,omitempty"`
	} `json:"horario"`
	Status string `json:"status"`
	Motivo string `json:"motivo,omitempty"`
}

// Notification is the body a PSP posts to {webhookUrl}/pix.
type Notification struct {
	Pix []Pix `json:"pix"`
}

// Problem is an API Pix error (RFC 7807 application/problem+json).
type Problem struct {
	Status int    // HTTP status
	Type   string // TipoErro, e.g. "CobNaoEncontrado" (the URI's last segment)
	Title  string
	Detail string
	// CorrelationID is the PSP's reference for its support.
	CorrelationID string
	Violacoes     []Violacao
}

// problemJSON is a Problem as the API writes it.
type problemJSON struct {
	Type          string     `json:"type"`
	Title         string     `json:"title"`
	Status        int        `json:"status"`
	Detail        string     `json:"detail,omitempty"`
	CorrelationID string     `json:"correlationId,omitempty"`
	Violacoes     []Violacao `json:"violacoes,omitempty"`
}

// MarshalJSON writes the RFC 7807 body (type as the full URI).
func (p *Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(problemJSON{Type: ErrorTypeBase + p.Type, Title: cmp.Or(p.Title, p.Type), Status: p.Status,
		Detail: p.Detail, CorrelationID: p.CorrelationID, Violacoes: p.Violacoes})
}

// UnmarshalJSON reads an RFC 7807 body; Type keeps the URI's last segment.
func (p *Problem) UnmarshalJSON(b []byte) error {
	var j problemJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Problem{Status: j.Status, Type: j.Type[strings.LastIndexByte(j.Type, '/')+1:], Title: j.Title, Detail: j.Detail,
		CorrelationID: j.CorrelationID, Violacoes: j.Violacoes}
	return nil
}

// Violacao is one rule a request broke.
type Violacao struct {
	Razao       string `json:"razao,omitempty"`
	Propriedade string `json:"propriedade,omitempty"`
	Valor       string `json:"valor,omitempty"`
}

// ErrorTypeBase prefixes every API Pix error type.
const ErrorTypeBase = "https://pix.bcb.gov.br/api/v2/error/"

func (p *Problem) Error() string {
	msg := fmt.Sprintf("API Pix %d %s", p.Status, p.Type)
	if d := cmp.Or(p.Detail, p.Title); d != "" {
		msg += ": " + d
	}
	for _, v := range p.Violacoes {
		msg += fmt.Sprintf(" [%s: %s]", v.Propriedade, v.Razao)
	}
	return msg
}

// Is makes errors.Is(err, ErrNaoEncontrado) and friends match by type.
func (p *Problem) Is(target error) bool {
	t, ok := target.(*Problem)
	return ok && t.Type == p.Type
}

// The API Pix error types callers branch on.
var (
	ErrCobNaoEncontrado       = &Problem{Status: 404, Type: "CobNaoEncontrado"}
	ErrPixNaoEncontrado       = &Problem{Status: 404, Type: "PixNaoEncontrado"}
	ErrDevolucaoNaoEncontrada = &Problem{Status: 404, Type: "PixDevolucaoNaoEncontrada"}
	ErrOperacaoInvalida       = &Problem{Status: 400, Type: "CobOperacaoInvalida"}
	ErrDevolucaoInvalida      = &Problem{Status: 400, Type: "PixDevolucaoInvalida"}
	ErrServicoIndisponivel    = &Problem{Status: 503, Type: "ServicoIndisponivel"}
	ErrRequisicaoInvalida     = &Problem{Status: 400, Type: "RequisicaoInvalida"}
	ErrAcessoNegado           = &Problem{Status: 403, Type: "AcessoNegado"}
	ErrWebhookInvalido        = &Problem{Status: 400, Type: "WebhookOperacaoInvalida"}
	ErrNaoEncontrado          = &Problem{Status: 404, Type: "NaoEncontrado"}
)

// ErrUnauthenticated marks a webhook that does not come from the PSP.
var ErrUnauthenticated = errors.New("pix: webhook not authenticated")

// Field rules of the API Pix.
var (
	TxidCob     = regexp.MustCompile(`^[a-zA-Z0-9]{26,35}$`) // cob/cobv txid
	TxidAny     = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)  // Pix.txid (static codes relax it)
	EndToEndID  = regexp.MustCompile(`^[a-zA-Z0-9]{32}$`)
	DevolucaoID = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)
	ValorRegexp = regexp.MustCompile(`^\d{1,10}\.\d{2}$`)
)

// FormatValor renders centavos as an API Pix value ("123.45").
func FormatValor(cents int64) (string, error) {
	if cents <= 0 {
		return "", fmt.Errorf("pix: amount must be positive, got %d centavos", cents)
	}
	return brcode.FormatAmount(cents)
}

// ParseValor reads an API Pix value into centavos, accepting only the
// canonical form (\d{1,10}\.\d{2}, no leading zeros).
func ParseValor(s string) (int64, error) {
	if !ValorRegexp.MatchString(s) {
		return 0, fmt.Errorf("pix: value %q is not \\d{1,10}\\.\\d{2}", s)
	}
	return brcode.ParseAmount(s)
}
