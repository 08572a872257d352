package cardsim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// call is one authenticated API request.
type call struct {
	r       *http.Request
	account uuid.UUID
	reqID   string
	p       *params
}

// op does a request's work in the account's transaction. Its answer is
// what the client gets (and what an idempotency key saves); an error
// rolls the transaction back and is answered 500, unsaved.
type op func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error)

// maxBody bounds a request's form.
const maxBody = 1 << 20

// workTimeout bounds a request's transaction. The work does not stop
// when the client goes away (as at Stripe, a request that began runs to
// its end, and its key keeps the answer).
const workTimeout = 30 * time.Second

// authed authenticates the account, reads the parameters and serves
// handler.
func (s *Sim) authed(handler func(w http.ResponseWriter, c *call)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqID := "req_" + randomID(14)
		account, fail := s.authenticate(r)
		if fail != nil {
			writeAnswer(w, r, reqID, fail.answer())
			return
		}
		form := r.URL.Query()
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if err := r.ParseForm(); err != nil {
				writeAnswer(w, r, reqID, invalid("", "", "The request body could not be read as a form (application/x-www-form-urlencoded).").answer())
				return
			}
			form = r.PostForm
		}
		handler(w, &call{r: r, account: account, reqID: reqID, p: newParams(form)})
	})
}

// unrecognized answers a path or method the simulator does not serve.
func (s *Sim) unrecognized(w http.ResponseWriter, r *http.Request) {
	e := invalid("", "", "Unrecognized request URL (%s: %s). The sandbox card simulator serves only the part of Stripe's API the platform uses.", r.Method, clip(r.URL.Path))
	e.status = http.StatusNotFound
	writeAnswer(w, r, "req_"+randomID(14), e.answer())
}

// keyPrefix is the visible part of a Stripe key in a message.
var keyPrefix = regexp.MustCompile(`^(sk|rk|pk)_(test|live)_`)

// maskKey is a key as Stripe quotes one it refused: its prefix, stars,
// and its last four characters when it is long enough to spare them.
func maskKey(key string) string {
	prefix := keyPrefix.FindString(key)
	rest := key[len(prefix):]
	n := min(len(rest), 64)
	if n > 12 {
		return prefix + strings.Repeat("*", n-4) + rest[len(rest)-4:]
	}
	return prefix + strings.Repeat("*", n)
}

func unauthorized(format string, args ...any) *apiError {
	return &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
}

// authenticate finds the account of the request's secret key.
func (s *Sim) authenticate(r *http.Request) (uuid.UUID, *apiError) {
	key, ok := "", false
	auth := r.Header.Get("Authorization")
	switch {
	case len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer "):
		key, ok = strings.TrimSpace(auth[7:]), true
	case len(auth) > 6 && strings.EqualFold(auth[:6], "Basic "):
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[6:])); err == nil {
			key, _, _ = strings.Cut(string(b), ":")
			ok = true
		}
	}
	if !ok || key == "" {
		return uuid.Nil, unauthorized("You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').")
	}
	if !strings.HasPrefix(key, "sk_") && !strings.HasPrefix(key, "rk_") {
		return uuid.Nil, unauthorized("Invalid API Key provided: %s", maskKey(key))
	}
	var account uuid.UUID
	err := pgstore.InPSPSim(r.Context(), s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		account, err = pspsimdb.New(tx).CardAccountByKey(r.Context(), keyHash(key))
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return uuid.Nil, unauthorized("Invalid API Key provided: %s", maskKey(key))
	case err != nil:
		s.log.Error("cardsim: find the account of a key", "err", err)
		return uuid.Nil, &apiError{status: http.StatusInternalServerError, Type: "api_error", Message: "An unknown error occurred"}
	}
	return account, nil
}

// inAccount runs fn in a transaction scoped to one account.
func (s *Sim) inAccount(ctx context.Context, account uuid.UUID, fn func(q *pspsimdb.Queries) error) error {
	return pgstore.InTenant(tenancy.With(ctx, account), s.cfg.Pool, func(tx pgx.Tx) error { return fn(pspsimdb.New(tx)) })
}

// read serves a GET: fn in the account's transaction.
func (s *Sim) read(w http.ResponseWriter, c *call, fn op) {
	var a answer
	err := s.inAccount(c.r.Context(), c.account, func(q *pspsimdb.Queries) error {
		var err error
		a, err = fn(c.r.Context(), q, c)
		return err
	})
	if err != nil {
		s.log.Error("cardsim: request failed", "method", c.r.Method, "path", c.r.URL.Path, "request_id", c.reqID, "err", err)
		a = internalAnswer
	}
	writeAnswer(w, c.r, c.reqID, a)
}

