package cardsim

import (
	"context"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// The 3-D Secure challenge: the issuer's page a buyer is sent to
// (next_action.redirect_to_url.url). Server-rendered, no JavaScript. Its
// client secret, in the query and then in the form, is what lets the
// buyer's browser in; the page is kept out of caches and Referer headers.

var challengeTmpl = template.Must(template.New("3ds").Parse(`<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Autenticação do cartão (ambiente de testes)</title>
<style>
body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;color:#222}
main{border:1px solid #ccc;border-radius:8px;padding:1.5rem}
h1{font-size:1.3rem;margin-top:0}
button{font-size:1rem;padding:.6rem 1.2rem;margin:.5rem .5rem 0 0;border-radius:6px;border:1px solid #888;background:#fff;cursor:pointer}
button.confirmar{background:#1a7f37;border-color:#1a7f37;color:#fff}
.nota{color:#666;font-size:.85rem;margin-top:1.5rem}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Waiting -}}
<p>Confirme a compra de <strong>{{.Amount}}</strong> com o cartão <strong>{{.Card}}</strong>.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="client_secret" value="{{.Secret}}">
<button class="confirmar" type="submit" name="outcome" value="approve">Confirmar compra</button>
<button type="submit" name="outcome" value="deny">Recusar</button>
</form>
{{- else -}}
<p>{{.Message}}</p>
{{if .ReturnURL}}<p><a href="{{.ReturnURL}}">Voltar à loja</a></p>{{end}}
{{- end}}
<p class="nota">Ambiente de testes: emissor simulado, nenhuma cobrança real.</p>
</main>
</body>
</html>
`))

type challengeView struct {
	Title, Message string
	Waiting        bool
	Amount, Card   string
	Action, Secret string
	ReturnURL      string
}

func renderPage(w http.ResponseWriter, status int, v challengeView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = challengeTmpl.Execute(w, v)
}

var (
	pageNotFound = challengeView{Title: "Autenticação não encontrada", Message: "Este link de autenticação não é válido."}
	pageFailed   = challengeView{Title: "Erro", Message: "O emissor simulado não pôde atender agora; tente de novo."}
)

// brl writes centavos as "R$ 1.234,56" (other currencies with their code
// in place of the symbol: "USD 1.234,56").
func brl(cents int64, currency string) string {
	s := money.FormatBRL(cents)
	if currency != "brl" {
		s = strings.Replace(s, "R$", strings.ToUpper(currency), 1)
	}
	return s
}

// findChallenge finds an intent by id and client secret (scope pspsim:
// the page knows no account); false when either is wrong.
func (s *Sim) findChallenge(ctx context.Context, id, secret string) (pspsimdb.PspsimCardIntent, bool, error) {
	var in pspsimdb.PspsimCardIntent
	err := pgstore.InPSPSim(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		in, err = pspsimdb.New(tx).CardFindIntent(ctx, id)
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return in, false, nil
	case err != nil:
		return in, false, err
	}
	return in, secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(in.ClientSecret)) == 1, nil
}

// brandName is a card brand as a buyer reads it ("visa" → "Visa").
func brandName(b string) string {
	switch b {
	case "":
		return "cartão"
	case "amex":
		return "American Express"
	}
	return strings.ToUpper(b[:1]) + b[1:]
}

func doneMessage(status string) string {
	switch status {
	case "succeeded":
		return "Esta compra já foi confirmada."
	case "requires_payment_method":
		return "A autenticação foi recusada; nenhuma cobrança foi feita."
	case "canceled":
		return "Esta compra foi cancelada pela loja; nenhuma cobrança foi feita."
	}
	return "Esta compra não está aguardando autenticação."
}

