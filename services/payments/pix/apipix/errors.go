package apipix

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"golang.org/x/oauth2"

	"github.com/bcpdev/bcp/services/payments/pix"
)

// TransportError is a request whose answer never came (timeout, reset,
// refused connection): the PSP may or may not have acted on it.
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string { return "API Pix " + e.Op + ": no answer: " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// ConfigError is a failure that retrying will not fix: the merchant's
// configuration (credentials, certificate, scopes, Pix key, URLs) or the
// PSP's TLS setup is wrong. Msg says what, in Portuguese, for the
// merchant; it never contains a secret.
type ConfigError struct {
	Code string
	Msg  string
	Err  error
}

func (e *ConfigError) Error() string {
	if e.Err != nil {
		return "API Pix configuration: " + e.Code + ": " + e.Msg + " (" + e.Err.Error() + ")"
	}
	return "API Pix configuration: " + e.Code + ": " + e.Msg
}
func (e *ConfigError) Unwrap() error { return e.Err }

// notFound is the specific 404 type of each operation: PSPs answer the
// generic NaoEncontrado or the specific one; callers branch on the latter.
var notFound = map[string]string{
	"cob.put": "CobNaoEncontrado", "cob.get": "CobNaoEncontrado", "cob.patch": "CobNaoEncontrado",
	"pix.get": "PixNaoEncontrado", "devolucao.put": "PixNaoEncontrado", "devolucao.get": "PixDevolucaoNaoEncontrada",
	"webhook.put": "WebhookNaoEncontrado", "webhook.get": "WebhookNaoEncontrado",
}

// problemOf turns a non-success answer into a *pix.Problem (or a
// *ConfigError for the answers that mean the configuration is wrong).
func problemOf(op string, r response) error {
	p := &pix.Problem{}
	_ = json.Unmarshal(r.body, p) // a proxy's HTML page is still an error of its status
	p.Status = r.status
	if p.Type == "" && p.Detail == "" && len(r.body) > 0 && !json.Valid(r.body) {
		p.Detail = fmt.Sprintf("%s: the PSP answered %d without a problem body", op, r.status)
	}
	switch {
	case r.status == http.StatusNotFound && (p.Type == "" || p.Type == "NaoEncontrado") && notFound[op] != "":
		p.Type = notFound[op]
	case p.Type == "" && r.status >= 500:
		p.Type = "ServicoIndisponivel"
	case p.Type == "" && r.status == http.StatusForbidden:
		p.Type = "AcessoNegado"
	case p.Type == "":
		p.Type = "RequisicaoInvalida"
	}
	switch r.status {
	case http.StatusUnauthorized:
		return &ConfigError{Code: "token_rejected", Msg: "o PSP recusou o token de acesso mesmo recém-emitido (401): confira se o certificado e as credenciais são da mesma conta", Err: p}
	case http.StatusForbidden:
		return &ConfigError{Code: "access_denied", Msg: "o PSP negou acesso (403 AcessoNegado): a conta não tem o escopo ou o produto necessário" + detailSuffix(p), Err: p}
	}
	return p
}

func detailSuffix(p *pix.Problem) string {
	if p.Detail != "" {
		return " — " + p.Detail
	}
	return ""
}

func tokenStatus(err error) int {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	if err == nil {
		return http.StatusOK
	}
	return 0
}

// tokenError explains a failed token request.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch re.ErrorCode {
		case "invalid_client", "unauthorized_client":
			return &ConfigError{Code: "invalid_client", Msg: "o PSP recusou client_id/client_secret (ou o certificado não é desta conta)", Err: errors.New(re.ErrorCode)}
		case "invalid_scope":
			return &ConfigError{Code: "missing_scope", Msg: "o PSP não concede a esta conta os escopos pedidos: " + strings.Join(DefaultScopes, " "), Err: errors.New(re.ErrorCode)}
		}
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if status >= 500 || status == http.StatusTooManyRequests {
			return &TransportError{Op: "token", Err: fmt.Errorf("token endpoint answered %d", status)}
		}
		return &ConfigError{Code: "token_failed", Msg: fmt.Sprintf("o endpoint de token do PSP respondeu %d %s", status, re.ErrorCode)}
	}
	return classifyTransport("token", err)
}

