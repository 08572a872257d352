package pspsim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// Scopes of the API Pix subset the simulator serves (the spec's security
// of each operation).
var Scopes = []string{"cob.write", "cob.read", "pix.write", "pix.read", "webhook.write", "webhook.read"}

// tokenResponse is RFC 6749 §5.1.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// oauthError is RFC 6749 §5.2 (and RFC 6750 §3 for API calls).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="pspsim"`)
	}
	writeJSON(w, "application/json", status, oauthError{Error: code, Description: description})
}

// token is POST /oauth/token: the client credentials grant, with the
// client authenticated by HTTP Basic or by the form (client_secret_post)
// and by the TLS client certificate issued to it.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the form cannot be read")
		return
	}
	form := r.PostForm
	for _, k := range []string{"grant_type", "scope", "client_id", "client_secret"} {
		if len(form[k]) > 1 {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", k+" is repeated")
			return
		}
	}
	clientID, secret, basic := r.BasicAuth()
	switch {
	case basic && form.Has("client_secret"):
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "use one client authentication method, not HTTP Basic and the form together")
		return
	case basic:
		// RFC 6749 §2.3.1: both are form-urlencoded before Basic encoding.
		var err1, err2 error
		clientID, err1 = url.QueryUnescape(clientID)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "the Basic credentials are not form-urlencoded")
			return
		}
		if id := form.Get("client_id"); id != "" && id != clientID {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "client_id in the form differs from the Basic credentials")
			return
		}
	case form.Get("client_id") != "" && form.Get("client_secret") != "":
		clientID, secret = form.Get("client_id"), form.Get("client_secret")
	default:
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "no client authentication: send client_id and client_secret by HTTP Basic or in the form")
		return
	}
	fp, _ := peerFingerprint(r)
	var acct pspsimdb.PspsimAccount
	err := s.allAccounts(ctx, func(q *pspsimdb.Queries) error {
		var err error
		acct, err = q.AccountByClientID(ctx, clientID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed: unknown client_id or wrong client_secret")
		return
	}
	if err != nil {
		s.log.ErrorContext(ctx, "pspsim: token: find account", "err", err)
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "")
		return
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], acct.ClientSecretHash) != 1 {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed: unknown client_id or wrong client_secret")
		return
	}
	if subtle.ConstantTimeCompare(fp[:], acct.CertSha256) != 1 {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "the TLS client certificate was not issued to this client_id")
		return
	}
	switch gt := form.Get("grant_type"); gt {
	case "client_credentials":
	case "":
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q is not supported; use client_credentials", gt))
		return
	}
	scopes := acct.Scopes
	if asked := strings.Fields(form.Get("scope")); len(asked) > 0 {
		scopes = nil
		for _, sc := range asked {
			if !slices.Contains(acct.Scopes, sc) {
				writeOAuthError(w, http.StatusBadRequest, "invalid_scope", fmt.Sprintf("scope %q was not granted to this client", sc))
				return
			}
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	tok := base64.RawURLEncoding.EncodeToString(raw)
	hash := sha256.Sum256([]byte(tok))
	now := s.clock()
	expires := now.Add(s.cfg.TokenLifetime)
	err = s.inAccount(ctx, acct.TenantID, func(q *pspsimdb.Queries, _ pgx.Tx) error {
		if err := q.DeleteExpiredTokens(ctx, pspsimdb.DeleteExpiredTokensParams{TenantID: acct.TenantID, Now: now}); err != nil {
			return err
		}
		return q.InsertToken(ctx, pspsimdb.InsertTokenParams{TenantID: acct.TenantID, TokenHash: hash[:], Scopes: scopes, ExpiresAt: expires, CreatedAt: now})
	})
	if err != nil {
		s.log.ErrorContext(ctx, "pspsim: token: store", "err", err)
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "")
		return
	}
	s.certAccounts.Store(fp, acct.TenantID)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, "application/json", http.StatusOK, tokenResponse{
		AccessToken: tok, TokenType: "Bearer", ExpiresIn: int64(s.cfg.TokenLifetime.Seconds()), Scope: strings.Join(scopes, " "),
	})
}

// errInvalidToken: the bearer token is unknown, expired, revoked, or not
// the presenting certificate's account's.
var errInvalidToken = errors.New("invalid token")

// authorized authenticates an API call (bearer token of the account
// whose certificate the TLS client presented) and checks the scope the
// operation needs.
func (s *Server) authorized(scope string, h func(http.ResponseWriter, *http.Request, *account)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		tok = strings.TrimSpace(tok)
		if !strings.EqualFold(scheme, "Bearer") || tok == "" {
			// RFC 6750 §3.1: no error code when no credentials came.
			w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim"`)
			writeJSON(w, "application/json", http.StatusUnauthorized, oauthError{Error: "invalid_request", Description: "an Authorization: Bearer access token is required"})
			return
		}
		fp, _ := peerFingerprint(r)
		acct, err := s.authenticate(r.Context(), fp, tok)
		if errors.Is(err, errInvalidToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim", error="invalid_token"`)
			writeJSON(w, "application/json", http.StatusUnauthorized, oauthError{Error: "invalid_token", Description: "the access token is unknown, expired, revoked or not this certificate's"})
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !slices.Contains(acct.scopes, scope) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="pspsim", error="insufficient_scope", scope=%q`, scope))
			writeProblem(w, problemf(tAcessoNegado, "Requisição de participante autenticado que viola alguma regra de autorização: o escopo %s é necessário.", scope))
			return
		}
		h(w, r, acct)
	})
}

func (s *Server) authenticate(ctx context.Context, fp [32]byte, tok string) (*account, error) {
	var id uuid.UUID
	if v, ok := s.certAccounts.Load(fp); ok {
		id = v.(uuid.UUID)
	} else {
		err := s.allAccounts(ctx, func(q *pspsimdb.Queries) error {
			var err error
			id, err = q.AccountByCert(ctx, fp[:])
			return err
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errInvalidToken
		}
		if err != nil {
			return nil, err
		}
		s.certAccounts.Store(fp, id)
	}
	hash := sha256.Sum256([]byte(tok))
	var row pspsimdb.AuthenticateRow
	err := s.single(ctx, id, func(q *pspsimdb.Queries) error {
		var err error
		row, err = q.Authenticate(ctx, pspsimdb.AuthenticateParams{TenantID: id, TokenHash: hash[:], CertSha256: fp[:]})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errInvalidToken
	}
	if err != nil {
		return nil, err
	}
	if !row.ExpiresAt.After(s.now()) {
		return nil, errInvalidToken
	}
	return &account{id: id, chave: row.Chave, nome: row.Nome, cidade: row.Cidade, cnpj: row.Cnpj, scopes: row.Scopes}, nil
}
