package checkout

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// AP2 mandates at completion (upstream ap2-mandates.md, "Business
// Verification"). A session is locked to AP2 when the extension was
// negotiated for it (its stored capabilities) or is now; a completion then
// needs ap2.checkout_mandate, verified in full before anything is claimed:
// the mandate (ap2.Mandate.Verify: the agent platform's signature with a
// key of its profile, disclosures, expiry, key binding to this merchant
// and checkout), then the embedded checkout's merchant_authorization (one
// of this merchant's published keys signed it: a revoked key no longer
// verifies) and its terms against the session as it is now. Each failure
// is the extension's code at $.ap2.checkout_mandate, with the checkout
// returned unchanged; nothing is written.

// mandatePath is where every mandate failure points.
const mandatePath = "$.ap2.checkout_mandate"

// mandateRecord is what the order keeps of the mandate: its digest and
// claims, never the mandate.
type mandateRecord struct {
	*ap2.Verified
	MerchantKID string    `json:"merchant_kid"`
	CheckoutID  string    `json:"checkout_id"`
	Total       int64     `json:"total"`
	Currency    string    `json:"currency"`
	VerifiedAt  time.Time `json:"verified_at"`
}

func ap2Locked(sess session, agent agentInfo) bool {
	return agent.has(bcpnames.AP2Mandate) || slices.Contains(sess.Capabilities, bcpnames.AP2Mandate)
}

// verifyMandate returns the record of a valid mandate, or the message to
// answer with (the checkout unchanged).
func (s *Service) verifyMandate(ctx context.Context, r completion, sess session, cur *bcp.Checkout) ([]byte, *bcp.Message, error) {
	bad := func(code, content string) ([]byte, *bcp.Message, error) {
		m := bcp.Error(code, bcp.SeverityRecoverable, mandatePath, content)
		return nil, &m, nil
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
		return bad(ap2.CodeMandateRequired, "Este checkout usa mandatos AP2: envie ap2.checkout_mandate (SD-JWT+kb com o checkout autorizado pelo comprador).")
	}
	m, err := ap2.Parse(in.Mandate)
	if err != nil {
		return bad(ap2.CodeOf(err), reason(err))
	}
	keys := make([]json.RawMessage, len(r.agentKeys))
	for i, k := range r.agentKeys {
		keys[i] = json.RawMessage(k)
	}
	v, err := m.Verify(ap2.VerifyOptions{IssuerKeys: keys, Audience: r.agent.baseURL, Nonce: r.id, Now: s.now()})
	if err != nil {
		slog.InfoContext(ctx, "checkout: ap2 mandate refused", "checkout_id", r.id, "mandate_sha256", m.Digest(), "code", ap2.CodeOf(err))
		return bad(ap2.CodeOf(err), reason(err))
	}

	var embedded struct {
		ID        string          `json:"id"`
		Currency  string          `json:"currency"`
		LineItems json.RawMessage `json:"line_items"`
		Totals    json.RawMessage `json:"totals"`
		AP2       *struct {
			MerchantAuthorization string `json:"merchant_authorization"`
		} `json:"ap2"`
	}
	if err := json.Unmarshal(v.Checkout, &embedded); err != nil {
		return bad(ap2.CodeMandateScopeMismatch, "O checkout do mandato não é um checkout.")
	}
	if embedded.AP2 == nil || embedded.AP2.MerchantAuthorization == "" {
		return bad(ap2.CodeMerchantAuthorizationMissing, "O checkout do mandato não traz ap2.merchant_authorization: inclua o checkout exatamente como a loja o respondeu.")
	}
	d, err := s.tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: sess.TenantID.String()}))
	if err != nil {
		return nil, nil, err
	}
	merchantKeys := make([]json.RawMessage, 0, len(d.Msg.GetSigningKeysJson()))
	for _, k := range d.Msg.GetSigningKeysJson() {
		merchantKeys = append(merchantKeys, json.RawMessage(k))
	}
	kid, err := ap2.VerifyAuthorization(v.Checkout, embedded.AP2.MerchantAuthorization, merchantKeys)
	if err != nil {
		return bad(ap2.CodeMerchantAuthorizationInvalid, "A ap2.merchant_authorization do checkout do mandato não é uma assinatura válida desta loja (alterado, de outra loja ou com chave revogada).")
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
	rec, err := json.Marshal(mandateRecord{Verified: v, MerchantKID: kid, CheckoutID: r.id, Total: grandTotal(cur), Currency: cur.Currency, VerifiedAt: s.now().UTC()})
	if err != nil {
		return nil, nil, err
	}
	slog.InfoContext(ctx, "checkout: ap2 mandate verified", "checkout_id", r.id, "mandate_sha256", v.Digest, "issuer_kid", v.IssuerKID, "merchant_kid", kid)
	return rec, nil, nil
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
			return false, nil
		}
	}
	return true, nil
}

// reason is an ap2 error's reason, in English as the library words it:
// it names what failed without echoing the mandate.
func reason(err error) string {
	if e, ok := err.(*ap2.Error); ok {
		return "Mandato AP2 recusado: " + e.Reason
	}
	return "Mandato AP2 recusado."
}
