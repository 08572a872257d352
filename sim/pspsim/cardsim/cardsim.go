// Package cardsim is the sandbox's card processor: the subset of Stripe's
// API that the Stripe adapter (services/payments/card/stripecard) uses,
// served over HTTPS on the PSP simulator's control listener, so sandbox
// merchants pay through the very adapter production uses, pointed at it.
// Unlike the official stripe-mock it keeps state (PostgreSQL, schema
// pspsim, one tenant per simulated account): it declines, asks for 3-D
// Secure, remembers idempotency keys and refunds.
//
// # Routes
//
//	POST /v1/payment_methods              type=card, card[token]=tok_…
//	POST /v1/payment_intents              create (and confirm=true: pay)
//	GET  /v1/payment_intents              list: created[gte|gt|lte|lt], limit, starting_after
//	GET  /v1/payment_intents/search       query=metadata['k']:'v', limit, page
//	GET  /v1/payment_intents/{id}
//	POST /v1/payment_intents/{id}/cancel  cancellation_reason
//	POST /v1/refunds                      payment_intent, amount, reason, metadata
//	GET  /v1/balance
//	GET  /sim/3ds/{id}?client_secret=…    the 3-D Secure challenge page
//	POST /sim/3ds/{id}                    client_secret, outcome=approve|deny
//
// The API authenticates the account by its secret key (Authorization:
// Bearer sk_test_…, or Basic with the key as user name; NewKey issues
// them, pspsim.accounts keeps their SHA-256), answers form-encoded
// requests with Stripe's JSON objects and errors, and refuses parameters
// it does not know (parameter_unknown), as Stripe does.
//
// # Outcomes
//
// The card's last four digits decide, as Stripe's test cards and the
// in-process simulator (services/payments/card/simcard) do:
//
//	…4242  succeeded
//	…0002  declined: 402 card_error, card_declined / generic_decline
//	…3220  requires_action: 3-D Secure at BaseURL()+"/sim/3ds/{id}?client_secret=…"
//	…9995  declined: 402 card_error, card_declined / insufficient_funds
//	other  succeeded
//
// A sandbox token (tok_ and at least 4 letters, digits or _) gives its
// last four characters when they are digits (else 4242); Stripe's test
// tokens (tok_visa, tok_chargeDeclined, …) and test payment methods
// (pm_card_visa, …) give their documented cards. A declined intent rests
// in requires_payment_method with last_payment_error, as at Stripe.
//
// # Guarantees
//
//   - Idempotency as Stripe's v1 API: a POST with an Idempotency-Key
//     saves its answer in the transaction that did the work; the same key
//     with the same method, path and parameters gets that answer again
//     (Idempotent-Replayed: true), with anything else 400
//     idempotency_error, and while the first request runs 409
//     idempotency_key_in_use. Answers to invalid parameters are not saved.
//   - One intent per key: the key is claimed with INSERT … ON CONFLICT on
//     a unique index, and intents carry it (card_intents.idempotency_key,
//     unique), so two requests with one key never make two intents, and
//     Cancel's claim (an unconfirmed intent under the attempt's key) and
//     the attempt's charge exclude each other.
//   - A card token pays once: a token that paid (or waits for 3-D Secure)
//     is refused token_already_used when it is made into a PaymentMethod
//     again, or when a PaymentMethod made from it pays under another key;
//     a partial unique index settles concurrent payers. (Stripe's named
//     test tokens and payment methods stand for a new card each time, as
//     at Stripe, and may pay again.)
//   - The 3-D Secure answer and a cancel lock the intent: exactly one of
//     them moves it.
//
// Tokens are kept only as SHA-256 hashes. Stripe's eventually consistent
// search is strongly consistent here; keys are never pruned.
package cardsim

import (
	"crypto/rand"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures the simulator.
type Config struct {
	Pool *pgxpool.Pool
	// BaseURL is the control listener's https origin, for 3-D Secure
	// pages (e.g. pspsim.Server.ControlURL).
	BaseURL func() string
	Now     func() time.Time
	Logger  *slog.Logger
	// Wrap is the simulator's HTTP fault injection, applied to the API
	// routes (/v1/…), not to the 3-D Secure page; nil: none.
	Wrap func(http.Handler) http.Handler
}

// Sim is the card simulator.
type Sim struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// New returns a simulator; its handlers are Routes.
func New(cfg Config) *Sim {
	s := &Sim{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "cardsim")
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Routes are the simulator's handlers by http.ServeMux pattern, for
// pspsim.Config.ControlRoutes. They authenticate their own callers.
func (s *Sim) Routes() map[string]http.Handler {
	api := http.NewServeMux()
	api.Handle("POST /v1/payment_methods", s.authed(s.createPaymentMethod))
	api.Handle("POST /v1/payment_intents", s.authed(s.createIntent))
	api.Handle("GET /v1/payment_intents", s.authed(s.listIntents))
	api.Handle("GET /v1/payment_intents/search", s.authed(s.searchIntents))
	api.Handle("GET /v1/payment_intents/{id}", s.authed(s.getIntent))
	api.Handle("POST /v1/payment_intents/{id}/cancel", s.authed(s.cancelIntent))
	api.Handle("POST /v1/refunds", s.authed(s.createRefund))
	api.Handle("GET /v1/balance", s.authed(s.balance))
	api.HandleFunc("/v1/", s.unrecognized)
	var h http.Handler = api
	if s.cfg.Wrap != nil {
		h = s.cfg.Wrap(api)
	}
	routes := map[string]http.Handler{"/v1/": h}
	for _, p := range []string{
		"POST /v1/payment_methods", "POST /v1/payment_intents", "GET /v1/payment_intents",
		"GET /v1/payment_intents/search", "GET /v1/payment_intents/{id}", "POST /v1/payment_intents/{id}/cancel",
		"POST /v1/refunds", "GET /v1/balance",
	} {
		routes[p] = h
	}
	routes["GET /sim/3ds/{id}"] = http.HandlerFunc(s.challengePage)
	routes["POST /sim/3ds/{id}"] = http.HandlerFunc(s.challengeAnswer)
	return routes
}

// NewKey issues an account's secret key (sk_test_ and 48 base62
// characters: 285 random bits) and the hash pspsim.accounts keeps of it
// (stripe_key_hash, SetCardKey).
func NewKey() (key string, hash []byte) {
	key = "sk_test_" + randomID(48)
	return key, keyHash(key)
}

func keyHash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomID is n uniformly random base62 characters.
func randomID(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		_, _ = rand.Read(buf[:]) // never fails (crypto/rand)
		for _, b := range buf {
			// 248 = 4 × 62: rejecting the rest keeps every character equally likely.
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

// clock is now as PostgreSQL stores it (microseconds, UTC).
func (s *Sim) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func (s *Sim) baseURL() string {
	if s.cfg.BaseURL == nil {
		return ""
	}
	return s.cfg.BaseURL()
}
