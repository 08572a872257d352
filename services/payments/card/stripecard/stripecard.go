// Package stripecard is the card.Processor (and card.Lookuper) of delegated
// card handlers whose merchant processes cards at Stripe. It speaks Stripe's
// PaymentIntents API through stripe-go v85 (API version 2026-03-25.dahlia),
// with stripe-go's own retries off (MaxNetworkRetries 0; stripe-go retries
// only requests that got no answer, and 429 lock_timeout): the payments
// service retries, always with the same idempotency key. Charge's two
// POSTs skip stripe-go's per-request machinery (poster) and send the
// same bytes; the transport is HTTP/1.1 with keep-alive (NewTransport).
//
// # Charge
//
// One payment attempt is one PaymentIntent, created and confirmed in one
// call: POST /v1/payment_intents with amount (centavos), currency "brl",
// confirm=true, capture_method=automatic, payment_method_types=[card], the
// buyer's payment method, return_url (the checkout's continue URL, where
// Stripe sends the buyer back after 3-D Secure), metadata bcp_attempt_id
// and bcp_checkout_id, and the header Idempotency-Key = the attempt id. A
// retry with the same key gets Stripe's saved answer and never a second
// charge; every field of the request must then be the same (Stripe answers
// idempotency_error otherwise).
//
// Tokens: pm_… (and the older card_…/src_…) go as payment_method. A tok_…
// card token is first turned into a PaymentMethod (POST /v1/payment_methods
// type=card, card[token]; Idempotency-Key "pm:" + attempt id), because
// payment_method_data[card] is not in Stripe's public API description:
// stripe-go v85 has no field for it and stripe-mock rejects
// payment_method_data[type]=card ("value is not in enumeration"). Stripe's
// shared payment tokens (spt_…, payment_method_data[shared_payment_granted_token])
// exist only in Stripe's preview API (2026-08-26.preview in stripe-mock's
// beta spec); API version 2026-03-25.dahlia and stripe-go v85 have neither,
// so an spt_… token, an unknown shape or no token at all (a JWS alone
// authorises nothing at Stripe) is declined invalid_token without a call.
//
// Outcomes: succeeded → approved; requires_action → requires_action with
// ActionURL = next_action.redirect_to_url.url (what Stripe answers a
// server-side confirmation that has a return_url; without one Stripe
// answers use_stripe_sdk, which needs Stripe.js on the page: ActionURL is
// then empty. Stripe's 3-D Secure URL carries the intent's client secret in
// its query: it is for the buyer's browser only, never for agents or logs);
// a card_error (HTTP 402) or an intent back in
// requires_payment_method (its confirmation failed, or 3-D Secure did) →
// declined, decline_code insufficient_funds → insufficient_funds, code or
// decline_code expired_card → expired_card, every other issuer reason
// (generic_decline, do_not_honor, lost_card, incorrect_cvc,
// processing_error, …) → card_declined; token_already_used →
// token_already_used, an unknown token or payment method → invalid_token;
// canceled → voided. processing (rare for cards: the network has not
// answered yet) is an error, not an outcome: the platform has no pending
// card state, its attempt stays pending and the resolve job asks Lookup
// again later, which answers only once Stripe has decided. A replayed
// answer (Idempotent-Replayed: true) that is not final is refreshed with
// GET /v1/payment_intents/{id}: Stripe replays the first answer, and a 3-D
// Secure challenge may have been completed since.
//
// # Errors
//
// Stripe's failures come back as *Error, built from Stripe's error fields
// with the secret key, the token and anything shaped like a key or client
// secret removed from its message. HTTP 401 and 403 (a wrong, revoked or
// under-privileged key) unwrap to card.ErrCredentials, idempotency_error
// (a key reused with other parameters) to card.ErrConflict, a refund over
// what is left to card.ErrRefundExceeds. Rate limits (429), 409
// idempotency_key_in_use (the same key running concurrently), 5xx and
// network errors are plain errors: the caller retries with the same key,
// which Stripe makes safe. Note that Stripe saves and replays a 500 as
// well, for that key, until it prunes the key.
//
// # Cancel, and what is guaranteed
//
// card.Processor.Cancel must make sure a sale not made yet is never made.
// Stripe has no "void this idempotency key"; it has the key itself. Cancel
// first claims the key: it creates, under the attempt's Idempotency-Key, an
// unconfirmed PaymentIntent (confirm=false, metadata bcp_voided=true, the
// same amount and currency) and cancels it. Stripe serialises requests per
// key, so exactly one of these happens:
//
//   - The claim wins (200): the key is bound to the claim. Any Charge with
//     that key, now or later, gets idempotency_error; Charge then repeats
//     the claim (same parameters, so Stripe replays it) and answers voided.
//     If the repeat is refused too, the key belongs to a different charge
//     request: card.ErrConflict. Either way nothing is charged.
//   - A Charge holds the key (idempotency_error): Cancel finds its intent
//     (search, then the strongly consistent list, below) and stops it:
//     requires_action, requires_confirmation or requires_capture are
//     canceled (voided; a Charge retried later gets the replay, refreshes it
//     and answers voided too); succeeded is returned approved (the money
//     moved); requires_payment_method is returned declined; processing is
//     an error (ask again later). If the intent cannot be found yet, Cancel
//     returns an error, never a guess.
//   - A Charge with the key is running at Stripe right now (409
//     idempotency_key_in_use): an error; the caller tries again.
//
// A cancel that lost to the buyer finishing 3-D Secure is answered with
// the intent as it is then (approved). The limits: Stripe may prune a key
// 24 hours after its first use, after which neither the claim nor the
// charge is remembered (callers must settle an attempt well before that);
// and the claim records the amount and currency of the CancelRequest, so a
// Charge for another amount under the same key gets card.ErrConflict (it
// still charges nothing).
//
// # Lookup, and Stripe's search
//
// Lookup finds the intent whose metadata bcp_attempt_id is the key with
// GET /v1/payment_intents/search. Stripe's search is eventually
// consistent: an intent is usually searchable within a minute, and up to
// an hour behind during Stripe incidents. So when the search finds nothing
// and the key is a platform id (internal/ids: a UUIDv7, which carries its
// creation time), Lookup also reads GET /v1/payment_intents?created[gte]=
// (the key's time minus 5 minutes), which is strongly consistent, up to
// 1 000 intents; only a complete read with no match is card.ErrNotFound.
// For keys without a time, card.ErrNotFound rests on the search alone and
// may be wrong for an intent created in the last minute or so. In every
// case, ErrNotFound says what Stripe had when it was read: a charge still
// on its way to Stripe can land afterwards, so a caller that gives up on
// ErrNotFound should give up through Cancel, which claims the key.
package stripecard

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/services/payments/card"
)

