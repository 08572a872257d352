package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/brcode"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// pspForStart is the PSP client that creates a handler's charge, and
// the Pix key the charge is for. It makes sure the handler has its
// webhook hook and that the PSP posts to it (PUT /webhook/{chave}),
// registering again whenever the URL, the key or the PSP settings change.
func (s *Service) pspForStart(ctx context.Context, h handler, baseURL string) (pix.PSP, string, error) {
	tid := h.Tenant.GetId()
	m, err := s.merchant(ctx, tid)
	if err != nil {
		return nil, "", err
	}
	c, err := s.connectionOf(ctx, h, m.secrets[h.ID], "")
	if err != nil {
		return nil, "", err
	}
	psp, err := s.pixClient(ctx, tid, h.ID, c)
	if err != nil {
		return nil, "", err
	}
	chave := c.chave
	if chave == "" {
		chave = h.Config.PixKey
	}
	if chave == "" {
		return nil, "", &apipix.ConfigError{Code: "missing_pix_key", Msg: "configure a chave Pix do recebedor (pix_key) no handler " + h.ID}
	}
	hook, err := s.ensureHook(ctx, h.ID, h.Environment)
	if err != nil {
		return nil, "", err
	}
	// The resolve sweep lists the account's Pix while it is in use: a
	// write at most once a day per handler keeps it so.
	if now := s.now(); hook.ListUntil == nil || hook.ListUntil.Before(now.Add(pixListFor-24*time.Hour)) {
		until := now.Add(pixListFor)
		if err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
			return q.KeepListing(ctx, paymentsdb.KeepListingParams{TenantID: tid, ID: hook.ID, ListUntil: &until})
		}); err != nil {
			return nil, "", err
		}
	}
	webhook := s.webhookURL(baseURL, hook.ID)
	// What was registered, and where: a new URL, key or PSP account
	// registers again.
	registered := webhook + " " + chave + " " + settingsKey(tid, h.ID, c.settings.PSP)
	if hook.RegisteredUrl != registered {
		if err := psp.EnsureWebhook(ctx, chave, webhook); err != nil {
			return nil, "", err
		}
		err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
			return q.SetHookURL(ctx, paymentsdb.SetHookURLParams{TenantID: tid, ID: hook.ID, RegisteredUrl: registered})
		})
		if err != nil {
			return nil, "", err
		}
	}
	return psp, chave, nil
}

// webhookURL is where the PSP posts a hook's notifications (it appends
// "/pix"): the merchant's own host, on the listener that asks for the
// PSP's client certificate.
func (s *Service) webhookURL(merchantOrigin, hookID string) string {
	origin := merchantOrigin
	if s.opts.WebhookOrigin != nil {
		origin = s.opts.WebhookOrigin(merchantOrigin)
	}
	return strings.TrimRight(origin, "/") + "/webhooks/pix/" + hookID
}

// pspUnusable stores an attempt that cannot start because the handler's
// PSP settings are wrong or missing: payment_failed with what the agent
// may tell the buyer, and an alert that tells the merchant what to fix.
func (s *Service) pspUnusable(ctx context.Context, p paymentsdb.InsertAttemptParams, h handler, err error, m *paymentsv1.StartPaymentRequest, hash []byte) (attempt, error) {
	d := diagnose(err)
	s.log.ErrorContext(ctx, "payments: Pix handler cannot reach its PSP", "handler_id", h.ID, "code", d.Code, "err", err.Error())
	s.metrics.pspUnusable.WithLabelValues("pix", d.Code).Inc()
	if d.Config {
		s.alertConfig(ctx, h.ID, "psp_config", "Pix ("+h.ID+"): "+d.Merchant+". Pagamentos por Pix falham até a configuração ser corrigida (Pagamentos → Testar conexão).")
	}
	return s.insertFailed(ctx, p, failed("%s", d.Buyer), m, hash)
}

