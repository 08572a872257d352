// Package simpsp is the simulated Pix PSP of sandbox handlers: the
// receiver's side of the BCB API Pix (cob, pix, devolução, webhook)
// implemented over the payments schema, so its state survives restarts,
// with the API's validation rules. It mints dynamic-style BR Codes whose
// location is "<host>/sim/pix/qr/<uuid>" (real banks refuse them, which is
// what a sandbox wants) and, when a charge is paid with [Sim.Pay], posts a
// real HTTP webhook {"pix":[...]} to the URL registered with
// EnsureWebhook + "/pix", signed with
//
//	X-Sim-Signature: t=<unix seconds>,v1=hex(HMAC-SHA256(secret, t + "." + body))
//
// from a durable job, so a failing receiver is retried. The production
// code paths (webhook route, verification, receipts, reconciliation) are
// therefore exercised end to end in the sandbox and in tests.
package simpsp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/brcode"
)

// SignatureHeader carries the simulated PSP's webhook signature.
const SignatureHeader = "X-Sim-Signature"

// MaxSkew is how far a webhook's signed timestamp may be from now.
const MaxSkew = 5 * time.Minute

// ispb is the simulated PSP's participant code in endToEndIds.
const ispb = "99999999"

// refundWindow: devoluções are allowed up to 90 days after the Pix.
const refundWindow = 90 * 24 * time.Hour

// Sim is the simulated PSP. One Sim serves every tenant; each receiver (a
// tenant's sandbox Pix handler) gets its own client from [Sim.Client].
type Sim struct {
	pool *pgxpool.Pool
	now  func() time.Time
	hc   *http.Client
	log  *slog.Logger
	jobs *jobs.Client
	// secret returns the webhook secret shared with a receiver.
	secret func(ctx context.Context, handlerID string) ([]byte, error)
}

// New returns the simulator. secret gives the HMAC secret of a handler's
// webhook; hc posts the webhooks (nil: a client with a 10 s timeout that
// does not follow redirects and sends "*.localhost" to the loopback
// interface, as RFC 6761 says, whatever the system resolver does — the
// development merchants live there).
func New(pool *pgxpool.Pool, now func() time.Time, hc *http.Client, log *slog.Logger, secret func(ctx context.Context, handlerID string) ([]byte, error)) *Sim {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})
		hc = &http.Client{Timeout: 10 * time.Second, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sim{pool: pool, now: now, hc: hc, log: log, secret: secret}
}

// DialLocalhost dials like d, except that "localhost" and "*.localhost"
// always reach 127.0.0.1.
func DialLocalhost(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
				addr = net.JoinHostPort("127.0.0.1", port)
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// UseJobs gives the simulator the job client its webhooks go through.
func (s *Sim) UseJobs(c *jobs.Client) { s.jobs = c }

// Receiver is one simulated receiving account.
type Receiver struct {
	HandlerID    string
	MerchantName string // BR Code field 59 (normalised here)
	MerchantCity string // BR Code field 60 (normalised here)
	// LocationHost is the host of the charge locations (no scheme).
	LocationHost string
	// Secret authenticates the webhooks this receiver gets.
	Secret []byte
}

// Client returns the API Pix of one receiver.
func (s *Sim) Client(r Receiver) pix.PSP { return &client{sim: s, r: r} }

type client struct {
	sim *Sim
	r   Receiver
}

var _ pix.PSP = (*client)(nil)

func (s *Sim) inTenant(ctx context.Context, fn func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error { return fn(paymentsdb.New(tx), tid, tx) })
}

// single runs fn, one statement, in the context tenant's scope in one
// round trip (pgstore.Single). Reads of several statements use one each:
// under READ COMMITTED a read-only transaction's statements see no more
// of one snapshot than separate ones do.
func (s *Sim) single(ctx context.Context, fn func(q *paymentsdb.Queries, tid uuid.UUID) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	return pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error { return fn(paymentsdb.New(q), tid) })
}

