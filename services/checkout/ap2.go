package checkout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// AP2 mandates at completion (upstream ap2-mandates.md, "Business
// Verification"; the mandates in AP2's own layout, protocol/ap2). A
// session is locked to AP2 when the extension was negotiated for it (its
// stored capabilities) or is now; a completion then needs
// ap2.checkout_mandate, verified in full before anything is claimed: the
// envelope (ap2.Mandate.Verify: the agent platform's signature with a key
// of its profile, disclosures, expiry, key binding to this merchant and
// checkout), AP2's checkout mandate claims (closed, or open with the
// closed one in its key binding; checkout_hash), its checkout_jwt (signed
// by one of this merchant's published keys: a revoked key no longer
// verifies) and its terms against the session as it is now, an open
// mandate's constraints, and then the payment mandate the instrument may
// carry in credential.token (verifyPaymentMandate). Each checkout mandate
// failure is the extension's code at $.ap2.checkout_mandate, each payment
// mandate failure payment_failed at the token, with the checkout returned
// unchanged; nothing is written or charged.

// mandatePath is where every mandate failure points.
const mandatePath = "$.ap2.checkout_mandate"

// mandateRecord is what the order keeps of the mandates: their digests
// and claims (vct, checkout_hash; the payment mandate's transaction_id,
// amount and instrument), never the mandates.
type mandateRecord struct {
	*ap2.CheckoutMandate
	MerchantKID string                `json:"merchant_kid"`
	CheckoutID  string                `json:"checkout_id"`
	Total       int64                 `json:"total"`
	Currency    string                `json:"currency"`
	VerifiedAt  time.Time             `json:"verified_at"`
	Payment     *paymentMandateRecord `json:"payment_mandate,omitempty"`
}

