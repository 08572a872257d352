package cardsim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

var currencyShape = regexp.MustCompile(`^[a-z]{3}$`)

// refer is resource_missing for an object a parameter names (HTTP 400).
func refer(object, id, param string) *apiError {
	e := noSuch(object, clip(id), param)
	e.status = http.StatusBadRequest
	return e
}

func optional(s string, ok bool) *string {
	if !ok || s == "" {
		return nil
	}
	return &s
}

func metadataJSON(md map[string]string) json.RawMessage {
	b, _ := json.Marshal(md)
	return b
}

func idempotencyKeyOf(c *call) *string {
	return optional(strings.TrimSpace(c.r.Header.Get("Idempotency-Key")), true)
}

// POST /v1/payment_methods: a card PaymentMethod from a card token.
func (s *Sim) createPaymentMethod(w http.ResponseWriter, c *call) {
	typ, fail := c.p.required("type")
	if fail == nil && typ != "card" {
		fail = invalid("type", "", "The sandbox card simulator makes only card PaymentMethods (type=card), not %q.", clip(typ))
	}
	var tok string
	if fail == nil {
		tok, fail = c.p.required("card[token]")
	}
	md, mdFail := c.p.metadata()
	if fail == nil {
		fail = mdFail
	}
	if fail == nil {
		fail = c.p.unknown()
	}
	card, known := tokenCard(tok)
	if fail == nil && !known {
		// The token is not quoted back: tokens stay out of logs and answers.
		fail = invalid("card[token]", "resource_missing", "No such token: the card token is not one this simulator issued or knows.")
	}
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	var hash []byte // none for Stripe's test tokens, which stand for a new token each time
	if _, test := testTokens[tok]; !test {
		h := sha256.Sum256([]byte(tok))
		hash = h[:]
	}
	s.write(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		if hash != nil {
			paid, err := q.CardTokenPaid(ctx, pspsimdb.CardTokenPaidParams{TenantID: c.account, TokenHash: hash})
			if err != nil {
				return answer{}, err
			}
			if paid {
				return invalid("", "token_already_used", "You cannot use a Stripe token more than once.").answer(), nil
			}
		}
		row, err := q.CardInsertPaymentMethod(ctx, pspsimdb.CardInsertPaymentMethodParams{
			TenantID: c.account, ID: "pm_" + randomID(24), TokenHash: hash, Brand: card.brand, Last4: card.last4,
			Metadata: metadataJSON(md), CreatedAt: s.clock(),
		})
		if err != nil {
			return answer{}, err
		}
		return answer{status: http.StatusOK, body: pmFromRow(row).JSON()}, nil
	})
}

// intentRequest is POST /v1/payment_intents, validated.
type intentRequest struct {
	amount        int64
	currency      string
	confirm       bool
	captureMethod string
	paymentMethod string
	types         []string
	automatic     json.RawMessage
	returnURL     *string
	description   *string
	metadata      map[string]string
}