// reader runs one statement with the queries: inside a transaction, or
// in its own round trip (Sim.single).
type reader func(fn func(q *paymentsdb.Queries) error) error

func inTx(q *paymentsdb.Queries) reader {
	return func(fn func(q *paymentsdb.Queries) error) error { return fn(q) }
}

func (s *Sim) singles(ctx context.Context) reader {
	return func(fn func(q *paymentsdb.Queries) error) error {
		return s.single(ctx, func(q *paymentsdb.Queries, _ uuid.UUID) error { return fn(q) })
	}
}

func problem(base *pix.Problem, format string, args ...any) *pix.Problem {
	return &pix.Problem{Status: base.Status, Type: base.Type, Detail: fmt.Sprintf(format, args...)}
}

func (c *client) CreateCharge(ctx context.Context, txid string, req pix.CobSolicitada) (pix.Cob, error) {
	if !pix.TxidCob.MatchString(txid) {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "txid must match [a-zA-Z0-9]{26,35}")
	}
	if req.Calendario.Expiracao == 0 {
		req.Calendario.Expiracao = 86400
	}
	if req.Calendario.Expiracao < 0 {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "calendario.expiracao must be positive")
	}
	cents, err := pix.ParseValor(req.Valor.Original)
	if err != nil || cents == 0 {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "valor.original must match \\d{1,10}\\.\\d{2} and be above 0.00")
	}
	if req.Valor.ModalidadeAlteracao != 0 && req.Valor.ModalidadeAlteracao != 1 {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "valor.modalidadeAlteracao must be 0 or 1")
	}
	if n := len(req.Chave); n == 0 || n > 77 {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "chave must have 1 to 77 characters")
	}
	if len([]rune(req.SolicitacaoPagador)) > 140 {
		return pix.Cob{}, problem(pix.ErrOperacaoInvalida, "solicitacaoPagador must have at most 140 characters")
	}
	now := c.sim.now().UTC()
	location := c.location()
	code, err := c.brCode(location, cents)
	if err != nil {
		return pix.Cob{}, err
	}
	// A new txid (the common case) is one statement; a charge just
	// created has no Pix yet.
	var created paymentsdb.PaymentsSimPixCharge
	err = c.sim.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		created, err = q.SimCreateCharge(ctx, paymentsdb.SimCreateChargeParams{
			TenantID: tid, Txid: txid, HandlerID: c.r.HandlerID, Valor: req.Valor.Original, Expiracao: int32(req.Calendario.Expiracao),
			Chave: req.Chave, Solicitacao: req.SolicitacaoPagador, Location: location, CopiaECola: code, Criacao: now,
		})
		return err
	})
	if err == nil {
		return toCob(created), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return pix.Cob{}, err
	}
	// The txid exists: a retry, a revision, or a race with another PUT.
	var out pix.Cob
	err = c.sim.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		// It exists (the insert above met a committed row; charges are
		// never deleted).
		row, err := q.SimLockCharge(ctx, paymentsdb.SimLockChargeParams{TenantID: tid, Txid: txid})
		if err != nil {
			return err
		}
		if row.HandlerID != c.r.HandlerID {
			return problem(pix.ErrOperacaoInvalida, "txid %s belongs to another receiver", txid)
		}
		if row.Status != pix.StatusAtiva {
			return problem(pix.ErrOperacaoInvalida, "a cobrança %s está %s e não pode ser revisada", txid, row.Status)
		}
		if row.Valor != req.Valor.Original || int(row.Expiracao) != req.Calendario.Expiracao || row.Chave != req.Chave || row.Solicitacao != req.SolicitacaoPagador {
			// PUT on an ATIVA cob revises it (revisao + 1).
			code, err := c.brCode(row.Location, cents)
			if err != nil {
				return err
			}
			if err := q.SimReviseCharge(ctx, paymentsdb.SimReviseChargeParams{
				TenantID: tid, Txid: txid, Valor: req.Valor.Original, Expiracao: int32(req.Calendario.Expiracao), Chave: req.Chave,
				Solicitacao: req.SolicitacaoPagador, CopiaECola: code, UpdatedAt: now,
			}); err != nil {
				return err
			}
		}
		out, err = loadCob(ctx, inTx(q), tid, txid)
		return err
	})
	return out, err
}

