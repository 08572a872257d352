package payments

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/payattempt"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// tokenSkew is the clock skew allowed on delegated tokens' exp/nbf/iat.
const tokenSkew = time.Minute

// msgRawCard is the answer to any raw card number: we are not a card vault.
const msgRawCard = "Números de cartão não são aceitos; envie um token de pagamento delegado (credential.type \"token\")."

// verifiedToken is what a delegated credential authorises, after checks.
type verifiedToken struct {
	processorToken string
	tokenHash      [32]byte
	scenario       string
	brand          string
	lastDigits     string
	jtiHash        []byte // JWS only: single use until jtiUntil
	jtiUntil       time.Time
}

// verifyCard checks a delegated card instrument: a token credential only
// (never a card number), then either a JWS bound to this merchant,
// checkout, amount and currency, or an opaque processor token.
func (s *Service) verifyCard(h handler, in instrument, m *paymentsv1.StartPaymentRequest) (verifiedToken, *failure) {
	var v verifiedToken
	if hasRawCard(in.raw) {
		return v, failed(msgRawCard)
	}
	var cred struct {
		Type  string `json:"type"`
		Token string `json:"token"`
	}
	if len(in.Credential) == 0 || json.Unmarshal(in.Credential, &cred) != nil || cred.Type == "" {
		return v, failed("O cartão delegado precisa de uma credencial do tipo token ({\"type\":\"token\",\"token\":\"…\"}).")
	}
	switch strings.ToLower(cred.Type) {
	case "card", "pan":
		return v, failed(msgRawCard)
	}
	accepted := h.Config.AcceptedCredentialTypes
	if len(accepted) == 0 {
		accepted = []string{"token", "delegate_token"}
	}
	if !slices.Contains(accepted, cred.Type) {
		return v, failed("Credenciais do tipo %q não são aceitas por este handler; aceitas: %s.", cred.Type, strings.Join(accepted, ", "))
	}
	if cred.Token == "" {
		return v, failed("A credencial não traz o token de pagamento.")
	}
	if looksLikePAN(cred.Token) {
		return v, failed(msgRawCard)
	}
	var disp cardDisplay
	if len(in.Display) > 0 {
		_ = json.Unmarshal(in.Display, &disp)
	}
	v.tokenHash = card.TokenHash(cred.Token)
	v.brand, v.lastDigits = disp.Brand, disp.LastDigits
	switch {
	case card.LooksLikeJWS(cred.Token):
		c, f := s.verifyJWS(cred.Token, h, m)
		if f != nil {
			return v, f
		}
		sum := sha256.Sum256([]byte("jti\x00" + c.Jti))
		v.jtiHash, v.jtiUntil = sum[:], time.Unix(*c.Exp, 0).Add(tokenSkew)
		v.processorToken, v.scenario = c.Token, c.Scenario
		if v.processorToken == "" && h.Environment == "sandbox" {
			// A sandbox JWS that wraps no processor token pays with a test
			// card of the simulator chosen by its scenario.
			v.processorToken = sandboxCardToken(v.jtiHash, c.Scenario)
		}
		if c.Brand != "" {
			v.brand = c.Brand
		}
		if c.LastDigits != "" {
			v.lastDigits = c.LastDigits
		}
	case strings.HasPrefix(cred.Token, "tok_"):
		v.processorToken = cred.Token
	case ap2.LooksLikeMandate(cred.Token):
		c, f := verifiedAP2Mandate(cred.Token, h)
		if f != nil {
			return v, f
		}
		v.processorToken = c
	default:
		return v, failed("O token de pagamento não foi reconhecido (esperado um JWS assinado ou um token tok_…).")
	}
	if brands := h.brandsFor(in.Type); len(brands) > 0 && v.brand != "" && !brandAllowed(brands, v.brand) {
		return v, failed("A bandeira %q não é aceita por esta loja (aceitas: %s).", v.brand, strings.Join(brands, ", "))
	}
	if len(v.lastDigits) > 4 {
		v.lastDigits = v.lastDigits[len(v.lastDigits)-4:]
	}
	return v, nil
}