// Config is one Stripe account.
type Config struct {
	// SecretKey is the account's secret (sk_…) or restricted (rk_…) key.
	// It goes only into the Authorization header: never into errors.
	SecretKey string
	// BaseURL is Stripe's API root; "" is https://api.stripe.com. Tests
	// point it at stripe-mock or a stand-in; plain http is accepted only
	// on loopback (the key must not cross a network in clear).
	BaseURL string
	// HTTPClient carries the requests; nil is a client with a 60 s timeout.
	HTTPClient *http.Client
}

// MaxIdleConnsPerHost is how many idle connections to Stripe a
// Processor's transport (NewTransport) keeps: as many as it runs requests
// at once (HTTP/1.1 carries one request at a time per connection), so a
// burst of payments reuses its connections instead of closing all but
// two (net/http's default) and handshaking again.
const MaxIdleConnsPerHost = 32

// NewTransport is the transport of a Processor's HTTP client: HTTP/1.1
// with keep-alive (Stripe's API, stripe-mock and the card simulator all
// speak it), up to MaxIdleConnsPerHost idle connections, with rootCAs
// (nil: the system's) verifying the server, dial (nil: a net.Dialer with
// a 30 s timeout), the proxy of the environment (HTTPS_PROXY), net/http's
// default transport's timeouts, and TLS session resumption for new
// connections (no certificate chain to verify again).
//
// Not HTTP/2: Go's HTTP/2 client costs more per request than an idle
// HTTP/1.1 connection does (its frame writer, flow control, hpack, and a
// goroutine and channels per stream): per charge (BenchmarkClientCharge,
// the client alone) 4.25 writes and 0.5 to 2.7 reads on the connection,
// 2.1 to 3.6 goroutines started and 16.5 KB in 165 allocations, against
// 2 writes, 2 reads, no goroutine and 15.5 KB in 188 allocations over
// HTTP/1.1 (its header parsing allocates more than hpack); with the card
// simulator in the same process (BenchmarkCharge in sim/pspsim/cardsim)
// 10.1 goroutines and 814 allocations against 2 and 796. The price is a
// connection (one TLS handshake, resumed) per request running at once,
// kept idle afterwards.
//
// Over HTTP/1.1, net/http sends a request again by itself, once, on a
// new connection when a reused one was closed by the server before any
// answer came (a keep-alive race): it does so for requests without a body
// or with an Idempotency-Key, which every Stripe write carries (stripe-go
// sets one, with the body to send again): the same key, so Stripe answers
// the first request's answer if it was received after all, as a retry by
// the payments service would (TestStaleConnectionRetrySameKey).
func NewTransport(rootCAs *x509.CertPool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		Protocols:             &protocols,
		TLSClientConfig:       &tls.Config{RootCAs: rootCAs, ClientSessionCache: tls.NewLRUClientSessionCache(0)},
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Processor charges, refunds and cancels card payments at one Stripe
// account. It is safe for concurrent use.
type Processor struct {
	sc *stripe.Client
	// charge sends Charge's two requests (bodies it encodes itself:
	// chargeForm, tokenForm) as sc's backend would.
	charge *poster
	key    string
}

var (
	_ card.Processor = (*Processor)(nil)
	_ card.Lookuper  = (*Processor)(nil)
)

const (
	metaAttempt  = "bcp_attempt_id"
	metaCheckout = "bcp_checkout_id"
	metaVoided   = "bcp_voided"

	defaultTimeout = 60 * time.Second
	// listSkew is how much earlier than its key's time an intent may
	// carry as its created time (clock skew between us and Stripe).
	listSkew = 5 * time.Minute
	// listMax bounds the strongly consistent read behind a search miss.
	listMax = 1000
)

var (
	secretKeyShape = regexp.MustCompile(`^(sk|rk)_(test|live)_[0-9A-Za-z]+$`)
	// idempotencyKeyShape leaves room for the "pm:" prefix in Stripe's
	// 255 characters and needs no quoting in a search query.
	idempotencyKeyShape = regexp.MustCompile(`^[0-9A-Za-z_.:-]{1,200}$`)
)

// New returns a Processor for cfg.
func New(cfg Config) (*Processor, error) {
	if !secretKeyShape.MatchString(cfg.SecretKey) {
		return nil, errors.New("stripecard: SecretKey must be a Stripe secret or restricted key (sk_… or rk_…, test or live)")
	}
	bc := &stripe.BackendConfig{
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(0),
		EnableTelemetry:   stripe.Bool(false),
	}
	hc := http.Client{Timeout: defaultTimeout, Transport: tracing.Transport(NewTransport(nil, nil))}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	// The timeout moves from the client to the transport: http.Client
	// enforces it over a transport it does not know (any wrapper, such as
	// tracing's) with a goroutine, a timer and channels per request; a
	// context deadline bounds the same (until the answer's body is read
	// and closed). Bodies go with their length (withLength).
	hc.Transport, hc.Timeout = &httpdeadline.Transport{Next: hc.Transport, Timeout: hc.Timeout, Prepare: withLength}, 0
	bc.HTTPClient = &hc
	if cfg.BaseURL != "" {
		if err := checkBaseURL(cfg.BaseURL); err != nil {
			return nil, err
		}
		bc.URL = stripe.String(cfg.BaseURL)
	}
	backends := stripe.NewBackendsWithConfig(bc)
	sc := stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends))
	be, ok := backends.API.(*stripe.BackendImplementation)
	if !ok {
		return nil, fmt.Errorf("stripecard: stripe-go's API backend is a %T", backends.API)
	}
	charge, err := newPoster(be, cfg.SecretKey, &hc)
	if err != nil {
		return nil, err
	}
	return &Processor{sc: sc, charge: charge, key: cfg.SecretKey}, nil
}