// fingerprint identifies a request for its idempotency key: method, path
// and parameters (sorted by name, values in order).
func fingerprint(method, path string, form url.Values) []byte {
	h := sha256.Sum256([]byte(method + " " + path + "\n" + form.Encode()))
	return h[:]
}

// write serves a POST with Stripe's idempotency: the key is claimed
// (INSERT … ON CONFLICT on its unique index) in the transaction that does
// the work and saves its answer, so a retry gets that answer and never a
// second effect; a request with another method, path or parameters gets
// idempotency_error, one arriving while the first runs 409.
func (s *Sim) write(w http.ResponseWriter, c *call, fn op) {
	key := strings.TrimSpace(c.r.Header.Get("Idempotency-Key"))
	if len(key) > 255 {
		writeAnswer(w, c.r, c.reqID, invalid("", "", "The Idempotency-Key header can be at most 255 characters long.").answer())
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.r.Context()), workTimeout)
	defer cancel()
	var (
		a        answer
		replayOf string
	)
	err := s.inAccount(ctx, c.account, func(q *pspsimdb.Queries) error {
		if key == "" {
			var err error
			a, err = fn(ctx, q, c)
			return err
		}
		free, err := q.CardTryLockKey(ctx, pspsimdb.CardTryLockKeyParams{TenantID: c.account, Key: key})
		if err != nil {
			return err
		}
		if !free {
			a = keyInUse(key)
			return nil
		}
		fp := fingerprint(c.r.Method, c.r.URL.Path, c.p.v)
		k, err := q.CardClaimKey(ctx, pspsimdb.CardClaimKeyParams{
			TenantID: c.account, Key: key, Method: c.r.Method, Path: c.r.URL.Path, Fingerprint: fp, RequestID: c.reqID, Now: s.clock(),
		})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			a = keyInUse(key) // claimed by a transaction this one cannot see yet
			return nil
		case err != nil:
			return err
		case !k.Claimed:
			var replayed bool
			if a, replayed = replay(key, k, c, fp); replayed {
				replayOf = k.RequestID
			}
			return nil
		}
		if a, err = fn(ctx, q, c); err != nil {
			return err
		}
		status := int32(a.status)
		return q.CardSaveAnswer(ctx, pspsimdb.CardSaveAnswerParams{TenantID: c.account, Key: key, Status: &status, Body: a.body})
	})
	if err != nil {
		s.log.Error("cardsim: request failed", "method", c.r.Method, "path", c.r.URL.Path, "request_id", c.reqID, "err", err)
		a, replayOf = internalAnswer, ""
	}
	if key != "" {
		w.Header().Set("Idempotency-Key", key)
	}
	if replayOf != "" {
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Original-Request", replayOf)
	}
	writeAnswer(w, c.r, c.reqID, a)
}

// replay is the answer to a request whose key was used before: the saved
// answer for the same request, idempotency_error for another.
func replay(key string, k pspsimdb.CardClaimKeyRow, c *call, fp []byte) (a answer, replayed bool) {
	if k.Method != c.r.Method || k.Path != c.r.URL.Path {
		return (&apiError{status: http.StatusBadRequest, Type: "idempotency_error", Message: fmt.Sprintf(
			"Keys for idempotent requests can only be used for the same endpoint they were first used for ('%s %s' vs '%s %s'). Try using a key other than '%s' if you meant to execute a different request.",
			k.Method, k.Path, c.r.Method, clip(c.r.URL.Path), clip(key))}).answer(), false
	}
	if string(k.Fingerprint) != string(fp) {
		return (&apiError{status: http.StatusBadRequest, Type: "idempotency_error", Message: fmt.Sprintf(
			"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.",
			clip(key))}).answer(), false
	}
	if k.Status == nil {
		return internalAnswer, false // never: a claim commits with its answer
	}
	return answer{status: int(*k.Status), body: k.Body}, true
}

func keyInUse(key string) answer {
	e := &apiError{status: http.StatusConflict, Type: "invalid_request_error", Code: "idempotency_key_in_use", Message: fmt.Sprintf(
		"There is currently another in-progress request using this Idempotency-Key (that probably means you submitted twice, and the other request is still going through): %s. Please try again later.", clip(key))}
	return e.answer()
}