// verifyJWS verifies a delegated token signed as a compact JWS (ES256).
// The key (by kid) comes from the agent profile's signing keys (passed by
// the checkout service) or from the handler config's JWK Set. Claims:
//   - aud: this handler's instance id or the merchant's primary domain;
//   - iss, when present and the key is the agent's: the agent profile URL;
//   - checkout_id: this checkout; max_amount ≥ the amount, in centavos;
//   - currency: BRL (any case) and the checkout's;
//   - exp in the future, nbf/iat not in the future (±1 min);
//   - jti: required, single use (checked when the attempt is stored).
func (s *Service) verifyJWS(token string, h handler, m *paymentsv1.StartPaymentRequest) (card.Claims, *failure) {
	var c card.Claims
	j, err := card.ParseJWS(token)
	if err != nil {
		return c, failed("O token de pagamento não é um JWS válido.")
	}
	pub, fromAgent := s.resolveKey(j.Header.Kid, h, m.GetAgentSigningKeysJson())
	if pub == nil {
		return c, failed("A chave que assinou o token de pagamento (kid %q) é desconhecida.", j.Header.Kid)
	}
	if err := j.Verify(pub); err != nil {
		return c, failed("A assinatura do token de pagamento não confere.")
	}
	if c, err = card.ParseClaims(j.Payload); err != nil {
		return c, failed("As declarações (claims) do token de pagamento são inválidas.")
	}
	now := s.now()
	switch {
	case !slices.ContainsFunc(c.Aud, func(a string) bool {
		return a == h.ID || (h.Tenant.GetPrimaryDomain() != "" && strings.EqualFold(a, h.Tenant.GetPrimaryDomain()))
	}):
		return c, failed("O token de pagamento foi emitido para outro destinatário (aud).")
	case fromAgent && c.Iss != "" && m.GetAgentProfileUrl() != "" && c.Iss != m.GetAgentProfileUrl():
		return c, failed("O emissor do token de pagamento (iss) não é a plataforma do agente.")
	case c.Exp == nil:
		return c, failed("O token de pagamento não tem validade (exp).")
	case !now.Before(time.Unix(*c.Exp, 0).Add(tokenSkew)):
		return c, failed("O token de pagamento expirou.")
	case c.Nbf != nil && now.Add(tokenSkew).Before(time.Unix(*c.Nbf, 0)),
		c.Iat != nil && now.Add(tokenSkew).Before(time.Unix(*c.Iat, 0)):
		return c, failed("O token de pagamento ainda não é válido.")
	case c.CheckoutID != m.GetCheckoutId():
		return c, failed("O token de pagamento foi emitido para outro checkout.")
	case c.MaxAmount == nil:
		return c, failed("O token de pagamento não tem valor máximo (max_amount).")
	case *c.MaxAmount < m.GetAmount():
		return c, failed("O valor máximo do token de pagamento (%s) é menor que o total (%s).", money.FormatBRL(*c.MaxAmount), money.FormatBRL(m.GetAmount()))
	case !strings.EqualFold(c.Currency, "BRL") || !strings.EqualFold(c.Currency, m.GetCurrency()):
		return c, failed("O token de pagamento é para a moeda %q, mas o pedido é em %s.", c.Currency, m.GetCurrency())
	case c.Jti == "" || len(c.Jti) > 256:
		return c, failed("O token de pagamento não tem identificador de uso único (jti).")
	}
	return c, nil
}

// resolveKey finds kid among the agent's keys, then the handler's JWKS.
func (s *Service) resolveKey(kid string, h handler, agentKeys []string) (*ecdsa.PublicKey, bool) {
	for _, raw := range agentKeys {
		j, err := httpsig.ParseJWK([]byte(raw))
		if err != nil || j.Kid != kid {
			continue
		}
		if k, err := j.PublicKey(); err == nil {
			if ec, ok := k.Key.(*ecdsa.PublicKey); ok {
				return ec, true
			}
		}
	}
	if len(h.Config.JWKS) > 0 {
		if set, err := httpsig.ParseJWKSet(h.Config.JWKS); err == nil {
			if k, err := set.Lookup(kid); err == nil {
				if ec, ok := k.Key.(*ecdsa.PublicKey); ok {
					return ec, false
				}
			}
		}
	}
	return nil, false
}