// location is "<host>/sim/pix/qr/<uuid>", at most 77 characters (API Pix
// and BR Code 26-25).
func (c *client) location() string {
	host := c.r.LocationHost
	suffix := "/sim/pix/qr/" + uuid.NewString()
	if host == "" || len(host)+len(suffix) > brcode.MaxURLLen {
		host = "pix.sandbox.bcp.dev.br"
	}
	return host + suffix
}

func (c *client) brCode(location string, cents int64) (string, error) {
	name := brcode.NormalizeName(c.r.MerchantName)
	if name == "" {
		name = "LOJA"
	}
	city := brcode.NormalizeCity(c.r.MerchantCity)
	if city == "" {
		city = "SAO PAULO"
	}
	return brcode.Payload{URL: location, Amount: cents, MerchantName: name, MerchantCity: city}.Encode()
}

func loadCob(ctx context.Context, read reader, tid uuid.UUID, txid string) (pix.Cob, error) {
	var row paymentsdb.SimGetChargeWithPixRow
	err := read(func(q *paymentsdb.Queries) error {
		var err error
		row, err = q.SimGetChargeWithPix(ctx, paymentsdb.SimGetChargeWithPixParams{TenantID: tid, Txid: txid})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Cob{}, problem(pix.ErrCobNaoEncontrado, "cobrança %s não encontrada", txid)
	}
	if err != nil {
		return pix.Cob{}, err
	}
	cob := toCob(row.PaymentsSimPixCharge)
	var pixRows []pixJSON
	if err := json.Unmarshal(row.Pix, &pixRows); err != nil {
		return pix.Cob{}, fmt.Errorf("simpsp: charge %s: %w", txid, err)
	}
	for _, p := range pixRows {
		cob.Pix = append(cob.Pix, p.pix())
	}
	return cob, nil
}

// pixJSON and refundJSON are sim_pix and sim_pix_refunds rows as to_jsonb
// writes them (SimGetChargeWithPix, SimGetPixWithRefunds).
type pixJSON struct {
	E2eID       string       `json:"e2e_id"`
	Txid        string       `json:"txid"`
	Valor       string       `json:"valor"`
	Horario     time.Time    `json:"horario"`
	InfoPagador string       `json:"info_pagador"`
	Refunds     []refundJSON `json:"refunds"`
}

type refundJSON struct {
	ID          string     `json:"id"`
	RtrID       string     `json:"rtr_id"`
	Valor       string     `json:"valor"`
	Natureza    string     `json:"natureza"`
	Status      string     `json:"status"`
	Motivo      string     `json:"motivo"`
	Solicitacao time.Time  `json:"solicitacao"`
	Liquidacao  *time.Time `json:"liquidacao"`
}

func (p pixJSON) pix() pix.Pix {
	out := pix.Pix{EndToEndID: p.E2eID, Txid: p.Txid, Valor: p.Valor, Horario: p.Horario.UTC(), InfoPagador: p.InfoPagador}
	for _, r := range p.Refunds {
		out.Devolucoes = append(out.Devolucoes, toDevolucao(paymentsdb.PaymentsSimPixRefund{ID: r.ID, RtrID: r.RtrID, Valor: r.Valor,
			Natureza: r.Natureza, Status: r.Status, Motivo: r.Motivo, Solicitacao: r.Solicitacao, Liquidacao: r.Liquidacao}))
	}
	return out
}

// toCob is a charge as the API Pix shows it, without its Pix.
func toCob(row paymentsdb.PaymentsSimPixCharge) pix.Cob {
	cob := pix.Cob{Txid: row.Txid, Revisao: int(row.Revisao), Status: row.Status, Chave: row.Chave, SolicitacaoPagador: row.Solicitacao,
		Location: row.Location, PixCopiaECola: row.CopiaECola}
	cob.Calendario.Criacao = row.Criacao.UTC()
	cob.Calendario.Expiracao = int(row.Expiracao)
	cob.Valor.Original = row.Valor
	return cob
}

func toDevolucao(r paymentsdb.PaymentsSimPixRefund) pix.Devolucao {
	d := pix.Devolucao{ID: r.ID, RtrID: r.RtrID, Valor: r.Valor, Natureza: r.Natureza, Status: r.Status, Motivo: r.Motivo}
	d.Horario.Solicitacao = r.Solicitacao.UTC()
	if r.Liquidacao != nil {
		t := r.Liquidacao.UTC()
		d.Horario.Liquidacao = &t
	}
	return d
}

func (c *client) GetCharge(ctx context.Context, txid string) (pix.Cob, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return pix.Cob{}, err
	}
	return loadCob(ctx, c.sim.singles(ctx), tid, txid)
}