// withLength gives a request's body its length when it has none (read
// whole): stripe-go sets Body after http.NewRequest, without
// ContentLength, and net/http sends a body of unknown length chunked, in
// three writes to the connection (TLS records) where one does. r is the
// transport's copy of the request (httpdeadline.Transport.Prepare).
func withLength(r *http.Request) error {
	if r.ContentLength != 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return err
	}
	r.ContentLength = int64(len(b))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("stripecard: BaseURL must be an absolute http(s) URL without credentials, query or fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if h := u.Hostname(); h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
			return nil
		}
		return errors.New("stripecard: BaseURL may use plain http only on loopback")
	}
	return errors.New("stripecard: BaseURL must be an http(s) URL")
}

// keyShaped reports whether key matches idempotencyKeyShape, without the
// regular expression (Charge checks every attempt's key).
func keyShaped(key string) bool {
	if len(key) < 1 || len(key) > 200 {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case '0' <= c && c <= '9', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkKey(key string) error {
	if !keyShaped(key) {
		return errors.New("stripecard: the idempotency key must be 1-200 letters, digits or _ . : -")
	}
	return nil
}

// currencyOf is Stripe's spelling of a currency (lower case; "" is BRL).
func currencyOf(c string) (string, error) {
	if c == "" {
		return "brl", nil
	}
	if len(c) != 3 || strings.Trim(strings.ToLower(c), "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", fmt.Errorf("stripecard: currency %q is not an ISO 4217 code", c)
	}
	return strings.ToLower(c), nil
}

// Charge creates and confirms the attempt's PaymentIntent (see the package
// documentation for the request and how its answer maps).
func (p *Processor) Charge(ctx context.Context, req card.ChargeRequest) (card.Charge, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return card.Charge{}, err
	}
	if req.Amount <= 0 {
		return card.Charge{}, errors.New("stripecard: the amount must be positive")
	}
	currency, err := currencyOf(req.Currency)
	if err != nil {
		return card.Charge{}, err
	}
	invalid := card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineInvalidToken, Amount: req.Amount}
	var pm string
	switch t := req.Token; {
	case strings.HasPrefix(t, "tok_"):
		var declined *card.Charge
		if pm, declined, err = p.tokenPaymentMethod(ctx, req); err != nil || declined != nil {
			if declined != nil {
				return *declined, nil
			}
			return card.Charge{}, err
		}
	case strings.HasPrefix(t, "pm_"), strings.HasPrefix(t, "card_"), strings.HasPrefix(t, "src_"):
		pm = t
	default:
		return invalid, nil
	}
	var reply intentReply
	err = p.charge.post(ctx, p.charge.intents, req.IdempotencyKey,
		chargeForm(req.Amount, currency, pm, req.ReturnURL, req.IdempotencyKey, req.CheckoutID), &reply)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) {
			switch {
			case se.Type == stripe.ErrorTypeCard:
				return declinedBy(se, req.Amount), nil
			case heldElsewhere(se):
				// The key is bound to another request: Cancel's claim, or
				// a charge with other parameters.
				return p.claimed(ctx, req.IdempotencyKey, req.Amount, currency)
			case se.Code == stripe.ErrorCodeTokenAlreadyUsed:
				return card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineTokenUsed, Amount: req.Amount}, nil
			case se.Code == stripe.ErrorCodeResourceMissing && se.Param == "payment_method":
				return invalid, nil
			}
		}
		return card.Charge{}, p.fail("charge", err, req.Token)
	}
	pi := reply.intent()
	if replayed(pi) && !final(pi.Status) {
		if pi, err = p.retrieve(ctx, pi.ID); err != nil {
			return card.Charge{}, err
		}
	}
	return p.outcome(pi)
}

