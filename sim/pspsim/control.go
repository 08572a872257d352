package pspsim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/sim/pspsim/cardsim"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// clientCertValidity is how long an account's client certificate is valid.
const clientCertValidity = 2 * 365 * 24 * time.Hour

// controlError is the control API's error body.
type controlError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeControlError(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, "application/json", status, controlError{Error: code, Message: fmt.Sprintf(format, args...)})
}

// controlHandler serves the control listener: /sim/v1/… behind the admin
// token, and the card API.
func (s *Server) controlHandler() (h http.Handler, err error) {
	sim := http.NewServeMux()
	sim.HandleFunc("POST /sim/v1/accounts", s.createAccount)
	sim.HandleFunc("GET /sim/v1/accounts/{client_id}", s.withAccount(s.getAccount))
	sim.HandleFunc("POST /sim/v1/accounts/{client_id}/revoke-tokens", s.withAccount(s.revokeTokens))
	sim.HandleFunc("POST /sim/v1/accounts/{client_id}/cob/{txid}/pay", s.withAccount(s.payCob))
	sim.HandleFunc("POST /sim/v1/accounts/{client_id}/pix", s.withAccount(s.orphanPix))
	sim.HandleFunc("POST /sim/v1/accounts/{client_id}/pix/{e2eid}/notify", s.withAccount(s.notifyPix))
	sim.HandleFunc("GET /sim/v1/accounts/{client_id}/ledger", s.withAccount(s.ledger))
	sim.HandleFunc("GET /sim/v1/faults", s.getFaults)
	sim.HandleFunc("PUT /sim/v1/faults", s.putFaults)
	sim.HandleFunc("/sim/", func(w http.ResponseWriter, r *http.Request) {
		writeControlError(w, http.StatusNotFound, "not_found", "no control route %s %s", r.Method, r.URL.Path)
	})
	mux := http.NewServeMux()
	// ServeMux panics on a conflicting pattern: a configuration error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("pspsim: ControlRoutes: %v", p)
		}
	}()
	mux.Handle("/sim/", s.admin(sim))
	// The card API (Stripe's shape) and its 3-D Secure pages, behind the
	// same faults as the API Pix.
	cards := cardsim.New(cardsim.Config{Pool: s.cfg.Pool, BaseURL: s.ControlURL, Now: s.now, Logger: s.log, Wrap: s.faults.cards})
	for pattern, route := range cards.Routes() {
		mux.Handle(pattern, route)
	}
	return mux, nil
}