func parseIntentRequest(p *params) (intentRequest, *apiError) {
	var req intentRequest
	var fail *apiError
	var ok bool
	if _, fail = p.required("amount"); fail != nil {
		return req, fail
	}
	if req.amount, _, fail = p.int("amount"); fail != nil {
		return req, fail
	}
	switch {
	case req.amount < 1:
		return req, invalid("amount", "parameter_invalid_integer", "This value must be greater than or equal to 1.")
	case req.amount > 99999999:
		return req, invalid("amount", "amount_too_large", "Amount must be no more than %s", formatAmount(99999999, "brl"))
	}
	if req.currency, fail = p.required("currency"); fail != nil {
		return req, fail
	}
	req.currency = strings.ToLower(req.currency)
	if !currencyShape.MatchString(req.currency) {
		return req, invalid("currency", "", "Invalid currency: %s. Currencies are three-letter ISO codes, in lowercase.", clip(req.currency))
	}
	if req.confirm, _, fail = p.bool("confirm"); fail != nil {
		return req, fail
	}
	if req.captureMethod, fail = p.oneOf("capture_method", "automatic", "automatic_async", "manual"); fail != nil {
		return req, fail
	}
	switch req.captureMethod {
	case "":
		req.captureMethod = "automatic_async"
	case "manual":
		return req, invalid("capture_method", "", "The sandbox card simulator does not support capture_method=manual.")
	}
	req.paymentMethod, _ = p.str("payment_method")
	req.types = p.list("payment_method_types")
	for _, t := range req.types {
		if t != "card" {
			return req, invalid("payment_method_types", "", "The payment method type %q is invalid: the sandbox card simulator accepts only card.", clip(t))
		}
	}
	enabled, hasEnabled, fail := p.bool("automatic_payment_methods[enabled]")
	if fail != nil {
		return req, fail
	}
	redirects, fail := p.oneOf("automatic_payment_methods[allow_redirects]", "always", "never")
	if fail != nil {
		return req, fail
	}
	switch {
	case len(req.types) > 0 && enabled:
		return req, invalid("automatic_payment_methods", "", "You may only specify one of these parameters: automatic_payment_methods, payment_method_types.")
	case len(req.types) == 0 && (!hasEnabled || enabled):
		// Stripe's default since 2023-08-16: the Dashboard's methods (here, cards).
		if redirects == "" {
			redirects = "always"
		}
		req.automatic, _ = json.Marshal(map[string]any{"enabled": true, "allow_redirects": redirects})
		req.types = []string{"card"}
	case len(req.types) == 0:
		req.types = []string{"card"}
	}
	var ru, desc string
	ru, ok = p.str("return_url")
	req.returnURL = optional(ru, ok)
	if req.returnURL != nil {
		u, err := url.Parse(ru)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			return req, invalid("return_url", "url_invalid", "Not a valid URL")
		case !req.confirm:
			return req, invalid("return_url", "", "The parameter return_url cannot be passed when creating a PaymentIntent unless confirm is set to true.")
		}
	}
	desc, ok = p.str("description")
	if len(desc) > 1000 {
		return req, invalid("description", "", "The description can be at most 1000 characters long.")
	}
	req.description = optional(desc, ok)
	if req.metadata, fail = p.metadata(); fail != nil {
		return req, fail
	}
	if fail = p.unknown(); fail != nil {
		return req, fail
	}
	if req.confirm && req.paymentMethod == "" {
		return req, invalid("payment_method", "payment_intent_unexpected_state",
			"You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent, pass a payment_method.")
	}
	if req.confirm && req.automatic != nil && redirects == "always" && req.returnURL == nil {
		return req, invalid("return_url", "", "return_url must be specified because this PaymentIntent is configured to automatically accept the payment methods enabled in the Dashboard, some of which may require a full page redirect to succeed. If you do not want to accept redirect-based payment methods, set automatic_payment_methods[enabled] to true and automatic_payment_methods[allow_redirects] to never when creating Setup Intents and Payment Intents.")
	}
	return req, nil
}

// resolvePaymentMethod finds the PaymentMethod an intent names.
func (s *Sim) resolvePaymentMethod(ctx context.Context, q *pspsimdb.Queries, c *call, id string) (paymentMethod, *apiError, error) {
	if card, ok := testPaymentMethods[id]; ok {
		return paymentMethod{id: id, card: card, created: s.clock()}, nil, nil
	}
	row, err := q.CardGetPaymentMethod(ctx, pspsimdb.CardGetPaymentMethodParams{TenantID: c.account, ID: id})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return paymentMethod{}, refer("PaymentMethod", id, "payment_method"), nil
	case err != nil:
		return paymentMethod{}, nil, err
	}
	return pmFromRow(row), nil, nil
}