// tokenPaymentMethod turns a tok_… card token into a PaymentMethod, once
// per attempt ("pm:" + its key): a retry gets the same pm_….
func (p *Processor) tokenPaymentMethod(ctx context.Context, req card.ChargeRequest) (string, *card.Charge, error) {
	var pm idReply
	err := p.charge.post(ctx, p.charge.methods, "pm:"+req.IdempotencyKey, tokenForm(req.Token, req.IdempotencyKey), &pm)
	if err == nil {
		return pm.ID, nil, nil
	}
	var se *stripe.Error
	if errors.As(err, &se) {
		declined := func(code string) (string, *card.Charge, error) {
			return "", &card.Charge{Status: card.StatusDeclined, DeclineCode: code, Amount: req.Amount}, nil
		}
		switch {
		case se.Type == stripe.ErrorTypeCard:
			ch := declinedBy(se, req.Amount)
			return "", &ch, nil
		case se.Code == stripe.ErrorCodeTokenAlreadyUsed:
			return declined(card.DeclineTokenUsed)
		case se.Code == stripe.ErrorCodeResourceMissing:
			return declined(card.DeclineInvalidToken)
		}
	}
	return "", nil, p.fail("payment method from token", err, req.Token)
}

// chargeForm is the body of Charge's POST /v1/payment_intents: amount,
// currency, confirm=true, capture_method=automatic,
// payment_method_types[0]=card, payment_method, return_url (when there is
// one) and metadata bcp_attempt_id (the key) and bcp_checkout_id (when
// there is one), byte for byte what stripe-go's form encoder makes of the
// same stripe.PaymentIntentCreateParams (keys in the order of its fields,
// TestChargeFormIsStripeGos) without its reflection: Stripe's idempotency
// compares a retry's parameters with the first request's.
func chargeForm(amount int64, currency, pm, returnURL, key, checkoutID string) []byte {
	b := make([]byte, 0, 192+len(pm)+len(returnURL)+len(key)+len(checkoutID))
	b = append(b, "amount="...)
	b = strconv.AppendInt(b, amount, 10)
	b = append(b, "&capture_method=automatic&confirm=true&currency="...)
	b = append(b, url.QueryEscape(currency)...)
	b = append(b, "&metadata["+metaAttempt+"]="...)
	b = append(b, url.QueryEscape(key)...)
	if checkoutID != "" {
		b = append(b, "&metadata["+metaCheckout+"]="...)
		b = append(b, url.QueryEscape(checkoutID)...)
	}
	b = append(b, "&payment_method="...)
	b = append(b, url.QueryEscape(pm)...)
	b = append(b, "&payment_method_types[0]=card"...)
	if returnURL != "" {
		b = append(b, "&return_url="...)
		b = append(b, url.QueryEscape(returnURL)...)
	}
	return b
}