// classifyTransport tells configuration failures (TLS trust, client
// certificate refused, unknown host) from a network that may recover.
func classifyTransport(op string, err error) error {
	if err == nil {
		return nil
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var dns *net.DNSError
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ua):
		return &ConfigError{Code: "tls_server_untrusted", Msg: "o certificado do servidor do PSP não é de uma autoridade confiável (configure a CA do PSP)", Err: err}
	case errors.As(err, &he):
		return &ConfigError{Code: "tls_server_name", Msg: "o certificado do servidor do PSP não vale para o host da URL configurada", Err: err}
	case errors.As(err, &ci):
		return &ConfigError{Code: "tls_server_invalid", Msg: "o certificado do servidor do PSP é inválido ou expirou", Err: err}
	case strings.Contains(msg, "remote error: tls:"):
		// The PSP's TLS stack refused our client certificate (absent,
		// expired, or from a CA it does not accept).
		return &ConfigError{Code: "tls_client_rejected", Msg: "o PSP recusou o certificado de cliente (mTLS): " + msg[strings.Index(msg, "remote error: tls:")+len("remote error: tls: "):], Err: err}
	case errors.As(err, &dns) && dns.IsNotFound:
		return &ConfigError{Code: "dns", Msg: "o host do PSP não existe (DNS): " + dns.Name, Err: err}
	}
	return &TransportError{Op: op, Err: err}
}

// withoutCertificate names the missing client certificate when a client
// that has none loses its connection: the API Pix requires mTLS, and a
// TLS 1.3 server refuses a missing certificate after the client's side of
// the handshake is done, so the client sees a broken pipe or a reset as
// often as the server's alert.
func (c *Client) withoutCertificate(err error) error {
	var te *TransportError
	if c.cfg.Certificate != nil || !errors.As(err, &te) {
		return err
	}
	return &ConfigError{Code: "tls_client_rejected", Msg: "nenhum certificado de cliente (mTLS) está configurado, e o PSP encerrou a conexão: a API Pix exige o certificado que o PSP emitiu", Err: err}
}

// Diagnosis is what a failure means for the people involved.
type Diagnosis struct {
	// Code is stable, for metrics and tests.
	Code string
	// Merchant says what is wrong and what to fix (admin, bcpctl).
	Merchant string
	// Buyer is what an agent may tell the buyer (never internals).
	Buyer string
	// Config is true when only a configuration change fixes it.
	Config bool
}

// Diagnose explains an error of this client.
func Diagnose(err error) Diagnosis {
	var ce *ConfigError
	var te *TransportError
	var p *pix.Problem
	switch {
	case err == nil:
		return Diagnosis{Code: "ok"}
	case errors.As(err, &ce):
		return Diagnosis{Code: ce.Code, Merchant: ce.Msg, Buyer: "O pagamento por Pix está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento.", Config: true}
	case errors.As(err, &p) && mentionsChave(p):
		return Diagnosis{Code: "unknown_pix_key", Merchant: "o PSP não aceita a chave Pix configurada para esta conta: " + p.Error(),
			Buyer: "O pagamento por Pix está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento.", Config: true}
	case errors.As(err, &p) && p.Type == "WebhookOperacaoInvalida":
		return Diagnosis{Code: "webhook_refused", Merchant: "o PSP recusou o endereço do webhook (precisa ser https e alcançável pelo PSP): " + p.Error(),
			Buyer: "O pagamento por Pix está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento.", Config: true}
	case errors.As(err, &p) && p.Status >= 500:
		return Diagnosis{Code: "psp_unavailable", Merchant: "o PSP está indisponível: " + p.Error(), Buyer: "O banco recebedor do Pix está indisponível agora; tente novamente em instantes."}
	case errors.As(err, &p):
		return Diagnosis{Code: "psp_refused", Merchant: "o PSP recusou a requisição: " + p.Error(), Buyer: "Não foi possível gerar a cobrança Pix agora; tente novamente."}
	case errors.As(err, &te), errors.Is(err, context.DeadlineExceeded):
		return Diagnosis{Code: "psp_no_answer", Merchant: "o PSP não respondeu: " + err.Error(), Buyer: "O banco recebedor do Pix não respondeu; tente novamente em instantes."}
	}
	return Diagnosis{Code: "error", Merchant: err.Error(), Buyer: "Não foi possível gerar a cobrança Pix agora; tente novamente."}
}

func mentionsChave(p *pix.Problem) bool {
	for _, v := range p.Violacoes {
		if strings.HasSuffix(v.Propriedade, "chave") {
			return true
		}
	}
	return false
}
