package apipix

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/bcpdev/bcp/services/payments/pix"
)

// CreateCharge is PUT /cob/{txid}. A lost answer is settled by GET: the
// charge there with our amount and key is the one we asked for; no
// charge means the PUT never happened, and it is sent again.
func (c *Client) CreateCharge(ctx context.Context, txid string, req pix.CobSolicitada) (pix.Cob, error) {
	path := "/cob/" + url.PathEscape(txid)
	for n := 0; ; n++ {
		r, err := c.call(ctx, "cob.put", http.MethodPut, path, nil, req)
		if err == nil && (r.status == http.StatusCreated || r.status == http.StatusOK) {
			var cob pix.Cob
			if err := decode("cob.put", r, r.status, &cob); err != nil {
				return pix.Cob{}, err
			}
			return cob, checkCob(txid, cob)
		}
		if !retryable(r, err) {
			return pix.Cob{}, firstErr(err, problemOf("cob.put", r))
		}
		if n >= c.cfg.Retries {
			return pix.Cob{}, firstErr(err, problemOf("cob.put", r))
		}
		if berr := backoff(ctx, n+1); berr != nil {
			return pix.Cob{}, firstErr(err, berr)
		}
		cob, gerr := c.GetCharge(ctx, txid)
		switch {
		case gerr == nil && cob.Status == pix.StatusAtiva && cob.Valor.Original == req.Valor.Original && cob.Chave == req.Chave:
			return cob, nil // the lost PUT created it
		case gerr == nil, errors.Is(gerr, pix.ErrCobNaoEncontrado):
			// Not there, or there with other terms (a PUT revises an
			// ATIVA charge; the PSP refuses any other): PUT again.
		default:
			return pix.Cob{}, gerr
		}
	}
}

// checkCob refuses an answer about another charge.
func checkCob(txid string, cob pix.Cob) error {
	if cob.Txid != txid {
		return &pix.Problem{Status: http.StatusOK, Type: "RespostaInvalida", Detail: "the PSP answered for txid " + strconv.Quote(cob.Txid) + " instead of " + strconv.Quote(txid)}
	}
	return nil
}

// GetCharge is GET /cob/{txid}.
func (c *Client) GetCharge(ctx context.Context, txid string) (pix.Cob, error) {
	r, err := c.read(ctx, "cob.get", "/cob/"+url.PathEscape(txid), nil)
	if err != nil {
		return pix.Cob{}, err
	}
	var cob pix.Cob
	if err := decode("cob.get", r, http.StatusOK, &cob); err != nil {
		return pix.Cob{}, err
	}
	return cob, checkCob(txid, cob)
}

type removal struct {
	Status string `json:"status"`
}

// RemoveCharge is PATCH /cob/{txid} {"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}.
// The API refuses to remove a charge that is no longer ATIVA (paid, or
// removed before); the charge as it stands is then read and returned, so
// the caller sees a payment that won the race.
func (c *Client) RemoveCharge(ctx context.Context, txid string) (pix.Cob, error) {
	path := "/cob/" + url.PathEscape(txid)
	for n := 0; ; n++ {
		r, err := c.call(ctx, "cob.patch", http.MethodPatch, path, nil, removal{Status: pix.StatusRemovidaRecebedor})
		if err == nil && r.status == http.StatusOK {
			var cob pix.Cob
			if err := decode("cob.patch", r, http.StatusOK, &cob); err != nil {
				return pix.Cob{}, err
			}
			return cob, checkCob(txid, cob)
		}
		if err == nil && r.status == http.StatusBadRequest {
			if p := problemOf("cob.patch", r); errors.Is(p, pix.ErrOperacaoInvalida) {
				return c.GetCharge(ctx, txid)
			} else {
				return pix.Cob{}, p
			}
		}
		if !retryable(r, err) || n >= c.cfg.Retries {
			return pix.Cob{}, firstErr(err, problemOf("cob.patch", r))
		}
		if berr := backoff(ctx, n+1); berr != nil {
			return pix.Cob{}, firstErr(err, berr)
		}
		cob, gerr := c.GetCharge(ctx, txid)
		switch {
		case gerr == nil && cob.Status != pix.StatusAtiva:
			return cob, nil // removed by the lost PATCH, or paid meanwhile
		case gerr != nil:
			return pix.Cob{}, gerr
		}
	}
}

// GetPix is GET /pix/{e2eid}.
func (c *Client) GetPix(ctx context.Context, e2eid string) (pix.Pix, error) {
	r, err := c.read(ctx, "pix.get", "/pix/"+url.PathEscape(e2eid), nil)
	if err != nil {
		return pix.Pix{}, err
	}
	var p pix.Pix
	if err := decode("pix.get", r, http.StatusOK, &p); err != nil {
		return pix.Pix{}, err
	}
	if p.EndToEndID != e2eid {
		return pix.Pix{}, &pix.Problem{Status: http.StatusOK, Type: "RespostaInvalida", Detail: "the PSP answered for another endToEndId"}
	}
	return p, nil
}

// pageSize is how many Pix GET /pix asks for at once (the API allows
// 1 000).
const pageSize = 100