// tokenForm is the body of the POST /v1/payment_methods that makes a card
// token into a PaymentMethod: type=card, card[token] and metadata
// bcp_attempt_id, as stripe-go encodes the same
// stripe.PaymentMethodCreateParams (TestTokenFormIsStripeGos).
func tokenForm(token, key string) []byte {
	b := make([]byte, 0, 64+len(token)+len(key))
	b = append(b, "card[token]="...)
	b = append(b, url.QueryEscape(token)...)
	b = append(b, "&metadata["+metaAttempt+"]="...)
	b = append(b, url.QueryEscape(key)...)
	b = append(b, "&type=card"...)
	return b
}

// intentReply is what Charge reads of the PaymentIntent Stripe answers:
// the fields outcome, replayed and final look at, typed as in
// stripe.PaymentIntent, without decoding the rest of its hundreds of
// fields (or parsing the answer again, as its UnmarshalJSON does).
type intentReply struct {
	stripe.APIResource
	ID               string                          `json:"id"`
	Amount           int64                           `json:"amount"`
	Created          int64                           `json:"created"`
	Status           stripe.PaymentIntentStatus      `json:"status"`
	Metadata         map[string]string               `json:"metadata"`
	NextAction       *stripe.PaymentIntentNextAction `json:"next_action"`
	LastPaymentError *stripe.Error                   `json:"last_payment_error"`
}

func (r *intentReply) intent() *stripe.PaymentIntent {
	return &stripe.PaymentIntent{
		APIResource: r.APIResource, ID: r.ID, Amount: r.Amount, Created: r.Created, Status: r.Status,
		Metadata: r.Metadata, NextAction: r.NextAction, LastPaymentError: r.LastPaymentError,
	}
}

// idReply is an answer of which only the object's id is read.
type idReply struct {
	stripe.APIResource
	ID string `json:"id"`
}

// claimParams is Cancel's claim on a key. Charge repeats it byte for byte
// to learn whether the key was claimed, so it depends on nothing but the
// key, the amount and the currency.
func claimParams(key string, amount int64, currency string) *stripe.PaymentIntentCreateParams {
	params := &stripe.PaymentIntentCreateParams{
		Amount:             stripe.Int64(amount),
		Currency:           stripe.String(currency),
		Confirm:            stripe.Bool(false),
		PaymentMethodTypes: []*string{stripe.String("card")},
		Description:        stripe.String("Voided by its checkout before any charge"),
	}
	params.AddMetadata(metaAttempt, key)
	params.AddMetadata(metaVoided, "true")
	params.SetIdempotencyKey(key)
	return params
}

// claimed answers a Charge whose key is bound to another request: voided
// when it is Cancel's claim (Stripe replays the claim), card.ErrConflict
// when it is a charge with other parameters.
func (p *Processor) claimed(ctx context.Context, key string, amount int64, currency string) (card.Charge, error) {
	pi, err := p.sc.V1PaymentIntents.Create(ctx, claimParams(key, amount, currency))
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && heldElsewhere(se) {
			return card.Charge{}, p.fail("charge", err)
		}
		return card.Charge{}, p.fail("claim check", err)
	}
	return p.voidClaim(ctx, pi)
}

// voidClaim cancels Cancel's claim on a key (if it is not canceled yet:
// Cancel may have stopped between creating and canceling it).
func (p *Processor) voidClaim(ctx context.Context, pi *stripe.PaymentIntent) (card.Charge, error) {
	if pi.Status != stripe.PaymentIntentStatusCanceled {
		if _, err := p.cancelIntent(ctx, pi.ID); err != nil {
			return card.Charge{}, err
		}
	}
	return card.Charge{ID: pi.ID, Status: card.StatusVoided, Amount: pi.Amount}, nil
}

// cancelIntent cancels an intent. Stripe refuses to cancel one that has
// moved on (succeeded, canceled, processing); the intent is then read back
// and returned as it is now, for the caller to decide.
func (p *Processor) cancelIntent(ctx context.Context, id string) (*stripe.PaymentIntent, error) {
	params := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String("abandoned")}
	pi, err := p.sc.V1PaymentIntents.Cancel(ctx, id, params)
	if err == nil {
		return pi, nil
	}
	var se *stripe.Error
	if errors.As(err, &se) && se.Code == stripe.ErrorCodePaymentIntentUnexpectedState {
		return p.retrieve(ctx, id)
	}
	return nil, p.fail("cancel", err)
}