// POST /v1/payment_intents: an intent, paid at once with confirm=true.
func (s *Sim) createIntent(w http.ResponseWriter, c *call) {
	req, fail := parseIntentRequest(c.p)
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.write(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		now := s.clock()
		id := "pi_" + randomID(24)
		row := pspsimdb.CardInsertIntentParams{
			TenantID: c.account, ID: id, IdempotencyKey: idempotencyKeyOf(c), ClientSecret: id + "_secret_" + randomID(25),
			Amount: req.amount, Currency: req.currency, Status: "requires_payment_method", CaptureMethod: req.captureMethod,
			PaymentMethodTypes: req.types, AutomaticPaymentMethods: req.automatic, Description: req.description,
			ReturnUrl: req.returnURL, Metadata: metadataJSON(req.metadata), CreatedAt: now,
		}
		var pm paymentMethod
		if req.paymentMethod != "" {
			var fail *apiError
			var err error
			if pm, fail, err = s.resolvePaymentMethod(ctx, q, c, req.paymentMethod); fail != nil || err != nil {
				return fail.answerOr(), err
			}
			row.PaymentMethod, row.CardBrand, row.CardLast4, row.TokenHash = &pm.id, pm.card.brand, pm.card.last4, pm.tokenHash
			row.Status = "requires_confirmation"
		}
		var oc outcome
		if req.confirm {
			oc = outcomeOf(pm.card.last4)
			row.Status, row.CheckToken = oc.status, true
			switch {
			case oc.status == "succeeded":
				ch := "ch_" + randomID(24)
				row.LatestCharge, row.AmountReceived = &ch, req.amount
			case oc.code != "":
				ch := "ch_" + randomID(24)
				row.LatestCharge, row.DeclineCode = &ch, oc.declineCode
				row.LastPaymentError = paymentError("card_error", oc.code, oc.declineCode, oc.message, ch, pm.JSON())
			}
		}
		in, err := q.CardInsertIntent(ctx, row)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && row.CheckToken && row.TokenHash != nil:
			return invalid("payment_method", "token_already_used",
				"You cannot use a Stripe token more than once: the card token of this PaymentMethod already paid.").answer(), nil
		case err != nil:
			return answer{}, err
		}
		if oc.code != "" {
			e := &apiError{status: http.StatusPaymentRequired, Type: "card_error", Code: oc.code, DeclineCode: oc.declineCode,
				Message: oc.message, Charge: *in.LatestCharge, PaymentIntent: s.intentRaw(in), PaymentMethod: pm.JSON()}
			return e.answer(), nil
		}
		return jsonAnswer(http.StatusOK, s.intentObject(in)), nil
	})
}

// answerOr is the error's answer; for no error, none (the caller returns
// its error instead).
func (e *apiError) answerOr() answer {
	if e == nil {
		return answer{}
	}
	return e.answer()
}

// GET /v1/payment_intents/{id}
func (s *Sim) getIntent(w http.ResponseWriter, c *call) {
	id := c.r.PathValue("id")
	c.p.str("client_secret") // what a publishable key would need; a secret key needs none
	if fail := c.p.unknown(); fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.read(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		in, err := q.CardGetIntent(ctx, pspsimdb.CardGetIntentParams{TenantID: c.account, ID: id})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return noSuch("payment_intent", clip(id), "intent").answer(), nil
		case err != nil:
			return answer{}, err
		}
		return jsonAnswer(http.StatusOK, s.intentObject(in)), nil
	})
}

// POST /v1/payment_intents/{id}/cancel
func (s *Sim) cancelIntent(w http.ResponseWriter, c *call) {
	id := c.r.PathValue("id")
	reason, fail := c.p.oneOf("cancellation_reason", "duplicate", "fraudulent", "requested_by_customer", "abandoned")
	if fail == nil {
		fail = c.p.unknown()
	}
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.write(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		in, err := q.CardCancelIntent(ctx, pspsimdb.CardCancelIntentParams{TenantID: c.account, ID: id, CancellationReason: optional(reason, true), Now: s.clock()})
		if err == nil {
			return jsonAnswer(http.StatusOK, s.intentObject(in)), nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return answer{}, err
		}
		in, err = q.CardGetIntent(ctx, pspsimdb.CardGetIntentParams{TenantID: c.account, ID: id})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return noSuch("payment_intent", clip(id), "intent").answer(), nil
		case err != nil:
			return answer{}, err
		}
		e := invalid("", "payment_intent_unexpected_state", "You cannot cancel this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.", in.Status)
		e.PaymentIntent = s.intentRaw(in)
		return e.answer(), nil
	})
}