// admin requires Authorization: Bearer <AdminToken>.
func (s *Server) admin(next http.Handler) http.Handler {
	want := []byte("Bearer " + s.cfg.AdminToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim-control"`)
			writeControlError(w, http.StatusUnauthorized, "unauthorized", "the control API needs Authorization: Bearer <admin token>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decodeControl reads a JSON body strictly (unknown fields are refused:
// a typo must not pass silently). An empty body is allowed when optional.
func decodeControl(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid_request", "cannot read the body")
		return false
	}
	if optional && len(strings.TrimSpace(string(body))) == 0 {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		writeControlError(w, http.StatusBadRequest, "invalid_request", "the body is not the expected JSON object: %v", err)
		return false
	}
	return true
}

// Credentials are an account's credentials as a bank's developer portal
// hands them out (POST /sim/v1/accounts).
type Credentials struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Reference    string `json:"reference"`
	Nome         string `json:"nome"`
	Cidade       string `json:"cidade"`
	// Chave is the account's Pix key (EVP).
	Chave          string `json:"chave"`
	CertificatePEM string `json:"certificate_pem"`
	PrivateKeyPEM  string `json:"private_key_pem"`
	// PKCS12Base64 is the key, certificate and CA as a .p12 file whose
	// password is the client secret.
	PKCS12Base64 string `json:"pkcs12_base64"`
	// CAPEM is the simulator's CA: it issued the client certificate and
	// the certificate webhooks come with.
	CAPEM string `json:"ca_pem"`
	// WebhookSubject is the common name of the certificate webhooks come
	// with (the CA also issues the merchants' own).
	WebhookSubject string   `json:"webhook_subject"`
	APIURL         string   `json:"api_url"`
	TokenURL       string   `json:"token_url"`
	Scopes         []string `json:"scopes"`
	// StripeSecretKey and StripeAPIURL reach the account's card API, a
	// Stripe-compatible one (package cardsim).
	StripeSecretKey string `json:"stripe_secret_key"`
	StripeAPIURL    string `json:"stripe_api_url"`
}

// AccountInfo is an account without its secrets.
type AccountInfo struct {
	ClientID          string    `json:"client_id"`
	Reference         string    `json:"reference"`
	Nome              string    `json:"nome"`
	Cidade            string    `json:"cidade"`
	CNPJ              string    `json:"cnpj"`
	Chave             string    `json:"chave"`
	Scopes            []string  `json:"scopes"`
	CertificateSHA256 string    `json:"certificate_sha256"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

func accountInfo(a pspsimdb.PspsimAccount) AccountInfo {
	return AccountInfo{ClientID: a.ClientID, Reference: a.Reference, Nome: a.Nome, Cidade: a.Cidade, CNPJ: a.Cnpj, Chave: a.Chave,
		Scopes: a.Scopes, CertificateSHA256: hex.EncodeToString(a.CertSha256), CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

// AccountRequest is the body of POST /sim/v1/accounts.
type AccountRequest struct {
	// Reference identifies who asks (e.g. the merchant's handler): the
	// same reference again gets the same account with new credentials.
	Reference string `json:"reference"`
	Nome      string `json:"nome"`
	// Cidade defaults to "São Paulo".
	Cidade string `json:"cidade,omitempty"`
	// Scopes default to all of Scopes; [] grants none.
	Scopes *[]string `json:"scopes,omitempty"`
}

// createAccount is POST /sim/v1/accounts: a new account (201), or the
// reference's account with new credentials (200; the old secret, the
// old certificate and every token stop working).
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req AccountRequest
	if !decodeControl(w, r, &req, false) {
		return
	}
	req.Reference, req.Nome, req.Cidade = strings.TrimSpace(req.Reference), strings.TrimSpace(req.Nome), strings.TrimSpace(req.Cidade)
	if req.Cidade == "" {
		req.Cidade = "São Paulo"
	}
	switch {
	case req.Reference == "" || utf8.RuneCountInString(req.Reference) > 200:
		writeControlError(w, http.StatusBadRequest, "invalid_reference", "reference must have 1 to 200 characters")
		return
	case req.Nome == "" || utf8.RuneCountInString(req.Nome) > 200:
		writeControlError(w, http.StatusBadRequest, "invalid_nome", "nome must have 1 to 200 characters")
		return
	case utf8.RuneCountInString(req.Cidade) > 200:
		writeControlError(w, http.StatusBadRequest, "invalid_cidade", "cidade must have at most 200 characters")
		return
	}
	scopes := slices.Clone(Scopes)
	if req.Scopes != nil {
		scopes = []string{}
		for _, sc := range *req.Scopes {
			if !slices.Contains(Scopes, sc) {
				writeControlError(w, http.StatusBadRequest, "invalid_scope", "unknown scope %q (known: %s)", sc, strings.Join(Scopes, " "))
				return
			}
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
	}
	secretRaw := make([]byte, 32)
	_, _ = rand.Read(secretRaw)
	secret := base64.RawURLEncoding.EncodeToString(secretRaw)
	secretHash := sha256.Sum256([]byte(secret))
	// The card API's secret key (Stripe's shape), issued and rotated
	// with the rest.
	stripeKey, stripeHash := cardsim.NewKey()
	var row pspsimdb.UpsertAccountRow
	var cert *pki.Issued
	var err error
	// One transaction: the certificate names the client_id, so a known
	// reference's client_id is read first. A concurrent first
	// provisioning of the same reference wins the insert; this one then
	// tries once more as a rotation.
	for try := 0; ; try++ {
		err = s.allAccounts(ctx, func(q *pspsimdb.Queries) error {
			clientID := "pspsim_" + strings.ToLower(rand.Text())
			if a, err := q.AccountByReference(ctx, req.Reference); err == nil {
				clientID = a.ClientID
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var err error
			if cert, err = s.cfg.CA.IssueClient(clientID, clientCertValidity); err != nil {
				return err
			}
			fp := fingerprint(cert.Cert)
			row, err = q.UpsertAccount(ctx, pspsimdb.UpsertAccountParams{
				TenantID: uuid.New(), ClientID: clientID, Reference: req.Reference, ClientSecretHash: secretHash[:], CertSha256: fp[:],
				Nome: req.Nome, Cidade: req.Cidade, Cnpj: newCNPJ(), Chave: uuid.NewString(), Scopes: scopes, Now: s.clock(),
			})
			switch {
			case err != nil:
				return err
			case row.ClientID != clientID:
				return errProvisionRace
			}
			if _, err := q.SetCardKey(ctx, pspsimdb.SetCardKeyParams{StripeKeyHash: stripeHash, Now: s.clock(), TenantID: row.TenantID}); err != nil {
				return err
			}
			if row.Created {
				return nil
			}
			_, err = q.DeleteTokens(ctx, row.TenantID)
			return err
		})
		if !errors.Is(err, errProvisionRace) || try > 0 {
			break
		}
	}
	if err != nil {
		s.controlFail(w, r, err)
		return
	}
	p12, err := pki.EncodePKCS12(&pki.Credentials{Leaf: cert.Cert, Chain: [][]byte{cert.Cert.Raw, s.cfg.CA.Cert.Raw}, Key: cert.Key}, secret)
	if err != nil {
		s.controlFail(w, r, err)
		return
	}
	status := http.StatusOK
	if row.Created {
		status = http.StatusCreated
	}
	writeJSON(w, "application/json", status, Credentials{
		ClientID: row.ClientID, ClientSecret: secret, Reference: row.Reference, Nome: row.Nome, Cidade: row.Cidade, Chave: row.Chave,
		CertificatePEM: string(cert.CertPEM), PrivateKeyPEM: string(cert.KeyPEM), PKCS12Base64: base64.StdEncoding.EncodeToString(p12),
		CAPEM: string(s.cfg.CA.CertPEM), WebhookSubject: WebhookCertCN, APIURL: s.PixURL(), TokenURL: s.TokenURL(), Scopes: row.Scopes,
		StripeSecretKey: stripeKey, StripeAPIURL: s.ControlURL(),
	})
}

// errProvisionRace: another request provisioned the same reference at
// the same time.
var errProvisionRace = errors.New("pspsim: concurrent provisioning of the same reference")

// newCNPJ makes a valid CNPJ (random root, branch 0001, check digits):
// the account's document, shown by GET /webhook.
func newCNPJ() string {
	d := make([]int, 14)
	for i := range 8 {
		n, _ := rand.Int(rand.Reader, big.NewInt(10))
		d[i] = int(n.Int64())
	}
	d[8], d[9], d[10], d[11] = 0, 0, 0, 1
	check := func(n int) int {
		weights := []int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}[13-n:]
		sum := 0
		for i := range n {
			sum += d[i] * weights[i]
		}
		if r := sum % 11; r >= 2 {
			return 11 - r
		}
		return 0
	}
	d[12] = check(12)
	d[13] = check(13)
	var b strings.Builder
	for _, x := range d {
		b.WriteByte(byte('0' + x))
	}
	return b.String()
}

func (s *Server) controlFail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "pspsim: control API", "method", r.Method, "path", r.URL.Path, "err", err)
	writeControlError(w, http.StatusInternalServerError, "internal", "internal error (see the simulator's log)")
}

// withAccount finds the account named by {client_id}.
func (s *Server) withAccount(h func(http.ResponseWriter, *http.Request, pspsimdb.PspsimAccount)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		clientID := r.PathValue("client_id")
		var a pspsimdb.PspsimAccount
		err := s.allAccounts(ctx, func(q *pspsimdb.Queries) error {
			var err error
			a, err = q.AccountByClientID(ctx, clientID)
			return err
		})
		if errors.Is(err, pgx.ErrNoRows) {
			writeControlError(w, http.StatusNotFound, "account_not_found", "no account with client_id %q", clientID)
			return
		}
		if err != nil {
			s.controlFail(w, r, err)
			return
		}
		h(w, r, a)
	}
}

// getAccount is GET /sim/v1/accounts/{client_id}.
func (s *Server) getAccount(w http.ResponseWriter, _ *http.Request, a pspsimdb.PspsimAccount) {
	writeJSON(w, "application/json", http.StatusOK, accountInfo(a))
}

// revokeTokens is POST /sim/v1/accounts/{client_id}/revoke-tokens.
func (s *Server) revokeTokens(w http.ResponseWriter, r *http.Request, a pspsimdb.PspsimAccount) {
	ctx := r.Context()
	var n int64
	err := s.single(ctx, a.TenantID, func(q *pspsimdb.Queries) error {
		var err error
		n, err = q.DeleteTokens(ctx, a.TenantID)
		return err
	})
	if err != nil {
		s.controlFail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, map[string]int64{"revoked": n})
}

// PayRequest is the body of POST …/cob/{txid}/pay (optional).
type PayRequest struct {
	// Valor is what the payer pays (default: the charge's amount; another
	// amount simulates a wrong payment).
	Valor string `json:"valor,omitempty"`
	// InfoPagador is the payer's message (default "Pagamento simulado").
	InfoPagador string `json:"infoPagador,omitempty"`
}

// payCob is POST /sim/v1/accounts/{client_id}/cob/{txid}/pay: the payer
// pays an ATIVA charge. The Pix, the charge's CONCLUIDA and the webhook
// delivery are one transaction.
func (s *Server) payCob(w http.ResponseWriter, r *http.Request, a pspsimdb.PspsimAccount) {
	ctx := r.Context()
	txid := r.PathValue("txid")
	var req PayRequest
	if !decodeControl(w, r, &req, true) {
		return
	}
	if req.Valor != "" {
		if c, ok := parseValor(req.Valor); !ok || c == 0 {
			writeControlError(w, http.StatusBadRequest, "invalid_valor", `valor must be like "12.34" and above 0.00`)
			return
		}
	}
	if utf8.RuneCountInString(req.InfoPagador) > 140 {
		writeControlError(w, http.StatusBadRequest, "invalid_info_pagador", "infoPagador must have at most 140 characters")
		return
	}
	now := s.clock()
	var out Pix
	var delivery int64
	err := s.inAccount(ctx, a.TenantID, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		ch, err := q.LockCharge(ctx, pspsimdb.LockChargeParams{TenantID: a.TenantID, Txid: txid})
		if errors.Is(err, pgx.ErrNoRows) {
			return &controlErr{http.StatusNotFound, "charge_not_found", fmt.Sprintf("no charge with txid %q", txid)}
		}
		if err != nil {
			return err
		}
		if ch.Status != statusAtiva {
			return &controlErr{http.StatusConflict, "charge_not_active", fmt.Sprintf("the charge is %s; only an ATIVA charge can be paid", ch.Status)}
		}
		out = Pix{EndToEndID: newE2E("E", now), Txid: txid, Valor: ch.Valor, Chave: ch.Chave, Horario: now, InfoPagador: "Pagamento simulado"}
		if req.Valor != "" {
			out.Valor = req.Valor
		}
		if req.InfoPagador != "" {
			out.InfoPagador = req.InfoPagador
		}
		if err := q.InsertPix(ctx, pspsimdb.InsertPixParams{TenantID: a.TenantID, E2eID: out.EndToEndID, Txid: &txid, Chave: ch.Chave,
			Valor: out.Valor, Horario: now, InfoPagador: out.InfoPagador, ViaCob: true}); err != nil {
			return err
		}
		if _, err := q.SetChargeStatus(ctx, pspsimdb.SetChargeStatusParams{TenantID: a.TenantID, Txid: txid, Status: statusConcluida, UpdatedAt: now}); err != nil {
			return err
		}
		delivery, err = q.InsertDelivery(ctx, pspsimdb.InsertDeliveryParams{TenantID: a.TenantID, Chave: ch.Chave, E2eIds: []string{out.EndToEndID}, Reason: "pix", Now: now})
		return err
	})
	if s.controlErr(w, r, err) {
		return
	}
	s.traces.remember(ctx, delivery)
	s.kick()
	writeJSON(w, "application/json", http.StatusCreated, out)
}

// controlErr is a control API answer other than 2xx.
type controlErr struct {
	status  int
	code    string
	message string
}

func (e *controlErr) Error() string { return e.message }

// controlErr answers err (if any) and says whether it did.
func (s *Server) controlErr(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	var ce *controlErr
	if errors.As(err, &ce) {
		writeControlError(w, ce.status, ce.code, "%s", ce.message)
	} else {
		s.controlFail(w, r, err)
	}
	return true
}

// OrphanPixRequest is the body of POST …/pix.
type OrphanPixRequest struct {
	Valor string `json:"valor"`
	// Txid, when given, makes the Pix notified (like a static code's).
	// It must not be a charge's txid (pay the charge instead).
	Txid        string `json:"txid,omitempty"`
	InfoPagador string `json:"infoPagador,omitempty"`
}

// orphanPix is POST /sim/v1/accounts/{client_id}/pix: a Pix received to
// the account's key without a charge.
func (s *Server) orphanPix(w http.ResponseWriter, r *http.Request, a pspsimdb.PspsimAccount) {
	ctx := r.Context()
	var req OrphanPixRequest
	if !decodeControl(w, r, &req, false) {
		return
	}
	if c, ok := parseValor(req.Valor); !ok || c == 0 {
		writeControlError(w, http.StatusBadRequest, "invalid_valor", `valor must be like "12.34" and above 0.00`)
		return
	}
	if req.Txid != "" && !txidAny.MatchString(req.Txid) {
		writeControlError(w, http.StatusBadRequest, "invalid_txid", "txid must match [a-zA-Z0-9]{1,35}")
		return
	}
	if utf8.RuneCountInString(req.InfoPagador) > 140 {
		writeControlError(w, http.StatusBadRequest, "invalid_info_pagador", "infoPagador must have at most 140 characters")
		return
	}
	now := s.clock()
	out := Pix{EndToEndID: newE2E("E", now), Txid: req.Txid, Valor: req.Valor, Chave: a.Chave, Horario: now, InfoPagador: req.InfoPagador}
	err := s.inAccount(ctx, a.TenantID, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		var txid *string
		if req.Txid != "" {
			txid = &req.Txid
			if _, err := q.GetCharge(ctx, pspsimdb.GetChargeParams{TenantID: a.TenantID, Txid: req.Txid}); err == nil {
				return &controlErr{http.StatusConflict, "txid_is_a_charge", "txid names a charge of this account: pay it with …/cob/{txid}/pay"}
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if err := q.InsertPix(ctx, pspsimdb.InsertPixParams{TenantID: a.TenantID, E2eID: out.EndToEndID, Txid: txid, Chave: a.Chave,
			Valor: req.Valor, Horario: now, InfoPagador: req.InfoPagador}); err != nil {
			return err
		}
		if txid == nil {
			return nil // only Pix with a txid are notified
		}
		_, err := q.InsertDelivery(ctx, pspsimdb.InsertDeliveryParams{TenantID: a.TenantID, Chave: a.Chave, E2eIds: []string{out.EndToEndID}, Reason: "pix", Now: now})
		return err
	})
	if s.controlErr(w, r, err) {
		return
	}
	s.kick()
	writeJSON(w, "application/json", http.StatusCreated, out)
}

// notifyPix is POST /sim/v1/accounts/{client_id}/pix/{e2eid}/notify: one
// more delivery of a Pix (PSPs deliver at least once).
func (s *Server) notifyPix(w http.ResponseWriter, r *http.Request, a pspsimdb.PspsimAccount) {
	ctx := r.Context()
	e2eid := r.PathValue("e2eid")
	var id int64
	err := s.inAccount(ctx, a.TenantID, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		p, err := q.GetPix(ctx, pspsimdb.GetPixParams{TenantID: a.TenantID, E2eID: e2eid})
		if errors.Is(err, pgx.ErrNoRows) {
			return &controlErr{http.StatusNotFound, "pix_not_found", fmt.Sprintf("no Pix %q", e2eid)}
		}
		if err != nil {
			return err
		}
		if p.Txid == nil {
			return &controlErr{http.StatusConflict, "pix_without_txid", "a Pix without txid is never notified"}
		}
		id, err = q.InsertDelivery(ctx, pspsimdb.InsertDeliveryParams{TenantID: a.TenantID, Chave: p.Chave, E2eIds: []string{e2eid}, Reason: "notify", Now: s.clock()})
		return err
	})
	if s.controlErr(w, r, err) {
		return
	}
	s.kick()
	writeJSON(w, "application/json", http.StatusAccepted, map[string]int64{"delivery_id": id})
}

// Ledger is everything an account has (GET …/ledger), read in one
// snapshot.
type Ledger struct {
	Account    AccountInfo `json:"account"`
	Charges    []Cob       `json:"charges"`
	Pix        []Pix       `json:"pix"`
	Refunds    []Refund    `json:"refunds"`
	Webhooks   []Webhook   `json:"webhooks"`
	Deliveries []Delivery  `json:"deliveries"`
}

// Refund is a devolução with the Pix it returns.
type Refund struct {
	EndToEndID string `json:"endToEndId"`
	Devolucao
}

// Delivery is one webhook notification in the outbox and what became of
// it.
type Delivery struct {
	ID     int64    `json:"id"`
	Chave  string   `json:"chave"`
	E2EIDs []string `json:"e2e_ids"`
	// Reason: "pix" (received), "devolucao" (a devolução settled),
	// "notify" (asked for again).
	Reason string `json:"reason"`
	// Status: "pending", "delivered" (2xx), "dropped" (the drop_webhook
	// fault), "no_webhook" (no webhook registered for the key: nothing
	// sent).
	Status   string `json:"status"`
	Attempts int32  `json:"attempts"`
	// Sends counts POSTs (a duplicated delivery sends twice).
	Sends         int32      `json:"sends"`
	Delayed       bool       `json:"delayed"`
	Duplicated    bool       `json:"duplicated"`
	URL           string     `json:"url,omitempty"`
	LastStatus    *int32     `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
}

// ledger is GET /sim/v1/accounts/{client_id}/ledger.
func (s *Server) ledger(w http.ResponseWriter, r *http.Request, a pspsimdb.PspsimAccount) {
	l, err := s.readLedger(r.Context(), a)
	if err != nil {
		s.controlFail(w, r, err)
		return
	}
	writeJSON(w, "application/json", http.StatusOK, l)
}

func (s *Server) readLedger(ctx context.Context, a pspsimdb.PspsimAccount) (Ledger, error) {
	var row pspsimdb.LedgerRow
	err := s.single(ctx, a.TenantID, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.Ledger(ctx, a.TenantID)
		return err
	})
	if err != nil {
		return Ledger{}, err
	}
	l := Ledger{Account: accountInfo(a), Charges: []Cob{}, Refunds: []Refund{}, Webhooks: []Webhook{}, Deliveries: []Delivery{}}
	var cs []chargeRow
	if err := json.Unmarshal(row.Charges, &cs); err != nil {
		return Ledger{}, fmt.Errorf("pspsim: ledger charges: %w", err)
	}
	var ps []pixRow
	if err := json.Unmarshal(row.Pix, &ps); err != nil {
		return Ledger{}, fmt.Errorf("pspsim: ledger Pix: %w", err)
	}
	l.Pix = make([]Pix, 0, len(ps))
	for _, p := range ps {
		l.Pix = append(l.Pix, p.wire())
	}
	for _, c := range cs {
		var pix []Pix
		for _, p := range ps {
			if p.ViaCob && p.Txid != nil && *p.Txid == c.Txid {
				pix = append(pix, p.wire())
			}
		}
		l.Charges = append(l.Charges, toCob(c.charge(), pix))
	}
	for _, p := range l.Pix {
		for _, d := range p.Devolucoes {
			l.Refunds = append(l.Refunds, Refund{EndToEndID: p.EndToEndID, Devolucao: d})
		}
	}
	var ws []struct {
		Chave   string    `json:"chave"`
		URL     string    `json:"url"`
		Criacao time.Time `json:"criacao"`
	}
	if err := json.Unmarshal(row.Webhooks, &ws); err != nil {
		return Ledger{}, fmt.Errorf("pspsim: ledger webhooks: %w", err)
	}
	for _, wh := range ws {
		l.Webhooks = append(l.Webhooks, Webhook{WebhookURL: wh.URL, Chave: wh.Chave, CNPJ: a.Cnpj, Criacao: wh.Criacao.UTC()})
	}
	var ds []deliveryRow
	if err := json.Unmarshal(row.Deliveries, &ds); err != nil {
		return Ledger{}, fmt.Errorf("pspsim: ledger deliveries: %w", err)
	}
	for _, d := range ds {
		l.Deliveries = append(l.Deliveries, d.wire())
	}
	return l, nil
}