// diagnose explains why a handler cannot reach its PSP or processor.
func diagnose(err error) apipix.Diagnosis {
	var nc *errNotConfigured
	switch {
	case errors.As(err, &nc), errors.Is(err, errNoSandbox):
		return apipix.Diagnosis{Code: "not_configured", Config: true,
			Merchant: "o handler " + handlerOfErr(err) + " não tem PSP configurado: informe as credenciais do PSP ou do processador",
			Buyer:    "O pagamento está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento."}
	case errors.Is(err, card.ErrCredentials):
		return apipix.Diagnosis{Code: "invalid_key", Merchant: "o processador recusou a chave secreta configurada: " + err.Error(), Config: true,
			Buyer: "O pagamento com cartão está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento."}
	}
	return apipix.Diagnose(err)
}

func handlerOfErr(err error) string {
	var nc *errNotConfigured
	if errors.As(err, &nc) {
		return nc.handlerID
	}
	return "de sandbox (sem simulador de PSP)"
}

// alertConfig records a merchant alert about a handler's configuration.
func (s *Service) alertConfig(ctx context.Context, handlerID, kind, msg string) {
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		return q.InsertAlert(ctx, paymentsdb.InsertAlertParams{TenantID: tid, ID: ids.New("alr"), Kind: kind, Message: msg})
	})
	if err != nil {
		s.log.ErrorContext(ctx, "payments: alert not recorded", "handler_id", handlerID, "kind", kind, "err", err.Error())
		return
	}
	s.metrics.alerts.WithLabelValues(kind).Inc()
}

// pspForHandler is the PSP client for follow-up calls on a handler's
// charges made in env ("" for the handler's current environment), and
// the handler's hook (receipts name it).
func (s *Service) pspForHandler(ctx context.Context, handlerID, env string) (pix.PSP, paymentsdb.PaymentsHook, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, paymentsdb.PaymentsHook{}, err
	}
	hook, err := s.hookByHandler(ctx, handlerID)
	if err != nil {
		return nil, hook, err
	}
	psp, _, err := s.pixOf(ctx, tid.String(), handlerID, env)
	return psp, hook, err
}

func (s *Service) startPix(ctx context.Context, p paymentsdb.InsertAttemptParams, h handler, m *paymentsv1.StartPaymentRequest, hash []byte) (attempt, error) {
	psp, chave, err := s.pspForStart(ctx, h, m.GetBaseUrl())
	if err != nil {
		if unusable(err) {
			return s.pspUnusable(ctx, p, h, err, m, hash)
		}
		return attempt{}, err
	}
	lifetime := h.Config.ExpirationSeconds
	if lifetime <= 0 {
		lifetime = defaultPixExpiration
	}
	lifetime = min(lifetime, maxPixExpiration)
	expires := s.now().UTC().Truncate(time.Second).Add(time.Duration(lifetime) * time.Second)
	txid := newTxid() // stored before the PSP sees it: PUT /cob/{txid} is then retry-safe
	// The resolve sweep polls the PSP from resolve_after on, every
	// pollEvery, and expires the attempt at expires_at (pixDue): the
	// insert alone, one statement, instead of a transaction with two jobs.
	due := earlier(s.now().Add(pollEvery), expires)
	p.Status, p.Txid, p.ExpiresAt, p.ResolveAfter = stPending, &txid, &expires, &due
	p.Owner = s.ownerArg() // its creation is resumed at once if this process dies (recover.go)
	a, existed, err := s.insertAttempt(ctx, p, nil, nil)
	if err != nil {
		return attempt{}, err
	}
	if existed {
		return s.replay(ctx, a, m, hash)
	}
	return s.createCharge(ctx, a, psp, chave)
}

// unusable says an error means the handler cannot reach its PSP now (its
// settings, or the PSP itself), as opposed to our own storage failing.
func unusable(err error) bool {
	var ce *apipix.ConfigError
	var te *apipix.TransportError
	var p *pix.Problem
	var nc *errNotConfigured
	return errors.As(err, &ce) || errors.As(err, &te) || errors.As(err, &p) || errors.As(err, &nc) || errors.Is(err, errNoSandbox)
}