// maxPages bounds one ListPix (100 000 Pix): a reconciliation window that
// holds more is split by the caller.
const maxPages = 1000

type pixPage struct {
	Parametros struct {
		Paginacao struct {
			PaginaAtual         int `json:"paginaAtual"`
			QuantidadeDePaginas int `json:"quantidadeDePaginas"`
		} `json:"paginacao"`
	} `json:"parametros"`
	Pix []pix.Pix `json:"pix"`
}

// ListPix is GET /pix?inicio&fim, page by page. The window is widened to
// whole seconds (inicio down, fim up): RFC 3339 without fractions is what
// every PSP takes, and a Pix at fim's fraction must not fall out.
func (c *Client) ListPix(ctx context.Context, inicio, fim time.Time) ([]pix.Pix, error) {
	inicio = inicio.Truncate(time.Second)
	if t := fim.Truncate(time.Second); !t.Equal(fim) {
		fim = t.Add(time.Second)
	}
	var out []pix.Pix
	for page := 0; page < maxPages; page++ {
		q := url.Values{
			"inicio": {inicio.UTC().Format(time.RFC3339)}, "fim": {fim.UTC().Format(time.RFC3339)},
			"paginacao.paginaAtual": {strconv.Itoa(page)}, "paginacao.itensPorPagina": {strconv.Itoa(pageSize)},
		}
		r, err := c.read(ctx, "pix.list", "/pix", q)
		if err != nil {
			return nil, err
		}
		var p pixPage
		if err := decode("pix.list", r, http.StatusOK, &p); err != nil {
			return nil, err
		}
		out = append(out, p.Pix...)
		if page+1 >= p.Parametros.Paginacao.QuantidadeDePaginas || len(p.Pix) == 0 {
			return out, nil
		}
	}
	return out, &pix.Problem{Status: http.StatusOK, Type: "RespostaInvalida", Detail: "more than 100 000 Pix in one window: list a shorter one"}
}

// Refund is PUT /pix/{e2eid}/devolucao/{id}; a lost answer is settled by
// GET of the same devolução.
func (c *Client) Refund(ctx context.Context, e2eid, id string, req pix.DevolucaoSolicitada) (pix.Devolucao, error) {
	path := "/pix/" + url.PathEscape(e2eid) + "/devolucao/" + url.PathEscape(id)
	for n := 0; ; n++ {
		r, err := c.call(ctx, "devolucao.put", http.MethodPut, path, nil, req)
		if err == nil && (r.status == http.StatusCreated || r.status == http.StatusOK) {
			var d pix.Devolucao
			err := decode("devolucao.put", r, r.status, &d)
			return d, err
		}
		if !retryable(r, err) || n >= c.cfg.Retries {
			return pix.Devolucao{}, firstErr(err, problemOf("devolucao.put", r))
		}
		if berr := backoff(ctx, n+1); berr != nil {
			return pix.Devolucao{}, firstErr(err, berr)
		}
		d, gerr := c.GetRefund(ctx, e2eid, id)
		switch {
		case gerr == nil:
			return d, nil // the lost PUT made it
		case !errors.Is(gerr, pix.ErrDevolucaoNaoEncontrada):
			return pix.Devolucao{}, gerr
		}
	}
}

// GetRefund is GET /pix/{e2eid}/devolucao/{id}.
func (c *Client) GetRefund(ctx context.Context, e2eid, id string) (pix.Devolucao, error) {
	r, err := c.read(ctx, "devolucao.get", "/pix/"+url.PathEscape(e2eid)+"/devolucao/"+url.PathEscape(id), nil)
	if err != nil {
		return pix.Devolucao{}, err
	}
	var d pix.Devolucao
	err = decode("devolucao.get", r, http.StatusOK, &d)
	return d, err
}

type webhookConfig struct {
	WebhookURL string `json:"webhookUrl"`
}

// EnsureWebhook is PUT /webhook/{chave}, itself idempotent: retried as
// it is.
func (c *Client) EnsureWebhook(ctx context.Context, chave, webhookURL string) error {
	path := "/webhook/" + url.PathEscape(chave)
	for n := 0; ; n++ {
		r, err := c.call(ctx, "webhook.put", http.MethodPut, path, nil, webhookConfig{WebhookURL: webhookURL})
		if err == nil && r.status/100 == 2 {
			return nil
		}
		if !retryable(r, err) || n >= c.cfg.Retries {
			return firstErr(err, problemOf("webhook.put", r))
		}
		if berr := backoff(ctx, n+1); berr != nil {
			return firstErr(err, berr)
		}
	}
}

// TestConnection is the merchant's "Testar conexão": a fresh token (the
// credentials, certificate and scopes), then the webhook registration
// for chave at webhookURL (the Pix key and the write scope). The error,
// through Diagnose, says exactly what failed.
func (c *Client) TestConnection(ctx context.Context, chave, webhookURL string) error {
	c.mu.Lock()
	c.token = nil
	c.mu.Unlock()
	if _, err := c.accessToken(ctx); err != nil {
		return err
	}
	return c.EnsureWebhook(ctx, chave, webhookURL)
}