func (p *Processor) retrieve(ctx context.Context, id string) (*stripe.PaymentIntent, error) {
	pi, err := p.sc.V1PaymentIntents.Retrieve(ctx, id, nil)
	if err != nil {
		return nil, p.fail("read payment intent", err)
	}
	return pi, nil
}

// outcome maps an intent to a charge; processing and states our charges
// never rest in are errors (ask again later).
func (p *Processor) outcome(pi *stripe.PaymentIntent) (card.Charge, error) {
	ch := card.Charge{ID: pi.ID, Amount: pi.Amount}
	if pi.Metadata[metaVoided] == "true" {
		ch.Status = card.StatusVoided
		return ch, nil
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		ch.Status = card.StatusApproved
	case stripe.PaymentIntentStatusRequiresAction:
		ch.Status = card.StatusRequiresAction
		if na := pi.NextAction; na != nil && na.Type == stripe.PaymentIntentNextActionTypeRedirectToURL && na.RedirectToURL != nil {
			ch.ActionURL = na.RedirectToURL.URL
		}
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		ch.Status, ch.DeclineCode = card.StatusDeclined, card.DeclineCardDeclined
		if e := pi.LastPaymentError; e != nil {
			ch.DeclineCode = declineCode(e)
		}
	case stripe.PaymentIntentStatusCanceled:
		ch.Status = card.StatusVoided
	case stripe.PaymentIntentStatusProcessing:
		return card.Charge{}, fmt.Errorf("stripecard: payment intent %s is processing; ask again later", pi.ID)
	default:
		return card.Charge{}, fmt.Errorf("stripecard: payment intent %s is in state %s, which a charge never rests in", pi.ID, pi.Status)
	}
	return ch, nil
}

// heldElsewhere reports Stripe's idempotency_error: the key was first used
// with other parameters (not 409 idempotency_key_in_use, the same key
// running concurrently).
func heldElsewhere(se *stripe.Error) bool {
	return se.Type == stripe.ErrorTypeIdempotency && se.Code != stripe.ErrorCodeIdempotencyKeyInUse && se.HTTPStatusCode != http.StatusConflict
}

// final reports whether an intent's state can no longer change by itself.
func final(s stripe.PaymentIntentStatus) bool {
	return s == stripe.PaymentIntentStatusSucceeded || s == stripe.PaymentIntentStatusCanceled ||
		s == stripe.PaymentIntentStatusRequiresPaymentMethod
}

// replayed reports whether Stripe answered from its idempotency store.
func replayed(pi *stripe.PaymentIntent) bool {
	return pi.LastResponse != nil && pi.LastResponse.Header.Get("Idempotent-Replayed") == "true"
}

func declinedBy(se *stripe.Error, amount int64) card.Charge {
	ch := card.Charge{Status: card.StatusDeclined, DeclineCode: declineCode(se), Amount: amount}
	if se.PaymentIntent != nil {
		ch.ID = se.PaymentIntent.ID
		if se.PaymentIntent.Amount > 0 {
			ch.Amount = se.PaymentIntent.Amount
		}
	}
	return ch
}

// declineCode maps Stripe's decline reasons to the card package's codes.
func declineCode(e *stripe.Error) string {
	switch {
	case e.DeclineCode == "insufficient_funds" || e.Code == stripe.ErrorCodeInsufficientFunds:
		return card.DeclineInsufficientFunds
	case e.DeclineCode == "expired_card" || e.Code == stripe.ErrorCodeExpiredCard:
		return card.DeclineExpiredCard
	}
	return card.DeclineCardDeclined
}

// Refund refunds part or all of a charge (a PaymentIntent id): POST
// /v1/refunds {payment_intent, amount}, Idempotency-Key = refundID.
func (p *Processor) Refund(ctx context.Context, chargeID, refundID string, cents int64) (card.Refund, error) {
	if !strings.HasPrefix(chargeID, "pi_") {
		return card.Refund{}, errors.New("stripecard: the charge id must be a PaymentIntent id (pi_…)")
	}
	if err := checkKey(refundID); err != nil {
		return card.Refund{}, err
	}
	if cents <= 0 {
		return card.Refund{}, errors.New("stripecard: the refund amount must be positive")
	}
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(chargeID), Amount: stripe.Int64(cents)}
	params.AddMetadata("bcp_refund_id", refundID)
	params.SetIdempotencyKey(refundID)
	r, err := p.sc.V1Refunds.Create(ctx, params)
	if err != nil {
		return card.Refund{}, p.fail("refund", err)
	}
	if r.Status == stripe.RefundStatusFailed || r.Status == stripe.RefundStatusCanceled {
		return card.Refund{}, fmt.Errorf("stripecard: refund %s is %s", r.ID, r.Status)
	}
	return card.Refund{ID: r.ID, Amount: r.Amount}, nil
}