type pixDisplay struct {
	Pix pixDisplayBody `json:"pix"`
}

type pixDisplayBody struct {
	CopiaECola string `json:"copia_e_cola"`
	QRPngURL   string `json:"qr_png_url"`
	QRSvgURL   string `json:"qr_svg_url"`
	Txid       string `json:"txid"`
	Amount     string `json:"amount"`
	ExpiresAt  string `json:"expires_at"`
	// For the hosted checkout page: the attempt to poll or (sandbox)
	// simulate, and whether the charge is a sandbox one.
	AttemptID   string `json:"attempt_id"`
	Environment string `json:"environment"`
}

// createCharge creates (or, on a retry, re-puts) the attempt's charge at
// the PSP and stores what the buyer needs to pay it.
func (s *Service) createCharge(ctx context.Context, a attempt, psp pix.PSP, chave string) (attempt, error) {
	txid := *a.Txid
	valor, err := pix.FormatValor(a.Amount)
	if err != nil {
		return s.failPending(ctx, a.ID, failed("O valor %s está acima do limite de um Pix.", money.FormatBRL(a.Amount)), false)
	}
	var req pix.CobSolicitada
	// The charge lives exactly as long as the attempt (at least 1 s).
	req.Calendario.Expiracao = max(1, int(math.Ceil(a.ExpiresAt.Sub(s.now()).Seconds())))
	req.Valor.Original = valor
	req.Chave = chave
	req.SolicitacaoPagador = "Pedido " + a.CheckoutID
	if len(req.SolicitacaoPagador) > 140 {
		req.SolicitacaoPagador = req.SolicitacaoPagador[:140]
	}
	// Bounded, so that a cancel can tell when no creator can still be
	// making this charge appear (stop, creationMayBeUnderway).
	cctx, cancel := context.WithTimeout(ctx, pixCreateTimeout)
	cob, err := psp.CreateCharge(cctx, txid, req)
	cancel()
	if err == nil {
		// A PSP's code is outside input: check it before showing it.
		if p, perr := brcode.Parse(cob.PixCopiaECola); perr != nil || (p.Amount != 0 && p.Amount != a.Amount) {
			err = fmt.Errorf("PSP returned an invalid BR Code: %v", perr)
		}
	}
	if err != nil {
		d := diagnose(err)
		s.log.WarnContext(ctx, "payments: Pix charge creation failed", "attempt_id", a.ID, "txid", txid, "code", d.Code, "err", err.Error())
		if d.Config {
			s.alertConfig(ctx, a.HandlerID, "psp_config", "Pix ("+a.HandlerID+"): "+d.Merchant+". Pagamentos por Pix falham até a configuração ser corrigida (Pagamentos → Testar conexão).")
		}
		out, ferr := s.failPending(ctx, a.ID, failed("%s", d.Buyer), false)
		// The PSP may have created it before failing: make sure nobody can pay it.
		s.removeCreated(ctx, a.ID, psp, txid)
		return out, ferr
	}
	d := pixDisplay{Pix: pixDisplayBody{
		CopiaECola: cob.PixCopiaECola, QRPngURL: a.BaseUrl + "/pix/qr/" + a.ID + ".png", QRSvgURL: a.BaseUrl + "/pix/qr/" + a.ID + ".svg",
		Txid: txid, Amount: valor, ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339), AttemptID: a.ID, Environment: a.Environment,
	}}
	display, err := json.Marshal(d)
	if err != nil {
		return attempt{}, err
	}
	// a is the attempt as inserted: unless it changed meanwhile (a
	// cancel), the display is one compare-and-swap statement.
	out, err := s.transitionKnown(ctx, &a, a.ID, false, func(x *attempt) bool {
		if x.Status != stPending || compactJSON(x.Display) != "{}" {
			return false
		}
		x.Display = display
		return true
	})
	if err == nil && out.Status != stPending && out.Status != stSucceeded {
		// Canceled while the charge was being created: remove it.
		s.removeCreated(ctx, a.ID, psp, txid)
	}
	return out, err
}