// verifiedAP2Mandate is the processor token a card instrument whose
// credential.token is an AP2 payment mandate (mandate.payment.1) pays
// with. The checkout service verified the mandate before starting the
// payment (services/checkout/ap2.go, verifyPaymentMandate: agent's key,
// key binding, transaction_id, payee, amount, instrument) and starts none
// it did not verify. AP2's payment mandate names an instrument, not a
// processor credential: a sandbox handler pays with the simulator's
// approving test card, once per mandate (like a JWS that wraps no
// token); a production handler needs a processor token and refuses.
func verifiedAP2Mandate(token string, h handler) (string, *failure) {
	if h.Environment != "sandbox" {
		return "", failed("Este handler de cartão não cobra mandatos de pagamento AP2 sem um token do processador; envie um token delegado (tok_… ou JWS) em credential.token.")
	}
	sum := sha256.Sum256([]byte("ap2\x00" + token))
	return sandboxCardToken(sum[:], ""), nil
}

// sandboxCardToken is the card simulator's test token for a sandbox
// scenario, unique per JWS (its jti): the simulator's tokens pay once,
// and its outcome is read from the last four characters.
func sandboxCardToken(jtiHash []byte, scenario string) string {
	last := map[string]string{"decline": "0002", "requires_3ds": "3220", "3ds": "3220", "insufficient_funds": "9995"}[scenario]
	if last == "" {
		last = "4242"
	}
	return "tok_jws" + hex.EncodeToString(jtiHash[:8]) + "_" + last
}

// hasRawCard reports whether the instrument carries a card number: a
// member named number, pan or card_number in the credential (at any
// depth) or at the instrument's top level. The billing address is not
// searched (an address may well have a "number").
func hasRawCard(raw []byte) bool {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return false
	}
	v := map[string]any{"credential": in["credential"]}
	for k, e := range in {
		if k != "billing_address" && k != "credential" {
			if _, nested := e.(map[string]any); !nested {
				v[k] = e
			}
		}
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch strings.ToLower(k) {
				case "number", "pan", "card_number", "cardnumber":
					return true
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			return slices.ContainsFunc(x, walk)
		}
		return false
	}
	return walk(v)
}