// chargeRow is a charges row as to_jsonb writes it.
type chargeRow struct {
	Txid        string    `json:"txid"`
	Revisao     int32     `json:"revisao"`
	Status      string    `json:"status"`
	Valor       string    `json:"valor"`
	Modalidade  int32     `json:"modalidade_alteracao"`
	Expiracao   int32     `json:"expiracao"`
	Chave       string    `json:"chave"`
	Solicitacao string    `json:"solicitacao"`
	LocID       int64     `json:"loc_id"`
	Location    string    `json:"location"`
	CopiaECola  string    `json:"copia_e_cola"`
	Criacao     time.Time `json:"criacao"`
}

func (c chargeRow) charge() pspsimdb.PspsimCharge {
	return pspsimdb.PspsimCharge{Txid: c.Txid, Revisao: c.Revisao, Status: c.Status, Valor: c.Valor, ModalidadeAlteracao: c.Modalidade,
		Expiracao: c.Expiracao, Chave: c.Chave, Solicitacao: c.Solicitacao, LocID: c.LocID, Location: c.Location, CopiaECola: c.CopiaECola, Criacao: c.Criacao}
}

// deliveryRow is a deliveries row as to_jsonb writes it.
type deliveryRow struct {
	ID            int64      `json:"id"`
	Chave         string     `json:"chave"`
	E2EIDs        []string   `json:"e2e_ids"`
	Reason        string     `json:"reason"`
	Status        string     `json:"status"`
	Attempts      int32      `json:"attempts"`
	Sends         int32      `json:"sends"`
	Delayed       bool       `json:"delayed"`
	Duplicated    bool       `json:"duplicated"`
	URL           string     `json:"url"`
	LastStatus    *int32     `json:"last_status"`
	LastError     string     `json:"last_error"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	DoneAt        *time.Time `json:"done_at"`
}

func (d deliveryRow) wire() Delivery {
	out := Delivery{ID: d.ID, Chave: d.Chave, E2EIDs: d.E2EIDs, Reason: d.Reason, Status: d.Status, Attempts: d.Attempts, Sends: d.Sends,
		Delayed: d.Delayed, Duplicated: d.Duplicated, URL: d.URL, LastStatus: d.LastStatus, LastError: d.LastError,
		NextAttemptAt: d.NextAttemptAt.UTC(), CreatedAt: d.CreatedAt.UTC()}
	if d.DoneAt != nil {
		t := d.DoneAt.UTC()
		out.DoneAt = &t
	}
	return out
}

// FaultsState is GET/PUT /sim/v1/faults' answer.
type FaultsState struct {
	Settings FaultSettings `json:"settings"`
	// Spec is Settings as Config.Faults writes them.
	Spec string `json:"spec"`
	// Injected counts the faults injected since the process started, by
	// kind.
	Injected map[string]int64 `json:"injected"`
}

func (s *Server) faultsState() FaultsState {
	set := s.faults.settings()
	return FaultsState{Settings: set, Spec: set.String(), Injected: s.faults.injected()}
}

// getFaults is GET /sim/v1/faults.
func (s *Server) getFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, "application/json", http.StatusOK, s.faultsState())
}

// putFaults is PUT /sim/v1/faults: {"spec":"error5xx=0.1,…"} or the
// settings as JSON ({"error5xx":0.1,"latency":"200ms",…}); what is not
// given is off. The counts are kept.
func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	if !decodeControl(w, r, &raw, false) {
		return
	}
	var set FaultSettings
	var err error
	if spec, ok := raw["spec"]; ok {
		var str string
		if err := json.Unmarshal(spec, &str); err != nil || len(raw) != 1 {
			writeControlError(w, http.StatusBadRequest, "invalid_faults", `give either {"spec":"…"} alone or the settings`)
			return
		}
		set, err = ParseFaults(str)
	} else {
		b, _ := json.Marshal(raw)
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err = dec.Decode(&set); err == nil {
			_, share := raw["latency_share"]
			_, delay := raw["webhook_delay"]
			set.defaults(share, delay)
			err = set.validate()
		}
	}
	if err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid_faults", "%v", err)
		return
	}
	s.faults.replace(set)
	s.log.InfoContext(r.Context(), "pspsim: faults set", "faults", set.String())
	writeJSON(w, "application/json", http.StatusOK, s.faultsState())
}

// publicURL is https://host:port for a listener: the configured host
// (localhost when none or a wildcard), the port listened on.
func publicURL(configured string, ln net.Listener) string {
	host, _, _ := net.SplitHostPort(configured)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return "https://" + net.JoinHostPort(host, port)
}