// pixCreateTimeout bounds a creator's PUT /cob/{txid} with its retries
// (createCharge); pixCreateWindow is how long after an attempt's insert
// its first creator may still make the charge appear at the PSP: the
// bound, and a margin for a request the PSP applies after its sender gave
// up, and for the database's clock against this process's.
const (
	pixCreateTimeout = 30 * time.Second
	pixCreateWindow  = pixCreateTimeout + 15*time.Second
)

// creationMayBeUnderway says a pending Pix attempt's charge may still be
// on its way to the PSP: its creation is not recorded (display '{}') and
// its first creator may still be working. A PSP that does not know the
// charge then does not mean it was never created.
func (s *Service) creationMayBeUnderway(a attempt) bool {
	return a.Status == stPending && compactJSON(a.Display) == "{}" && s.now().Before(a.CreatedAt.Add(pixCreateWindow))
}

// removeCreated removes a charge created for an attempt that ended
// meanwhile (or whose creation failed). If the PSP does not confirm, the
// resolve sweep takes the attempt at once (an ended Pix attempt is taken
// once more to end its charge, sweep.go) instead of at its next poll.
func (s *Service) removeCreated(ctx context.Context, attemptID string, psp pix.PSP, txid string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := psp.RemoveCharge(ctx, txid); err != nil && !errors.Is(err, pix.ErrCobNaoEncontrado) {
		s.log.WarnContext(ctx, "payments: Pix charge of an ended attempt not removed; the resolve sweep removes it", "attempt_id", attemptID, "txid", txid, "err", err.Error())
		s.resolveAt(ctx, attemptID, s.now())
	}
}