// paymentMandateRecord is what the order keeps of a payment mandate.
type paymentMandateRecord struct {
	Digest        string `json:"digest"`
	VCT           string `json:"vct"`
	IssuerKID     string `json:"issuer_kid"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	InstrumentID  string `json:"instrument_id"`
	Instrument    string `json:"instrument_type"`
}

func ap2Locked(sess session, agent agentInfo) bool {
	return agent.has(bcpnames.AP2Mandate) || slices.Contains(sess.Capabilities, bcpnames.AP2Mandate)
}

// verifyMandate returns the record of a valid checkout mandate (and of
// the payment mandate, when the instrument's credential.token is one:
// verifyPaymentMandate), or the messages to answer with (the checkout
// unchanged).
func (s *Service) verifyMandate(ctx context.Context, r completion, sess session, cur *bcp.Checkout) ([]byte, []bcp.Message, error) {
	bad := func(code, content string) ([]byte, []bcp.Message, error) {
		return nil, []bcp.Message{bcp.Error(code, bcp.SeverityRecoverable, mandatePath, content)}, nil
	}
	var in struct {
		Mandate string `json:"checkout_mandate"`
	}
	if len(r.req.AP2) > 0 && json.Unmarshal(r.req.AP2, &in) != nil {
		// Not checked by the schema (see the edge's run): a mandate that
		// is not a string is no mandate anyone signed.
		return bad(ap2.CodeMandateInvalidSignature, "ap2.checkout_mandate deve ser uma string (SD-JWT+kb).")
	}
	if in.Mandate == "" {
		return bad(ap2.CodeMandateRequired, "Este checkout usa mandatos AP2: envie ap2.checkout_mandate (o Checkout Mandate do AP2, vct mandate.checkout.1, em SD-JWT+kb).")
	}
	m, err := ap2.Parse(in.Mandate)
	if err != nil {
		return bad(ap2.CodeOf(err), reason(err))
	}
	keys := make([]json.RawMessage, len(r.agentKeys))
	for i, k := range r.agentKeys {
		keys[i] = json.RawMessage(k)
	}
	opts := ap2.VerifyOptions{IssuerKeys: keys, Audience: r.agent.baseURL, Nonce: r.id, Now: s.now()}
	v, err := m.Verify(opts)
	var cm *ap2.CheckoutMandate
	if err == nil {
		cm, err = v.CheckoutMandate(s.now())
	}
	if err != nil {
		slog.InfoContext(ctx, "checkout: ap2 mandate refused", "checkout_id", r.id, "mandate_sha256", m.Digest(), "code", ap2.CodeOf(err))
		return bad(ap2.CodeOf(err), reason(err))
	}

	d, err := s.tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: sess.TenantID.String()}))
	if err != nil {
		return nil, nil, err
	}
	merchantKeys := make([]json.RawMessage, 0, len(d.Msg.GetSigningKeysJson()))
	for _, k := range d.Msg.GetSigningKeysJson() {
		merchantKeys = append(merchantKeys, json.RawMessage(k))
	}
	signed, kid, err := ap2.VerifyCheckoutJWT(cm.CheckoutJWT, merchantKeys)
	if err != nil {
		return bad(ap2.CodeMerchantAuthorizationInvalid, "O checkout_jwt do mandato não é um checkout assinado por esta loja (alterado, de outra loja ou com chave revogada).")
	}
	var embedded struct {
		ID        string          `json:"id"`
		Currency  string          `json:"currency"`
		LineItems json.RawMessage `json:"line_items"`
		Totals    json.RawMessage `json:"totals"`
	}
	if err := json.Unmarshal(signed, &embedded); err != nil {
		return bad(ap2.CodeMandateScopeMismatch, "O checkout_jwt do mandato não é um checkout.")
	}
	if embedded.ID != r.id {
		return bad(ap2.CodeMandateScopeMismatch, "O mandato autoriza outro checkout.")
	}
	same, err := sameTerms(embedded.Currency, embedded.LineItems, embedded.Totals, cur)
	if err != nil {
		return nil, nil, err
	}
	if !same {
		return bad(ap2.CodeMandateScopeMismatch, "O mandato autoriza outros termos (itens, totais ou moeda) que os do checkout agora; obtenha um novo mandato para o checkout atual.")
	}
	merchant := merchantOf(d.Msg.GetTenant(), r.agent.baseURL)
	if cm.Open {
		lines := make([]ap2.Line, 0, len(cur.LineItems))
		for _, l := range cur.LineItems {
			lines = append(lines, ap2.Line{ItemID: l.Item.ID, Quantity: l.Quantity})
		}
		if unmet := cm.Unmet(merchant, lines); len(unmet) > 0 {
			msgs := make([]bcp.Message, len(unmet))
			for i, u := range unmet {
				msgs[i] = bcp.Error(ap2.CodeMandateScopeMismatch, bcp.SeverityRecoverable, mandatePath, "Mandato AP2 aberto recusado: "+u+".")
			}
			slog.InfoContext(ctx, "checkout: ap2 open mandate constraints unmet", "checkout_id", r.id, "mandate_sha256", v.Digest, "unmet", len(unmet))
			return nil, msgs, nil
		}
	}
	rec := mandateRecord{CheckoutMandate: cm, MerchantKID: kid, CheckoutID: r.id, Total: grandTotal(cur), Currency: cur.Currency, VerifiedAt: s.now().UTC()}
	if r.req.Payment != nil && len(r.req.Payment.Instruments) == 1 {
		pm, msg := verifyPaymentMandate(r.req.Payment.Instruments[0], cm.CheckoutJWT, merchant, opts, cur)
		if msg != nil {
			slog.InfoContext(ctx, "checkout: ap2 payment mandate refused", "checkout_id", r.id)
			return nil, []bcp.Message{*msg}, nil
		}
		rec.Payment = pm
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	slog.InfoContext(ctx, "checkout: ap2 mandate verified", "checkout_id", r.id, "mandate_sha256", v.Digest, "vct", v.VCT, "issuer_kid", v.IssuerKID, "merchant_kid", kid, "payment_mandate", rec.Payment != nil)
	return out, nil, nil
}

// unchangedWith answers the checkout unchanged with msgs first.
func unchangedWith(c *bcp.Checkout, msgs []bcp.Message) (*checkoutv1.CheckoutResult, error) {
	c.Messages = append(append([]bcp.Message{}, msgs[1:]...), c.Messages...)
	return unchanged(c, msgs[0])
}

// paymentMandatePath is where every payment mandate failure points.
const paymentMandatePath = "$.payment.instruments[0].credential.token"

// credentialToken is an instrument's credential.token ("" without one).
func credentialToken(inst bcp.PaymentInstrument) string {
	var c struct {
		Token string `json:"token"`
	}
	if len(inst.Credential) > 0 {
		_ = json.Unmarshal(inst.Credential, &c)
	}
	return c.Token
}

// verifyPaymentMandate verifies the AP2 payment mandate (vct
// mandate.payment.1) an instrument carries in credential.token, before
// anything is claimed or charged: the same envelope as the checkout
// mandate's (the agent's key, key binding to this merchant and checkout),
// transaction_id the hash of the checkout mandate's checkout_jwt, payee
// this merchant, payment_amount the checkout's total and currency, and
// payment_instrument the instrument selected (its id and type). An
// instrument without a payment mandate gives no record and no message;
// a refusal is payment_failed saying why, nothing charged.
func verifyPaymentMandate(inst bcp.PaymentInstrument, checkoutJWT string, merchant ap2.Merchant, opts ap2.VerifyOptions, cur *bcp.Checkout) (*paymentMandateRecord, *bcp.Message) {
	token := credentialToken(inst)
	if !ap2.LooksLikeMandate(token) {
		return nil, nil
	}
	refuse := func(format string, args ...any) (*paymentMandateRecord, *bcp.Message) {
		m := bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, paymentMandatePath, "Mandato de pagamento AP2 recusado: "+fmt.Sprintf(format, args...))
		return nil, &m
	}
	m, err := ap2.Parse(token)
	if err != nil {
		return refuse("%s (%s).", apReason(err), ap2.CodeOf(err))
	}
	v, err := m.Verify(opts)
	var pm *ap2.PaymentMandate
	if err == nil {
		pm, err = v.PaymentMandate()
	}
	if err != nil {
		return refuse("%s (%s).", apReason(err), ap2.CodeOf(err))
	}
	total := grandTotal(cur)
	switch {
	case !pm.BindsTo(checkoutJWT):
		return refuse("transaction_id não é o hash do checkout_jwt do mandato de checkout (o pagamento é de outro checkout ou de outro estado deste).")
	case !merchant.Is(pm.Payee):
		return refuse("o payee do mandato não é esta loja (%s).", opts.Audience)
	case pm.Currency != cur.Currency:
		return refuse("o mandato autoriza a moeda %q, mas o checkout é em %s.", pm.Currency, cur.Currency)
	case pm.Amount != total:
		return refuse("o mandato autoriza %d centavos, mas o total do checkout é %d centavos.", pm.Amount, total)
	case pm.Instrument.ID != inst.ID || pm.Instrument.Type != inst.Type:
		return refuse("o payment_instrument do mandato (%q, tipo %q) não é o instrumento selecionado (%q, tipo %q).", pm.Instrument.ID, pm.Instrument.Type, inst.ID, inst.Type)
	}
	return &paymentMandateRecord{Digest: v.Digest, VCT: v.VCT, IssuerKID: v.IssuerKID, TransactionID: pm.TransactionID,
		Amount: pm.Amount, Currency: pm.Currency, InstrumentID: pm.Instrument.ID, Instrument: pm.Instrument.Type}, nil
}

// merchantOf is this merchant as AP2 merchant objects may name it: its
// origin (the key binding's aud), tenant id or slug; a website on its
// origin's host or one of its domains.
func merchantOf(t *tenantsv1.Tenant, origin string) ap2.Merchant {
	m := ap2.Merchant{IDs: []string{origin}}
	if t != nil {
		m.IDs = append(m.IDs, t.GetId(), t.GetSlug())
		m.Hosts = append(m.Hosts, t.GetDomains()...)
		if p := t.GetPrimaryDomain(); p != "" {
			m.Hosts = append(m.Hosts, p)
		}
	}
	if u, err := url.Parse(origin); err == nil && u.Hostname() != "" {
		m.Hosts = append(m.Hosts, u.Hostname())
	}
	return m
}

// sameTerms compares the mandate's terms with the session's, in RFC 8785
// form: the merchant signed the embedded checkout, so any difference is
// another state of this checkout (or the agent's edit).
func sameTerms(currency string, lineItems, totals json.RawMessage, cur *bcp.Checkout) (bool, error) {
	if currency != cur.Currency {
		return false, nil
	}
	for _, p := range []struct {
		got  json.RawMessage
		want any
	}{{lineItems, cur.LineItems}, {totals, cur.Totals}} {
		w, err := json.Marshal(p.want)
		if err != nil {
			return false, err
		}
		wc, err := ap2.Canonical(w)
		if err != nil {
			return false, err
		}
		gc, err := ap2.Canonical(p.got)
		if err != nil || !bytes.Equal(gc, wc) {
			return false, nil //nolint:nilerr // a presented value that does not canonicalize is not the one asked for
		}
	}
	return true, nil
}

// reason is an ap2 error's reason, in English as the library words it:
// it names what failed without echoing the mandate.
func reason(err error) string {
	if e, ok := errors.AsType[*ap2.Error](err); ok {
		return "Mandato AP2 recusado: " + e.Reason
	}
	return "Mandato AP2 recusado."
}

// apReason is an ap2 error's bare reason.
func apReason(err error) string {
	if e, ok := errors.AsType[*ap2.Error](err); ok {
		return e.Reason
	}
	return "invalid"
}