// Cancel stops the sale under an idempotency key for good (see the package
// documentation for how, and what is guaranteed).
func (p *Processor) Cancel(ctx context.Context, req card.CancelRequest) (card.Charge, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return card.Charge{}, err
	}
	if req.Amount <= 0 {
		return card.Charge{}, errors.New("stripecard: the amount must be positive")
	}
	currency, err := currencyOf(req.Currency)
	if err != nil {
		return card.Charge{}, err
	}
	pi, err := p.sc.V1PaymentIntents.Create(ctx, claimParams(req.IdempotencyKey, req.Amount, currency))
	if err == nil {
		return p.voidClaim(ctx, pi)
	}
	var se *stripe.Error
	if !errors.As(err, &se) || !heldElsewhere(se) {
		return card.Charge{}, p.fail("cancel", err)
	}
	// A charge holds the key: stop it.
	pi, err = p.find(ctx, req.IdempotencyKey)
	if errors.Is(err, card.ErrNotFound) {
		return card.Charge{}, fmt.Errorf("stripecard: a charge holds key %s but Stripe does not list it yet; try again later", req.IdempotencyKey)
	}
	if err != nil {
		return card.Charge{}, err
	}
	if pi.Metadata[metaVoided] == "true" {
		return p.voidClaim(ctx, pi)
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusRequiresAction, stripe.PaymentIntentStatusRequiresConfirmation, stripe.PaymentIntentStatusRequiresCapture:
		// Canceled, or read back as it is now when Stripe refused (the
		// buyer finished 3-D Secure meanwhile: approved or declined).
		if pi, err = p.cancelIntent(ctx, pi.ID); err != nil {
			return card.Charge{}, err
		}
		if !final(pi.Status) {
			return card.Charge{}, fmt.Errorf("stripecard: payment intent %s is %s and could not be canceled; try again later", pi.ID, pi.Status)
		}
	}
	return p.outcome(pi)
}

// Lookup finds the charge made under an idempotency key (see the package
// documentation on Stripe's search and what card.ErrNotFound means).
func (p *Processor) Lookup(ctx context.Context, key string) (card.Charge, error) {
	if err := checkKey(key); err != nil {
		return card.Charge{}, err
	}
	pi, err := p.find(ctx, key)
	if err != nil {
		return card.Charge{}, err
	}
	return p.outcome(pi)
}

// find returns the intent whose metadata bcp_attempt_id is key: by search,
// then, for keys that carry their time, by the strongly consistent list.
func (p *Processor) find(ctx context.Context, key string) (*stripe.PaymentIntent, error) {
	sp := &stripe.PaymentIntentSearchParams{}
	sp.Query = fmt.Sprintf("metadata['%s']:'%s'", metaAttempt, key)
	sp.Limit = stripe.Int64(10)
	var found []*stripe.PaymentIntent
	for pi, err := range p.sc.V1PaymentIntents.Search(ctx, sp).All(ctx) {
		if err != nil {
			return nil, p.fail("search", err)
		}
		if pi.Metadata[metaAttempt] == key {
			found = append(found, pi)
		}
	}
	if len(found) > 0 {
		return pick(found), nil
	}
	at, ok := keyTime(key)
	if !ok {
		return nil, card.ErrNotFound
	}
	lp := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: at.Add(-listSkew).Unix()}}
	lp.Limit = stripe.Int64(100)
	n, complete := 0, true
	for pi, err := range p.sc.V1PaymentIntents.List(ctx, lp).All(ctx) {
		if err != nil {
			return nil, p.fail("list", err)
		}
		if pi.Metadata[metaAttempt] == key {
			found = append(found, pi)
		}
		if n++; n == listMax {
			complete = false
			break
		}
	}
	switch {
	case len(found) > 0:
		return pick(found), nil
	case !complete:
		return nil, fmt.Errorf("stripecard: key %s is not searchable yet and %d or more payment intents were created since; try again later", key, listMax)
	}
	return nil, card.ErrNotFound
}