// pixDue is the resolve sweep's turn at a pending Pix attempt (sweep.go),
// its safety net for webhooks that never arrive: from expires_at on it
// removes the charge (a payment the PSP reports wins), before that it
// asks the PSP (poll). It says when to look again (nil: no more).
func (s *Service) pixDue(ctx context.Context, a attempt) (*time.Time, error) {
	if a.Status != stPending || a.Txid == nil || a.ExpiresAt == nil {
		return nil, nil
	}
	if !s.now().Before(*a.ExpiresAt) {
		return nil, s.removeCharge(ctx, a, stExpired, true)
	}
	if moved, err := s.pollOnce(ctx, a); err != nil || moved {
		return nil, err
	}
	next := earlier(s.now().Add(pollEvery), *a.ExpiresAt)
	return &next, nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// expire ran at the attempt's expiry (expireArgs, inserted with each Pix
// attempt before the resolve sweep took that over): remove the charge at
// the PSP first; if the PSP says it was paid, the payment wins.
func (s *Service) expire(ctx context.Context, id string) error {
	a, err := s.getAttempt(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Txid == nil {
		return nil
	}
	if a.Status == stFailed || a.Status == stCanceled {
		// Belt and braces: a charge created despite an error is removed.
		if psp, _, err := s.pspForHandler(ctx, a.HandlerID, a.Environment); err == nil {
			_, _ = psp.RemoveCharge(ctx, *a.Txid)
		}
		return nil
	}
	if a.Status != stPending {
		return nil
	}
	if wait := a.ExpiresAt.Sub(s.now()); wait > 0 {
		return river.JobSnooze(wait)
	}
	return s.removeCharge(ctx, a, stExpired, true)
}

// poll was the job (pollArgs) that asked the PSP about a pending charge
// every pollEvery until the expiry job took over, inserted with each Pix
// attempt before the resolve sweep did both (pixDue).
func (s *Service) poll(ctx context.Context, id string) error {
	a, err := s.getAttempt(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil || a.Status != stPending || a.Txid == nil || !s.now().Before(*a.ExpiresAt) {
		return err
	}
	if _, err := s.pollOnce(ctx, a); err != nil {
		return err
	}
	return river.JobSnooze(min(pollEvery, a.ExpiresAt.Sub(s.now())))
}

// pollOnce asks the PSP about a pending charge (GET /cob/{txid}): a
// payment whose webhook was lost is applied like a notified one; a charge
// the PSP removed fails the attempt; otherwise nothing changes. It says
// whether the PSP's answer decided the attempt.
func (s *Service) pollOnce(ctx context.Context, a attempt) (bool, error) {
	psp, hook, err := s.pspForHandler(ctx, a.HandlerID, a.Environment)
	if err != nil {
		return false, err
	}
	cob, err := psp.GetCharge(ctx, *a.Txid)
	switch {
	case errors.Is(err, pix.ErrCobNaoEncontrado):
		// Not created yet (a retried StartPayment will): ask again later.
	case err != nil:
		return false, err
	case cob.Status == pix.StatusConcluida:
		for _, p := range cob.Pix {
			if err := s.decidePix(ctx, a.HandlerID, hook.ID, p, a.ID, false); err != nil {
				return false, err
			}
		}
		return len(cob.Pix) > 0, nil
	case cob.Status == pix.StatusRemovidaPSP:
		_, err := s.failPending(ctx, a.ID, failed("A cobrança Pix foi cancelada pelo banco recebedor; tente novamente."), true)
		return err == nil, err
	}
	return false, nil
}

// removeCharge removes an attempt's charge and, if the attempt is still
// pending, moves it to status (expired or canceled) — unless the PSP
// reports it paid, in which case the Pix is applied (completion wins; to
// an attempt that already ended, it is refunded).
func (s *Service) removeCharge(ctx context.Context, a attempt, status string, notify bool) error {
	return s.removeChargeOf(ctx, a, status, notify, false)
}

// errMayBeUnderway: the PSP does not know the charge, and its creator may
// still be putting it there (creationMayBeUnderway); nothing was changed.
var errMayBeUnderway = errors.New("payments: the Pix charge may still be being created")

// removeChargeOf is removeCharge; with fenceCreation (a cancel), a charge
// the PSP does not know while its creation may be underway is not taken
// as never created: errMayBeUnderway, and the attempt stays as it was.
func (s *Service) removeChargeOf(ctx context.Context, a attempt, status string, notify, fenceCreation bool) error {
	psp, hook, err := s.pspForHandler(ctx, a.HandlerID, a.Environment)
	if err != nil {
		return err
	}
	cob, err := psp.RemoveCharge(ctx, *a.Txid)
	if errors.Is(err, pix.ErrCobNaoEncontrado) {
		if fenceCreation && s.creationMayBeUnderway(a) {
			return errMayBeUnderway
		}
		cob.Status = pix.StatusRemovidaRecebedor // never created
	} else if err != nil {
		return err
	}
	if cob.Status == pix.StatusConcluida {
		for _, p := range cob.Pix {
			if err := s.decidePix(ctx, a.HandlerID, hook.ID, p, a.ID, false); err != nil {
				return err
			}
		}
		if len(cob.Pix) > 0 {
			return nil
		}
	}
	_, err = s.transition(ctx, a.ID, notify, func(x *attempt) bool {
		if x.Status != stPending {
			return false
		}
		x.Status = status
		return true
	})
	return err
}

// reconcile decides what a stored Pix receipt does, from the PSP's answer
// only: GET /cob/{txid} must show the charge CONCLUIDA with this Pix.
// jobAttempt numbers the tries from 1 (the webhook's request, then the
// resolve sweep's; or a reconcile job queued before the sweep did this).
func (s *Service) reconcile(ctx context.Context, e2e string, jobAttempt int) error {
	return s.reconcileWith(ctx, e2e, jobAttempt, nil)
}

// webhookPSP is the PSP client a webhook was authenticated with, for the
// reconciliation of what it stored (one hook read fewer).
type webhookPSP struct {
	handlerID string
	psp       pix.PSP
}

func (s *Service) reconcileWith(ctx context.Context, e2e string, jobAttempt int, known *webhookPSP) error {
	// The receipt and the attempt its txid names, in one read.
	var row paymentsdb.GetReceiptForReconcileRow
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		row, err = q.GetReceiptForReconcile(ctx, paymentsdb.GetReceiptForReconcileParams{TenantID: tid, E2eID: e2e})
		return err
	})
	if isNotFound(err) {
		return nil
	}
	rec := row.PaymentsPixReceipt
	if err != nil || rec.Status != "received" {
		return err
	}
	var psp pix.PSP
	if known != nil && known.handlerID == rec.HandlerID {
		psp = known.psp
	} else if psp, _, err = s.pspForHandler(ctx, rec.HandlerID, ""); err != nil {
		return err
	}
	if row.ChargeAttemptID == nil {
		// A txid that is none of our charges: the PSP notifies every Pix
		// with a txid on the key, and a merchant's account may take Pix
		// from its other channels (its own cobs, an ERP). Not ours to
		// keep or to return: it is noted, and the merchant told.
		return s.unconfirmed(ctx, rec, "o txid "+strconv.Quote(rec.Txid)+" não é de uma cobrança desta loja na plataforma; nada foi feito (use uma chave Pix só para a plataforma)")
	}
	cob, err := psp.GetCharge(ctx, rec.Txid)
	if err != nil && !errors.Is(err, pix.ErrCobNaoEncontrado) {
		return err
	}
	for _, p := range cob.Pix {
		if p.EndToEndID == e2e && cob.Status == pix.StatusConcluida {
			return s.decidePix(ctx, rec.HandlerID, rec.HookID, p, *row.ChargeAttemptID, true)
		}
	}
	// The notification names a payment the PSP does not show (yet): retry
	// a few times for PSPs that notify before their API catches up.
	if jobAttempt < reconcileTries {
		return fmt.Errorf("payments: PSP does not confirm Pix %s on charge %s yet", e2e, rec.Txid)
	}
	return s.unconfirmed(ctx, rec, "o PSP não confirma este Pix na cobrança "+rec.Txid)
}

func (s *Service) unconfirmed(ctx context.Context, rec paymentsdb.PaymentsPixReceipt, why string) error {
	return s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		if err := q.SetReceiptStatus(ctx, paymentsdb.SetReceiptStatusParams{TenantID: tid, E2eID: rec.E2eID, Status: "unconfirmed", Note: why}); err != nil {
			return err
		}
		return q.InsertAlert(ctx, paymentsdb.InsertAlertParams{TenantID: tid, ID: ids.New("alr"), Kind: "pix_unconfirmed",
			Message: fmt.Sprintf("Notificação de Pix %s (%s) não confirmada: %s. Nada foi alterado.", rec.E2eID, money.FormatBRL(rec.Amount), why), E2eID: rec.E2eID})
	})
}