func (c *client) RemoveCharge(ctx context.Context, txid string) (pix.Cob, error) {
	var out pix.Cob
	err := c.sim.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		row, err := q.SimLockCharge(ctx, paymentsdb.SimLockChargeParams{TenantID: tid, Txid: txid})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem(pix.ErrCobNaoEncontrado, "cobrança %s não encontrada", txid)
		}
		if err != nil {
			return err
		}
		// Only an ATIVA charge can be removed; a paid one stays CONCLUIDA
		// and the caller sees it in the returned state.
		if row.Status == pix.StatusAtiva {
			if err := q.SimSetChargeStatus(ctx, paymentsdb.SimSetChargeStatusParams{TenantID: tid, Txid: txid, Status: pix.StatusRemovidaRecebedor, UpdatedAt: c.sim.now().UTC()}); err != nil {
				return err
			}
		}
		out, err = loadCob(ctx, inTx(q), tid, txid)
		return err
	})
	return out, err
}

func (c *client) GetPix(ctx context.Context, e2eid string) (pix.Pix, error) {
	// One read, as GetCharge.
	var row paymentsdb.SimGetPixWithRefundsRow
	err := c.sim.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		row, err = q.SimGetPixWithRefunds(ctx, paymentsdb.SimGetPixWithRefundsParams{TenantID: tid, E2eID: e2eid})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Pix{}, problem(pix.ErrPixNaoEncontrado, "Pix %s não encontrado", e2eid)
	}
	if err != nil {
		return pix.Pix{}, err
	}
	p := row.PaymentsSimPix
	out := pixJSON{E2eID: p.E2eID, Txid: p.Txid, Valor: p.Valor, Horario: p.Horario, InfoPagador: p.InfoPagador}
	if err := json.Unmarshal(row.Refunds, &out.Refunds); err != nil {
		return pix.Pix{}, fmt.Errorf("simpsp: Pix %s: %w", e2eid, err)
	}
	return out.pix(), nil
}