// limit reads Stripe's page size (1 to 100, default 10).
func limit(p *params) (int32, *apiError) {
	n, ok, fail := p.int("limit")
	switch {
	case fail != nil:
		return 0, fail
	case !ok:
		return 10, nil
	case n < 1 || n > 100:
		return 0, invalid("limit", "", "This value must be between 1 and 100 (it currently is %d).", n)
	}
	return int32(n), nil
}

// createdRange reads created and created[gte|gt|lte|lt] (Unix seconds)
// as [from, until).
func createdRange(p *params) (from, until *time.Time, fail *apiError) {
	bound := func(name string, add int64, into **time.Time, later bool) {
		if fail != nil {
			return
		}
		n, ok, f := p.int(name)
		if f != nil || !ok {
			fail = f
			return
		}
		t := time.Unix(n+add, 0).UTC()
		if *into == nil || later == t.After(**into) {
			*into = &t
		}
	}
	bound("created", 0, &from, true)
	bound("created", 1, &until, false)
	bound("created[gte]", 0, &from, true)
	bound("created[gt]", 1, &from, true)
	bound("created[lte]", 1, &until, false)
	bound("created[lt]", 0, &until, false)
	return from, until, fail
}

// GET /v1/payment_intents: newest first.
func (s *Sim) listIntents(w http.ResponseWriter, c *call) {
	lim, fail := limit(c.p)
	from, until, f := createdRange(c.p)
	if fail == nil {
		fail = f
	}
	after, _ := c.p.str("starting_after")
	if _, ok := c.p.str("ending_before"); ok && fail == nil {
		fail = invalid("ending_before", "", "The sandbox card simulator lists forward only (starting_after), not ending_before.")
	}
	if fail == nil {
		fail = c.p.unknown()
	}
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.read(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		var before *int64
		if after != "" {
			seq, err := q.CardIntentSeq(ctx, pspsimdb.CardIntentSeqParams{TenantID: c.account, ID: after})
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return refer("payment_intent", after, "starting_after").answer(), nil
			case err != nil:
				return answer{}, err
			}
			before = &seq
		}
		rows, err := q.CardListIntents(ctx, pspsimdb.CardListIntentsParams{TenantID: c.account, CreatedFrom: from, CreatedUntil: until, BeforeSeq: before, Lim: lim + 1})
		if err != nil {
			return answer{}, err
		}
		more := len(rows) > int(lim)
		rows = rows[:min(len(rows), int(lim))]
		data := make([]intentJSON, len(rows))
		for i, in := range rows {
			data[i] = s.intentObject(in)
		}
		return jsonAnswer(http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": more, "url": "/v1/payment_intents"}), nil
	})
}

// searchQuery is the one search the simulator understands, the one the
// adapter sends: metadata['key']:'value'.
var searchQuery = regexp.MustCompile(`^\s*metadata\[(?:'([^'\\]+)'|"([^"\\]+)")\]\s*:\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*$`)

// GET /v1/payment_intents/search
func (s *Sim) searchIntents(w http.ResponseWriter, c *call) {
	query, fail := c.p.required("query")
	var m []string
	if fail == nil {
		if m = searchQuery.FindStringSubmatch(query); m == nil {
			fail = invalid("query", "", "The sandbox card simulator searches only by one metadata pair: metadata['key']:'value'.")
		}
	}
	lim, f := limit(c.p)
	if fail == nil {
		fail = f
	}
	var before *int64
	if page, ok := c.p.str("page"); ok && fail == nil {
		b, err := base64.RawURLEncoding.DecodeString(page)
		n, err2 := strconv.ParseInt(string(b), 10, 64)
		if err != nil || err2 != nil || n <= 0 {
			fail = invalid("page", "", "Invalid page: use the next_page of a search result.")
		}
		before = &n
	}
	if fail == nil {
		fail = c.p.unknown()
	}
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	filter, _ := json.Marshal(map[string]string{m[1] + m[2]: m[3] + m[4]})
	s.read(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		rows, err := q.CardSearchIntents(ctx, pspsimdb.CardSearchIntentsParams{TenantID: c.account, Filter: filter, BeforeSeq: before, Lim: lim + 1})
		if err != nil {
			return answer{}, err
		}
		var next *string
		if len(rows) > int(lim) {
			rows = rows[:lim]
			p := base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(rows[lim-1].Seq, 10)))
			next = &p
		}
		data := make([]intentJSON, len(rows))
		for i, in := range rows {
			data[i] = s.intentObject(in)
		}
		return jsonAnswer(http.StatusOK, map[string]any{"object": "search_result", "data": data, "has_more": next != nil,
			"next_page": next, "url": "/v1/payment_intents/search"}), nil
	})
}