// decidePix applies one Pix the PSP confirmed (p comes from the PSP, not
// from a notification) to its attempt. receiptStored says the caller read
// p's receipt row, so it exists. In one transaction holding the attempt's row lock, exactly once
// per endToEndId (the receipt row records the decision):
//   - pending attempt, same amount, paid by expires_at → SUCCEEDED, and
//     the checkout service is told (announce, in the same transaction);
//   - the attempt's own Pix seen again → nothing;
//   - anything else (wrong amount, paid after expiry, attempt no longer
//     pending) → the Pix is refunded in full (natureza
//     ORIGINAL, devolução id derived from the endToEndId so it is minted
//     once) and the merchant gets an alert; a pending attempt becomes
//     FAILED (wrong amount) or EXPIRED (late), and the checkout is told.
func (s *Service) decidePix(ctx context.Context, handlerID, hookID string, p pix.Pix, attemptID string, receiptStored bool) error {
	paid, err := pix.ParseValor(p.Valor)
	if err != nil {
		return fmt.Errorf("payments: PSP value for Pix %s: %w", p.EndToEndID, err)
	}
	err = s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		// Lock order: attempt, then receipt (as everywhere).
		a, err := q.LockAttempt(ctx, paymentsdb.LockAttemptParams{TenantID: tid, ID: attemptID})
		if err != nil {
			return err
		}
		// The PSP may tell us (a poll) before its webhook does; a
		// reconciliation starts from the stored receipt and skips this.
		if !receiptStored {
			raw, err := json.Marshal(p)
			if err != nil {
				return err
			}
			if _, err := q.InsertReceipt(ctx, paymentsdb.InsertReceiptParams{TenantID: tid, E2eID: p.EndToEndID, HookID: hookID,
				HandlerID: handlerID, Txid: p.Txid, Amount: paid, Horario: p.Horario, Raw: raw}); err != nil {
				return err
			}
		}
		rec, err := q.LockReceipt(ctx, paymentsdb.LockReceiptParams{TenantID: tid, E2eID: p.EndToEndID})
		if err != nil {
			return err
		}
		if rec.Status != "received" {
			return nil // decided before
		}
		matched := func() error {
			return q.SetReceiptStatus(ctx, paymentsdb.SetReceiptStatusParams{TenantID: tid, E2eID: p.EndToEndID, Status: "matched", AttemptID: &a.ID})
		}
		late := a.ExpiresAt != nil && p.Horario.After(*a.ExpiresAt)
		switch {
		case a.Status == stPending && paid == a.Amount && !late:
			a.Status, a.E2eID = stSucceeded, &p.EndToEndID
			if a, err = s.update(ctx, q, stPending, a); err != nil {
				return err
			}
			if err := matched(); err != nil {
				return err
			}
			return s.announce(ctx, tx, a)
		case a.E2eID != nil && *a.E2eID == p.EndToEndID:
			return matched()
		}
		var kind, msg string
		switch {
		case paid != a.Amount:
			kind = "pix_wrong_amount"
			msg = fmt.Sprintf("Pix de %s recebido para o pagamento %s, que cobrava %s: valor diferente do cobrado; devolvido automaticamente.", money.FormatBRL(paid), a.ID, money.FormatBRL(a.Amount))
		case late:
			kind = "pix_paid_after_expiry"
			msg = fmt.Sprintf("Pix de %s recebido em %s para o pagamento %s, que venceu em %s; devolvido automaticamente.",
				money.FormatBRL(paid), p.Horario.In(brt).Format("02/01/2006 15:04:05"), a.ID, a.ExpiresAt.In(brt).Format("02/01/2006 15:04:05"))
		default:
			kind = "pix_attempt_not_pending"
			msg = fmt.Sprintf("Pix de %s recebido para o pagamento %s, que já estava %s; devolvido automaticamente.", money.FormatBRL(paid), a.ID, statusPT[a.Status])
		}
		if a.Status == stPending {
			if kind == "pix_wrong_amount" {
				a.Status, a.FailureCode = stFailed, codePaymentFailed
				a.FailureMessage = fmt.Sprintf("O Pix recebido (%s) não corresponde ao valor cobrado (%s) e será devolvido.", money.FormatBRL(paid), money.FormatBRL(a.Amount))
			} else {
				a.Status = stExpired
			}
			if a, err = s.update(ctx, q, stPending, a); err != nil {
				return err
			}
			if err := s.announce(ctx, tx, a); err != nil {
				return err
			}
		}
		return s.refundOrphan(ctx, q, tx, tid, handlerID, p, paid, a.ID, kind, msg)
	})
	return err
}