// looksLikePAN: 13-19 digits (spaces/dashes allowed) passing Luhn.
func looksLikePAN(s string) bool {
	var digits []int
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits = append(digits, int(r-'0'))
		case r == ' ' || r == '-':
		default:
			return false
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := range digits {
		d := digits[len(digits)-1-i]
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// processor returns the card processor of a delegated handler.
func (s *Service) processor(ctx context.Context, handlerID, env string) (card.Processor, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.connectionFor(ctx, tid.String(), handlerID, env)
	if err != nil {
		return nil, err
	}
	return s.cardProcessor(ctx, tid.String(), handlerID, c)
}

// startCard verifies the token, stores the attempt (with the token's
// single use) and charges synchronously with the attempt id as the
// processor's idempotency key. existing is the stored attempt when a
// retried StartPayment resumes an interrupted charge.
func (s *Service) startCard(ctx context.Context, p paymentsdb.InsertAttemptParams, h handler, in instrument, m *paymentsv1.StartPaymentRequest, hash []byte, existing *attempt) (attempt, error) {
	fail := func(f *failure) (attempt, error) {
		if existing != nil {
			return s.failPending(ctx, existing.ID, f, false)
		}
		return s.insertFailed(ctx, p, f, m, hash)
	}
	v, f := s.verifyCard(h, in, m)
	if f != nil {
		return fail(f)
	}
	proc, err := s.processor(ctx, h.ID, h.Environment)
	if err != nil {
		s.log.ErrorContext(ctx, "payments: delegated handler without a card processor", "handler_id", h.ID, "err", err.Error())
		s.metrics.pspUnusable.WithLabelValues("card", "not_configured").Inc()
		s.alertConfig(ctx, h.ID, "processor_config", "Cartão ("+h.ID+"): nenhum processador configurado (chave da Stripe). Pagamentos com cartão falham até a configuração ser feita.")
		return fail(failed("O pagamento com cartão está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento."))
	}
	useToken := func(q *paymentsdb.Queries, attemptID string) (*failure, error) {
		if v.jtiHash == nil {
			return nil, nil
		}
		tid := p.TenantID
		if existing != nil {
			tid = existing.TenantID
		}
		if err := q.DeleteExpiredTokenUses(ctx, paymentsdb.DeleteExpiredTokenUsesParams{TenantID: tid, Now: s.now()}); err != nil {
			return nil, err
		}
		n, err := q.InsertTokenUse(ctx, paymentsdb.InsertTokenUseParams{TenantID: tid, JtiHash: v.jtiHash, AttemptID: attemptID, ExpiresAt: v.jtiUntil})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return failed("Este token de pagamento já foi usado (jti repetido)."), nil
		}
		return nil, nil
	}
	var a attempt
	if existing == nil {
		p.Status = stPending
		var existed bool
		// If the charge call never answers, the resolve sweep asks the
		// processor from resolve_after on.
		resolveAfter := s.now().Add(cardResolveDelay)
		p.ResolveAfter = &resolveAfter
		// And if this process dies first, any process's recovery does at
		// once (recover.go).
		p.Owner = s.ownerArg()
		var before func(q *paymentsdb.Queries) (*failure, error)
		if v.jtiHash != nil {
			before = func(q *paymentsdb.Queries) (*failure, error) { return useToken(q, p.ID) }
		}
		a, existed, err = s.insertAttempt(ctx, p, before, nil)
		if err != nil {
			return attempt{}, err
		}
		if existed {
			return s.replay(ctx, a, m, hash)
		}
		if a.Status != stPending {
			return a, nil // the token was already used
		}
	} else {
		a = *existing
		var f *failure
		err := s.inTenant(ctx, func(q *paymentsdb.Queries, _ uuid.UUID, _ pgx.Tx) error {
			var err error
			f, err = useToken(q, a.ID)
			return err
		})
		if err != nil {
			return attempt{}, err
		}
		if f != nil {
			return s.failPending(ctx, a.ID, f, false)
		}
	}
	// The charge and its record no longer depend on the caller: a caller
	// that went away (the checkout's process died, its request was cut)
	// would otherwise abort a charge the processor may already have made.
	// Its outcome is then announced to the checkout service like any
	// change it did not ask for.
	caller := ctx
	ctx = context.WithoutCancel(ctx)
	ch, err := proc.Charge(ctx, card.ChargeRequest{
		IdempotencyKey: a.ID, Token: v.processorToken, TokenHash: v.tokenHash, Scenario: v.scenario, Amount: a.Amount, Currency: a.Currency,
		ReturnURL: continuePage(a), CheckoutID: a.CheckoutID,
	})
	if errors.Is(err, card.ErrCredentials) {
		// The processor refused the merchant's key: nothing was charged,
		// and nothing will be until the merchant fixes it.
		d := diagnose(err)
		s.log.ErrorContext(ctx, "payments: card processor refused the handler's credentials", "attempt_id", a.ID, "handler_id", h.ID)
		s.metrics.pspUnusable.WithLabelValues("card", d.Code).Inc()
		s.alertConfig(ctx, h.ID, "processor_config", "Cartão ("+h.ID+"): "+d.Merchant+". Pagamentos com cartão falham até a chave ser corrigida (Pagamentos → Testar conexão).")
		return s.failPending(ctx, a.ID, failed("O pagamento com cartão está indisponível nesta loja por um problema de configuração; tente outro meio de pagamento."), false)
	}
	if err != nil {
		// The attempt stays pending, still owned by this process: its
		// recovery settles it at the processor by its key on the next pass
		// (under a second), as it would a dead process's; the checkout
		// waits for that outcome, and the resolve job is the backstop.
		s.log.WarnContext(ctx, "payments: card charge failed", "attempt_id", a.ID, "err", err.Error())
		s.recoverSoon(a.ID)
		return attempt{}, apperr.New(apperr.KindUnavailable, "processor_unavailable", "the card processor did not answer; retry StartPayment with the same attempt id")
	}
	display, _ := json.Marshal(cardDisplayOut(v.brand, v.lastDigits))
	out, err := s.applyCardCharge(ctx, proc, &a, a.ID, ch, display, caller.Err() != nil)
	if err == nil && out.Status == stRequiresAction {
		// The buyer answers the challenge at the processor, which tells
		// nobody: the resolve sweep asks it (pollCardAction).
		s.resolveAt(ctx, out.ID, s.now().Add(actionPollFirst))
	}
	return out, err
}

// 3-D Secure: a challenge is asked about actionPollFirst after it began,
// then every actionPoll (actionPollLate once it is older than
// actionPollSlowAfter), until the processor answers or the checkout's
// cancel or expiry voids it.
const (
	actionPollFirst     = 20 * time.Second
	actionPoll          = 30 * time.Second
	actionPollLate      = 5 * time.Minute
	actionPollSlowAfter = 15 * time.Minute
)

// resolveAt sets when the resolve sweep next looks at an attempt.
func (s *Service) resolveAt(ctx context.Context, id string, t time.Time) {
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		_, err := q.SetResolveAfter(ctx, paymentsdb.SetResolveAfterParams{ResolveAfter: &t, TenantID: tid, ID: id})
		return err
	})
	if err != nil {
		s.log.WarnContext(ctx, "payments: could not schedule the resolve sweep's look at an attempt", "attempt_id", id, "err", err.Error())
	}
}