func (c *client) Refund(ctx context.Context, e2eid, id string, req pix.DevolucaoSolicitada) (pix.Devolucao, error) {
	if !pix.DevolucaoID.MatchString(id) {
		return pix.Devolucao{}, problem(pix.ErrDevolucaoInvalida, "id must match [a-zA-Z0-9]{1,35}")
	}
	cents, err := pix.ParseValor(req.Valor)
	if err != nil || cents == 0 {
		return pix.Devolucao{}, problem(pix.ErrDevolucaoInvalida, "valor must match \\d{1,10}\\.\\d{2} and be above 0.00")
	}
	natureza := req.Natureza
	if natureza == "" {
		natureza = pix.NaturezaOriginal
	}
	if natureza != pix.NaturezaOriginal && natureza != "RETIRADA" {
		return pix.Devolucao{}, problem(pix.ErrDevolucaoInvalida, "natureza %q cannot be requested by the receiver", natureza)
	}
	if len([]rune(req.Descricao)) > 140 {
		return pix.Devolucao{}, problem(pix.ErrDevolucaoInvalida, "descricao must have at most 140 characters")
	}
	now := c.sim.now().UTC()
	var out pix.Devolucao
	err = c.sim.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		// The Pix row lock serialises the refunds of one Pix.
		p, err := q.SimLockPix(ctx, paymentsdb.SimLockPixParams{TenantID: tid, E2eID: e2eid})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem(pix.ErrPixNaoEncontrado, "Pix %s não encontrado", e2eid)
		}
		if err != nil {
			return err
		}
		if existing, err := q.SimGetRefund(ctx, paymentsdb.SimGetRefundParams{TenantID: tid, E2eID: e2eid, ID: id}); err == nil {
			if existing.Valor != req.Valor {
				return problem(pix.ErrDevolucaoInvalida, "devolução %s já existe com outro valor", id)
			}
			out = toDevolucao(existing)
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		paid, _ := pix.ParseValor(p.Valor)
		refunds, err := q.SimListRefunds(ctx, paymentsdb.SimListRefundsParams{TenantID: tid, E2eID: e2eid})
		if err != nil {
			return err
		}
		sum := cents
		for _, r := range refunds {
			if r.Status != pix.DevolucaoNaoRealizado {
				v, _ := pix.ParseValor(r.Valor)
				sum += v
			}
		}
		if sum > paid {
			return problem(pix.ErrDevolucaoInvalida, "a soma das devoluções (%s) excede o valor do Pix (%s)", mustValor(sum), p.Valor)
		}
		if now.Sub(p.Horario) > refundWindow {
			return problem(pix.ErrDevolucaoInvalida, "devoluções são permitidas até 90 dias após o Pix")
		}
		// The simulated SPI settles at once.
		row := paymentsdb.SimInsertRefundParams{TenantID: tid, E2eID: e2eid, ID: id, RtrID: newE2E("D", now), Valor: req.Valor,
			Natureza: natureza, Descricao: req.Descricao, Status: pix.DevolucaoDevolvido, Solicitacao: now, Liquidacao: &now}
		if err := q.SimInsertRefund(ctx, row); err != nil {
			return err
		}
		r, err := q.SimGetRefund(ctx, paymentsdb.SimGetRefundParams{TenantID: tid, E2eID: e2eid, ID: id})
		out = toDevolucao(r)
		return err
	})
	return out, err
}

func mustValor(cents int64) string {
	s, err := pix.FormatValor(cents)
	if err != nil {
		return strconv.FormatInt(cents, 10)
	}
	return s
}

func (c *client) GetRefund(ctx context.Context, e2eid, id string) (pix.Devolucao, error) {
	var out pix.Devolucao
	err := c.sim.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		r, err := q.SimGetRefund(ctx, paymentsdb.SimGetRefundParams{TenantID: tid, E2eID: e2eid, ID: id})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem(pix.ErrDevolucaoNaoEncontrada, "devolução %s não encontrada", id)
		}
		out = toDevolucao(r)
		return err
	})
	return out, err
}

func (c *client) EnsureWebhook(ctx context.Context, chave, url string) error {
	return c.sim.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		return q.SimUpsertWebhook(ctx, paymentsdb.SimUpsertWebhookParams{TenantID: tid, HandlerID: c.r.HandlerID, Chave: chave, Url: url})
	})
}

// AuthenticateWebhook checks X-Sim-Signature: a timestamp within MaxSkew of
// now and an HMAC-SHA256 of "t.body" under the receiver's secret.
func (c *client) AuthenticateWebhook(_ context.Context, w pix.Webhook) error {
	return Verify(c.r.Secret, w.Header.Get(SignatureHeader), w.Body, c.sim.now())
}

// ListPix is not simulated here (the wire simulator replaces this one).
func (c *client) ListPix(context.Context, time.Time, time.Time) ([]pix.Pix, error) {
	return nil, errors.New("simpsp: GET /pix is not simulated")
}