var statusPT = map[string]string{
	stPending: "pendente", stSucceeded: "pago", stFailed: "recusado", stExpired: "expirado", stCanceled: "cancelado",
	stRequiresAction: "aguardando ação do comprador", stRefunded: "reembolsado", stPartRefunded: "parcialmente reembolsado",
}

// refundOrphan records a Pix of one of our charges that pays nothing
// (wrong amount, late, its attempt ended): receipt orphan, a full
// automatic refund (executed by its job) and a merchant alert.
func (s *Service) refundOrphan(ctx context.Context, q *paymentsdb.Queries, tx pgx.Tx, tid uuid.UUID, handlerID string, p pix.Pix, paid int64, attemptID string, kind, msg string) error {
	if err := q.SetReceiptStatus(ctx, paymentsdb.SetReceiptStatusParams{TenantID: tid, E2eID: p.EndToEndID, Status: "orphan", AttemptID: &attemptID, Note: kind}); err != nil {
		return err
	}
	refundID := "auto_" + p.EndToEndID
	e2e := p.EndToEndID
	if _, err := q.InsertRefund(ctx, paymentsdb.InsertRefundParams{TenantID: tid, ID: refundID, AttemptID: &attemptID, Kind: "automatic",
		HandlerID: handlerID, E2eID: &e2e, PspRefundID: "R" + p.EndToEndID, Amount: paid, Reason: "Devolução automática: " + kind}); err != nil {
		return err
	}
	aid := attemptID
	if err := q.InsertAlert(ctx, paymentsdb.InsertAlertParams{TenantID: tid, ID: ids.New("alr"), Kind: kind, Message: msg, AttemptID: aid, E2eID: e2e}); err != nil {
		return err
	}
	s.metrics.alerts.WithLabelValues(kind).Inc()
	s.metrics.autoRefunds.WithLabelValues(kind).Inc()
	s.log.WarnContext(ctx, "payments: Pix refunded automatically", "tenant_id", tid, "e2e_id", e2e, "attempt_id", aid, "kind", kind)
	return s.insertJob(ctx, tx, refundArgs{TenantID: tid, RefundID: refundID}, nil)
}