// GET /sim/3ds/{id}?client_secret=…
func (s *Sim) challengePage(w http.ResponseWriter, r *http.Request) {
	in, ok, err := s.findChallenge(r.Context(), r.PathValue("id"), r.URL.Query().Get("client_secret"))
	switch {
	case err != nil:
		s.log.Error("cardsim: 3-D Secure page", "err", err)
		renderPage(w, http.StatusInternalServerError, pageFailed)
		return
	case !ok:
		renderPage(w, http.StatusNotFound, pageNotFound)
		return
	}
	v := challengeView{Title: "Autenticação 3-D Secure", Waiting: in.Status == "requires_action", Message: doneMessage(in.Status)}
	if v.Waiting {
		v.Amount = brl(in.Amount, in.Currency)
		v.Card = brandName(in.CardBrand) + " final " + in.CardLast4
		v.Action, v.Secret = "/sim/3ds/"+in.ID, in.ClientSecret
	} else if in.ReturnUrl != nil {
		v.ReturnURL = *in.ReturnUrl
	}
	renderPage(w, http.StatusOK, v)
}

// POST /sim/3ds/{id}: the buyer's answer. Approved, the intent succeeds
// (the money moves); denied, it goes back to requires_payment_method with
// last_payment_error authentication_required. An intent no longer waiting
// (canceled by the shop, or answered already) is left as it is. Then, as
// Stripe, the buyer goes back to the intent's return_url.
func (s *Sim) challengeAnswer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		renderPage(w, http.StatusBadRequest, challengeView{Title: "Erro", Message: "O formulário não pôde ser lido."})
		return
	}
	ctx := r.Context()
	in, ok, err := s.findChallenge(ctx, r.PathValue("id"), r.PostForm.Get("client_secret"))
	switch {
	case err != nil:
		s.log.Error("cardsim: 3-D Secure answer", "err", err)
		renderPage(w, http.StatusInternalServerError, pageFailed)
		return
	case !ok:
		renderPage(w, http.StatusNotFound, pageNotFound)
		return
	}
	outcome := r.PostForm.Get("outcome")
	if outcome != "approve" && outcome != "deny" {
		renderPage(w, http.StatusBadRequest, challengeView{Title: "Erro", Message: "Escolha Confirmar compra ou Recusar."})
		return
	}
	arg := pspsimdb.CardAuthenticateParams{TenantID: in.TenantID, ID: in.ID, Approve: outcome == "approve", Now: s.clock()}
	if arg.Approve {
		ch := "ch_" + randomID(24)
		arg.LatestCharge = &ch
	} else {
		arg.DeclineCode = "authentication_required"
		arg.LastPaymentError = paymentError("card_error", "authentication_required", "authentication_required",
			"Your card was declined. This transaction requires authentication, and the cardholder did not complete it.", "", nil)
	}
	// The answer is recorded even if the browser goes away meanwhile.
	wctx := context.WithoutCancel(ctx)
	err = s.inAccount(wctx, in.TenantID, func(q *pspsimdb.Queries) error {
		done, err := q.CardAuthenticate(wctx, arg)
		if errors.Is(err, pgx.ErrNoRows) {
			// No longer waiting: show it as it is now.
			done, err = q.CardGetIntent(wctx, pspsimdb.CardGetIntentParams{TenantID: in.TenantID, ID: in.ID})
		}
		in = done
		return err
	})
	if err != nil {
		s.log.Error("cardsim: 3-D Secure answer", "err", err)
		renderPage(w, http.StatusInternalServerError, pageFailed)
		return
	}
	if in.ReturnUrl == nil {
		renderPage(w, http.StatusOK, challengeView{Title: "Autenticação 3-D Secure", Message: doneMessage(in.Status)})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, returnTo(*in.ReturnUrl, in), http.StatusSeeOther)
}

// returnTo is the return_url with what Stripe adds to it: the intent's id
// and how the redirect ended. (Stripe adds the client secret too; it is
// left out here, for it would land in the shop's access logs.)
func returnTo(raw string, in pspsimdb.PspsimCardIntent) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set("payment_intent", in.ID)
	status := "failed"
	if in.Status == "succeeded" {
		status = "succeeded"
	}
	q.Set("redirect_status", status)
	u.RawQuery = q.Encode()
	return u.String()
}