// pollCardAction is the resolve sweep's turn at an attempt waiting for
// 3-D Secure: the processor's record by idempotency key decides it once
// the buyer answered; until then it says when to ask again.
func (s *Service) pollCardAction(ctx context.Context, a attempt) (*time.Time, error) {
	proc, err := s.processor(ctx, a.HandlerID, a.Environment)
	if err != nil {
		return nil, err
	}
	look, ok := proc.(card.Lookuper)
	if !ok {
		return nil, nil // nothing to ask: the checkout's expiry ends it
	}
	ch, err := look.Lookup(ctx, a.ID)
	if err != nil && !errors.Is(err, card.ErrNotFound) {
		return nil, err
	}
	if err == nil && ch.Status != card.StatusRequiresAction {
		_, err = s.applyCardCharge(ctx, proc, nil, a.ID, ch, nil, true)
		return nil, err
	}
	next := s.now().Add(actionPoll)
	if s.now().Sub(a.UpdatedAt) > actionPollSlowAfter {
		next = s.now().Add(actionPollLate)
	}
	return &next, nil
}

// continuePage is the merchant's hosted checkout page of an attempt's
// checkout (where a 3-D Secure challenge sends the buyer back).
func continuePage(a attempt) string { return a.BaseUrl + "/checkout/" + a.CheckoutID }

func cardDisplayOut(brand, last string) map[string]string {
	d := map[string]string{}
	if brand != "" {
		d["brand"] = strings.ToLower(brand)
	}
	if last != "" {
		d["last_digits"] = last
	}
	return d
}

var declineMessages = map[string]string{
	card.DeclineCardDeclined:      "O cartão foi recusado pelo emissor.",
	card.DeclineInsufficientFunds: "O cartão não tem saldo ou limite suficiente para esta compra.",
	card.DeclineExpiredCard:       "O cartão está vencido; use outro cartão.",
	card.DeclineInvalidToken:      "O token de pagamento não foi reconhecido pelo processador.",
	card.DeclineTokenUsed:         "Este token de pagamento já foi usado.",
}

// applyCardCharge records the processor's answer on a pending attempt. An
// approved charge for an attempt that is no longer pending (the resolve
// job gave up on it meanwhile) is refunded at once and reported.
func (s *Service) applyCardCharge(ctx context.Context, proc card.Processor, known *attempt, id string, ch card.Charge, display []byte, notify bool) (attempt, error) {
	orphan := false
	a, err := s.transitionKnown(ctx, known, id, notify, func(a *attempt) bool {
		if a.Status != stPending && (a.Status != stRequiresAction || ch.Status == card.StatusRequiresAction) {
			orphan = ch.Status == card.StatusApproved && (a.ChargeID == nil || *a.ChargeID != ch.ID || !payattempt.MovedMoney(a.Status))
			return false
		}
		a.ChargeID = &ch.ID
		if display != nil {
			a.Display = display
		}
		switch ch.Status {
		case card.StatusApproved:
			a.Status = stSucceeded
		case card.StatusRequiresAction:
			// The buyer completes the 3-D Secure challenge at the
			// processor's page when it gave one (and comes back to the
			// hosted checkout page), else on the hosted checkout page.
			a.Status, a.ActionUrl = stRequiresAction, ch.ActionURL
			if a.ActionUrl == "" {
				a.ActionUrl = continuePage(*a)
			}
		default:
			a.Status, a.FailureCode = stFailed, codePaymentFailed
			if ch.DeclineCode == card.DeclineCardDeclined || ch.DeclineCode == card.DeclineInsufficientFunds {
				a.FailureCode = ch.DeclineCode
			}
			a.FailureMessage = declineMessages[ch.DeclineCode]
			if a.FailureMessage == "" {
				a.FailureMessage = "O pagamento com cartão foi recusado."
			}
		}
		return true
	})
	if err == nil && orphan {
		s.refundStrayCharge(ctx, a, ch)
	}
	return a, err
}