// simulatePixPayment pays a sandbox charge at the PSP simulator, as the
// payer's bank would; the simulator then notifies the webhook like a PSP.
func (s *Service) simulatePixPayment(ctx context.Context, m *paymentsv1.SimulatePixPaymentRequest) (attempt, error) {
	a, err := s.getAttempt(ctx, m.GetAttemptId())
	if err != nil {
		return a, err
	}
	if a.Txid == nil {
		return a, apperr.New(apperr.KindFailedPrecondition, "not_pix", "payment attempt %s is not a Pix charge", a.ID)
	}
	if a.Environment != "sandbox" {
		return a, apperr.New(apperr.KindFailedPrecondition, "simulation_not_allowed", "payments can only be simulated with sandbox handlers")
	}
	amount := m.GetAmount()
	if amount < 0 || amount > brcode.MaxAmount {
		return a, apperr.Invalid("amount", "invalid_amount", "amount must be 0 (the charged amount) or a positive number of centavos")
	}
	if amount == 0 {
		amount = a.Amount
	}
	_, c, err := s.pixOf(ctx, a.TenantID.String(), a.HandlerID, a.Environment)
	if err != nil {
		return a, err
	}
	if !c.sandbox {
		return a, apperr.New(apperr.KindFailedPrecondition, "simulation_not_allowed", "only charges on the PSP simulator's sandbox accounts can be paid by simulation")
	}
	var se *simcontrol.Error
	if err := s.simPay(ctx, c.clientID, *a.Txid, amount); errors.As(err, &se) && (se.Status == http.StatusConflict || se.Status == http.StatusNotFound) {
		return a, apperr.New(apperr.KindFailedPrecondition, "charge_not_active", "esta cobrança Pix não está mais ativa")
	} else if err != nil {
		return a, err
	}
	// The attempt as it was paid: the PSP's webhook, a job, settles it
	// moments later (reading it again here would show the same).
	return a, nil
}