// Sign returns the X-Sim-Signature value for body at time t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a signature header made by Sign.
func Verify(secret []byte, header string, body []byte, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret configured", pix.ErrUnauthenticated)
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: malformed %s", pix.ErrUnauthenticated, SignatureHeader)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("%w: signature timestamp outside ±%s", pix.ErrUnauthenticated, MaxSkew)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if subtle.ConstantTimeCompare(s, want) == 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: signature does not match", pix.ErrUnauthenticated)
}

// newE2E makes an id shaped like an endToEndId (prefix "E") or a refund
// rtrId ("D"): prefix + ISPB + yyyyMMddHHmm + 11 alphanumerics = 32.
func newE2E(prefix string, t time.Time) string {
	return prefix + ispb + t.UTC().Format("200601021504") + rand.Text()[:11]
}

// ErrNotActive: the charge cannot be paid (paid, removed or unknown).
var ErrNotActive = errors.New("simpsp: charge is not active")

// Pay is the payer's side (sandbox only): it pays an ATIVA charge with
// cents (which may differ from the charged amount, to simulate a wrong
// payment; the real SPI forbids it when modalidadeAlteracao is 0), marks
// it CONCLUIDA and queues the webhook in the same transaction.
func (s *Sim) Pay(ctx context.Context, handlerID, txid string, cents int64) (pix.Pix, error) {
	valor, err := pix.FormatValor(cents)
	if err != nil {
		return pix.Pix{}, err
	}
	if s.jobs == nil {
		return pix.Pix{}, errors.New("simpsp: no job client")
	}
	now := s.now().UTC()
	e2e := newE2E("E", now)
	var out pix.Pix
	err = s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		row, err := q.SimLockCharge(ctx, paymentsdb.SimLockChargeParams{TenantID: tid, Txid: txid})
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (row.Status != pix.StatusAtiva || row.HandlerID != handlerID)) {
			return ErrNotActive
		}
		if err != nil {
			return err
		}
		if err := q.SimInsertPix(ctx, paymentsdb.SimInsertPixParams{TenantID: tid, E2eID: e2e, Txid: txid, HandlerID: handlerID,
			Valor: valor, Horario: now, InfoPagador: "Pagamento simulado"}); err != nil {
			return err
		}
		if err := q.SimSetChargeStatus(ctx, paymentsdb.SimSetChargeStatusParams{TenantID: tid, Txid: txid, Status: pix.StatusConcluida, UpdatedAt: now}); err != nil {
			return err
		}
		out = pix.Pix{EndToEndID: e2e, Txid: txid, Valor: valor, Horario: now, InfoPagador: "Pagamento simulado"}
		return s.enqueue(ctx, tx, tid, handlerID, row.Chave, []string{e2e})
	})
	return out, err
}

// Notify queues one more webhook for Pix already paid: PSPs deliver at
// least once, so tests use it to deliver a duplicate.
func (s *Sim) Notify(ctx context.Context, handlerID string, e2eids ...string) error {
	if len(e2eids) == 0 {
		return nil
	}
	return s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		p, err := q.SimGetPix(ctx, paymentsdb.SimGetPixParams{TenantID: tid, E2eID: e2eids[0]})
		if err != nil {
			return err
		}
		ch, err := q.SimGetCharge(ctx, paymentsdb.SimGetChargeParams{TenantID: tid, Txid: p.Txid})
		if err != nil {
			return err
		}
		return s.enqueue(ctx, tx, tid, handlerID, ch.Chave, e2eids)
	})
}

func (s *Sim) enqueue(ctx context.Context, tx pgx.Tx, tid uuid.UUID, handlerID, chave string, e2eids []string) error {
	_, err := jobs.InsertTx(ctx, s.jobs, tx, DeliverArgs{TenantID: tid, HandlerID: handlerID, Chave: chave, E2EIDs: e2eids}, nil)
	return err
}