// refundStrayCharge returns money a processor took for an attempt that
// had already been given up (its key was canceled too late, or a charge
// call answered after the attempt was failed): an automatic refund,
// recorded with its job in one transaction, a merchant alert and a
// metric, then executed at once (its job retries it otherwise).
func (s *Service) refundStrayCharge(ctx context.Context, a attempt, ch card.Charge) {
	id := "stray_" + ch.ID
	msg := "Cobrança de cartão " + ch.ID + " (" + money.FormatBRL(ch.Amount) + ") aprovada depois que o pagamento " + a.ID + " foi encerrado (" + statusPT[a.Status] + "); estornada automaticamente."
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, tx pgx.Tx) error {
		n, err := q.InsertRefundIfAbsent(ctx, paymentsdb.InsertRefundIfAbsentParams{TenantID: tid, ID: id, AttemptID: &a.ID, Kind: "automatic",
			HandlerID: a.HandlerID, ChargeID: &ch.ID, PspRefundID: id, Amount: ch.Amount, Reason: "Devolução automática: card_stray_charge"})
		if err != nil || n == 0 {
			return err // n == 0: recorded before
		}
		if err := q.InsertAlert(ctx, paymentsdb.InsertAlertParams{TenantID: tid, ID: ids.New("alr"), Kind: "card_stray_charge", Message: msg, AttemptID: a.ID}); err != nil {
			return err
		}
		s.metrics.alerts.WithLabelValues("card_stray_charge").Inc()
		s.metrics.autoRefunds.WithLabelValues("card_stray_charge").Inc()
		return s.insertJob(ctx, tx, refundArgs{TenantID: tid, RefundID: id}, &river.InsertOpts{ScheduledAt: s.now().Add(refundBackstop)})
	})
	if err != nil {
		s.log.ErrorContext(ctx, "payments: stray card charge not recorded for refund", "attempt_id", a.ID, "charge_id", ch.ID, "err", err.Error())
		return
	}
	s.log.WarnContext(ctx, "payments: stray card charge refunded automatically", "attempt_id", a.ID, "charge_id", ch.ID, "amount", ch.Amount)
	if _, err := s.executeRefund(ctx, id); err != nil {
		s.log.WarnContext(ctx, "payments: stray card refund not finished now; its job will retry", "refund_id", id, "err", err.Error())
	}
}

// resolveCard settles a card attempt still pending after its charge call
// should have finished, through Cancel: it stops the sale under the
// attempt's key for good, unless the processor already approved it, in
// which case the money moved and the attempt succeeds. A lookup that finds
// nothing would not do: the charge may still be on its way to the
// processor (or, at Stripe, not searchable yet), and land after the
// attempt was given up.
func (s *Service) resolveCard(ctx context.Context, id string) error {
	a, err := s.getAttempt(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil || a.Status != stPending || a.Txid != nil {
		return err
	}
	proc, err := s.processor(ctx, a.HandlerID, a.Environment)
	if err != nil {
		_, err = s.failPending(ctx, a.ID, failed("O pagamento com cartão não está disponível nesta loja no momento."), true)
		return err
	}
	ch, err := proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: a.ID, Amount: a.Amount, Currency: a.Currency})
	if err != nil {
		return err
	}
	if ch.Status == card.StatusApproved || ch.Status == card.StatusDeclined {
		_, err = s.applyCardCharge(ctx, proc, nil, a.ID, ch, nil, true)
		return err
	}
	_, err = s.failPending(ctx, a.ID, failed("O pagamento com cartão não foi concluído; tente novamente."), true)
	return err
}