// pick chooses among intents carrying one key (two only when Stripe pruned
// the key and it was used again): one that took the money wins, else the
// newest.
func pick(pis []*stripe.PaymentIntent) *stripe.PaymentIntent {
	best := pis[0]
	for _, pi := range pis[1:] {
		switch {
		case best.Status == stripe.PaymentIntentStatusSucceeded:
		case pi.Status == stripe.PaymentIntentStatusSucceeded, pi.Created > best.Created:
			best = pi
		}
	}
	return best
}

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// keyTime is the creation time a platform id carries (internal/ids: a
// prefix, "_" and a UUIDv7 in 26 lower-case Crockford base32 characters,
// whose first 10 hold 2 zero bits and the 48-bit Unix milliseconds).
func keyTime(key string) (time.Time, bool) {
	i := strings.LastIndexByte(key, '_')
	s := key[i+1:]
	if i < 0 || len(s) != 26 {
		return time.Time{}, false
	}
	var ms uint64
	for j := 0; j < len(s); j++ {
		v := strings.IndexByte(crockford, s[j])
		switch {
		case v < 0:
			return time.Time{}, false
		case j < 10:
			ms = ms<<5 | uint64(v)
		case j == 10 && v>>1 != 7: // the version nibble: UUID bits 48-51
			return time.Time{}, false
		}
	}
	if ms>>48 != 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// Error is Stripe's answer to a failed request, stripped of secrets. It
// unwraps to card.ErrCredentials, card.ErrConflict or card.ErrRefundExceeds
// when it means one of them.
type Error struct {
	Op          string // what we asked: "charge", "refund", "cancel", …
	HTTPStatus  int
	Type        string // Stripe's error type: card_error, invalid_request_error, …
	Code        string
	DeclineCode string
	Param       string
	Message     string // Stripe's message, with keys, tokens and client secrets removed
	RequestID   string
	kind        error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stripecard: %s: Stripe answered HTTP %d", e.Op, e.HTTPStatus)
	for _, f := range []struct{ k, v string }{{"type", e.Type}, {"code", e.Code}, {"decline_code", e.DeclineCode}, {"param", e.Param}} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%s", f.k, f.v)
		}
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if e.kind != nil {
		fmt.Fprintf(&b, " [%v]", e.kind)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.kind }

// secretShapes are what must never leave this package in an error:
// Stripe keys (Stripe's own messages quote them, masked or not), client
// secrets and card tokens.
var secretShapes = regexp.MustCompile(`\b(sk|rk|pk)_(test|live)_[0-9A-Za-z*]+|\b[a-z]+_[0-9A-Za-z]+_secret_[0-9A-Za-z]+|\b(tok|spt)_[0-9A-Za-z_]+`)

func (p *Processor) redact(s string, more ...string) string {
	for _, v := range append(more, p.key) {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return secretShapes.ReplaceAllString(s, "[redacted]")
}

// fail turns an error of stripe-go into ours: Stripe's answers into *Error
// (never Stripe's own Error(), which dumps the whole answer), the rest
// (network, context) wrapped as they are.
func (p *Processor) fail(op string, err error, secrets ...string) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("stripecard: %s: %w", op, err)
	}
	e := &Error{
		Op: op, HTTPStatus: se.HTTPStatusCode, Type: string(se.Type), Code: string(se.Code),
		DeclineCode: string(se.DeclineCode), Param: se.Param, RequestID: se.RequestID,
		Message: p.redact(se.Msg, secrets...),
	}
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		e.kind = card.ErrCredentials
	case se.Code == stripe.ErrorCodeIdempotencyKeyInUse || se.HTTPStatusCode == http.StatusConflict:
		// the same key running concurrently: retry later
	case heldElsewhere(se):
		e.kind = card.ErrConflict
	case op == "refund" && refundExceeds(se):
		e.kind = card.ErrRefundExceeds
	}
	return e
}

// refundExceeds recognises Stripe's refusals of a refund larger than what
// is left: charge_already_refunded (nothing left), amount_too_large, and
// the code-less "Refund amount (…) is greater than unrefunded amount on
// charge (…)" on param amount. (charge_exceeds_source_limit is a charge
// limit, not a refund error.)
func refundExceeds(se *stripe.Error) bool {
	switch se.Code {
	case stripe.ErrorCodeChargeAlreadyRefunded, stripe.ErrorCodeAmountTooLarge:
		return true
	case "":
		return se.Param == "amount" && strings.Contains(se.Msg, "greater than")
	}
	return false
}

// CheckCredentials reads the account's balance (GET /v1/balance), the
// cheapest authenticated call: the merchant's "Testar conexão". A refused
// key is card.ErrCredentials.
func (p *Processor) CheckCredentials(ctx context.Context) error {
	if _, err := p.sc.V1Balance.Retrieve(ctx, nil); err != nil {
		return p.fail("read balance", err)
	}
	return nil
}