// POST /v1/refunds: part or all of what an intent received.
func (s *Sim) createRefund(w http.ResponseWriter, c *call) {
	pi, fail := c.p.required("payment_intent")
	amount, hasAmount, f := c.p.int("amount")
	if fail == nil {
		fail = f
	}
	if fail == nil && hasAmount && amount < 1 {
		fail = invalid("amount", "parameter_invalid_integer", "This value must be greater than or equal to 1.")
	}
	reason, f := c.p.oneOf("reason", "duplicate", "fraudulent", "requested_by_customer")
	if fail == nil {
		fail = f
	}
	md, f := c.p.metadata()
	if fail == nil {
		fail = f
	}
	if fail == nil {
		fail = c.p.unknown()
	}
	if fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.write(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		in, err := q.CardLockIntent(ctx, pspsimdb.CardLockIntentParams{TenantID: c.account, ID: pi})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return refer("payment_intent", pi, "payment_intent").answer(), nil
		case err != nil:
			return answer{}, err
		}
		left := in.AmountReceived - in.AmountRefunded
		switch {
		case in.Status != "succeeded" || in.LatestCharge == nil:
			return invalid("payment_intent", "", "This PaymentIntent does not have a successful charge to refund.").answer(), nil
		case left == 0:
			return invalid("", "charge_already_refunded", "Charge %s has already been refunded.", *in.LatestCharge).answer(), nil
		case !hasAmount:
			amount = left
		case amount > left:
			return invalid("amount", "", "Refund amount (%s) is greater than unrefunded amount on charge (%s)",
				formatAmount(amount, in.Currency), formatAmount(left, in.Currency)).answer(), nil
		}
		now := s.clock()
		r, err := q.CardInsertRefund(ctx, pspsimdb.CardInsertRefundParams{
			TenantID: c.account, ID: "re_" + randomID(24), PaymentIntent: in.ID, Charge: *in.LatestCharge, Amount: amount,
			Currency: in.Currency, Reason: optional(reason, true), Metadata: metadataJSON(md), IdempotencyKey: idempotencyKeyOf(c), CreatedAt: now,
		})
		if err != nil {
			return answer{}, err
		}
		if err := q.CardAddRefunded(ctx, pspsimdb.CardAddRefundedParams{TenantID: c.account, ID: in.ID, Amount: amount, Now: now}); err != nil {
			return answer{}, err
		}
		return jsonAnswer(http.StatusOK, refundObject(r)), nil
	})
}

// GET /v1/balance: what succeeded intents received, less refunds (all
// of it available at once: the sandbox has no settlement delay).
func (s *Sim) balance(w http.ResponseWriter, c *call) {
	if fail := c.p.unknown(); fail != nil {
		writeAnswer(w, c.r, c.reqID, fail.answer())
		return
	}
	s.read(w, c, func(ctx context.Context, q *pspsimdb.Queries, c *call) (answer, error) {
		rows, err := q.CardBalance(ctx, c.account)
		if err != nil {
			return answer{}, err
		}
		if len(rows) == 0 {
			rows = []pspsimdb.CardBalanceRow{{Currency: "brl"}}
		}
		var available, pending []map[string]any
		for _, r := range rows {
			available = append(available, map[string]any{"amount": r.Amount, "currency": r.Currency, "source_types": map[string]int64{"card": r.Amount}})
			pending = append(pending, map[string]any{"amount": 0, "currency": r.Currency, "source_types": map[string]int64{"card": 0}})
		}
		return jsonAnswer(http.StatusOK, map[string]any{"object": "balance", "available": available, "livemode": false, "pending": pending}), nil
	})
}
