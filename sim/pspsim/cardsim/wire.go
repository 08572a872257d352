package cardsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// apiVersion is what the simulator answers in Stripe-Version when the
// request names none (stripe-go v85's version).
const apiVersion = "2026-03-25.dahlia"

// answer is an HTTP answer of the API: what an idempotency key saves.
type answer struct {
	status int
	body   []byte
}

func jsonAnswer(status int, v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own shapes are marshalled: a bug, answered as Stripe's 500.
		return internalAnswer
	}
	return answer{status: status, body: b}
}

var internalAnswer = answer{status: http.StatusInternalServerError,
	body: []byte(`{"error":{"message":"An unknown error occurred","type":"api_error"}}`)}

// apiError is Stripe's error object (docs.stripe.com/api/errors).
type apiError struct {
	status        int
	Charge        string          `json:"charge,omitempty"`
	Code          string          `json:"code,omitempty"`
	DeclineCode   string          `json:"decline_code,omitempty"`
	DocURL        string          `json:"doc_url,omitempty"`
	Message       string          `json:"message"`
	Param         string          `json:"param,omitempty"`
	PaymentIntent json.RawMessage `json:"payment_intent,omitempty"`
	PaymentMethod json.RawMessage `json:"payment_method,omitempty"`
	Type          string          `json:"type"`
}

func (e *apiError) answer() answer {
	if e.Code != "" && e.DocURL == "" {
		e.DocURL = docURL(e.Code)
	}
	return jsonAnswer(e.status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func docURL(code string) string {
	return "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
}

func invalid(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

func noSuch(object, id, param string) *apiError {
	e := invalid(param, "resource_missing", "No such %s: '%s'", object, id)
	e.status = http.StatusNotFound
	return e
}

// writeAnswer sends a, with Stripe's headers.
func writeAnswer(w http.ResponseWriter, r *http.Request, reqID string, a answer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, no-store")
	h.Set("Request-Id", reqID)
	v := r.Header.Get("Stripe-Version")
	if v == "" || len(v) > 64 {
		v = apiVersion
	}
	h.Set("Stripe-Version", v)
	if a.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="Stripe"`)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// params are a request's form (POST body) or query (GET), read field by
// field; what no field read is refused as Stripe does (parameter_unknown).
type params struct {
	v    url.Values
	used map[string]bool
}

func newParams(v url.Values) *params { return &params{v: v, used: map[string]bool{}} }

func (p *params) str(name string) (string, bool) {
	vs, ok := p.v[name]
	if !ok {
		return "", false
	}
	p.used[name] = true
	return vs[len(vs)-1], true
}

func (p *params) required(name string) (string, *apiError) {
	v, ok := p.str(name)
	if !ok || v == "" {
		return "", invalid(name, "parameter_missing", "Missing required param: %s.", name)
	}
	return v, nil
}

func (p *params) int(name string) (int64, bool, *apiError) {
	v, ok := p.str(name)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, invalid(name, "parameter_invalid_integer", "Invalid integer: %s", clip(v))
	}
	return n, true, nil
}

func (p *params) bool(name string) (bool, bool, *apiError) {
	v, ok := p.str(name)
	if !ok {
		return false, false, nil
	}
	switch v {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, invalid(name, "", "Invalid boolean: %s", clip(v))
}

func (p *params) oneOf(name string, allowed ...string) (string, *apiError) {
	v, ok := p.str(name)
	if !ok {
		return "", nil
	}
	if !slices.Contains(allowed, v) {
		return "", invalid(name, "", "Invalid %s: must be one of %s", name, strings.Join(allowed, ", "))
	}
	return v, nil
}

var indexed = regexp.MustCompile(`^([a-z_]+)\[([0-9]*)\]$`)

// list reads name[0], name[1], … (or name[]) in index order.
func (p *params) list(name string) []string {
	type item struct {
		i int
		v string
	}
	var items []item
	for k, vs := range p.v {
		m := indexed.FindStringSubmatch(k)
		if m == nil || m[1] != name {
			continue
		}
		p.used[k] = true
		i, _ := strconv.Atoi(m[2])
		for _, v := range vs {
			items = append(items, item{i, v})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int { return a.i - b.i })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

var metadataKey = regexp.MustCompile(`^metadata\[(.*)\]$`)

// metadata reads metadata[k]=v with Stripe's limits (50 keys, keys up to
// 40 characters, values up to 500); an empty value leaves the key out.
func (p *params) metadata() (map[string]string, *apiError) {
	md := map[string]string{}
	for k, vs := range p.v {
		m := metadataKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		p.used[k] = true
		switch {
		case m[1] == "" || len(m[1]) > 40 || strings.ContainsAny(m[1], "[]"):
			return nil, invalid(k, "", "Invalid metadata key: keys are 1 to 40 characters without square brackets.")
		case len(vs[len(vs)-1]) > 500:
			return nil, invalid(k, "", "Metadata values can have up to 500 characters, but you passed in a value that is %d characters.", len(vs[len(vs)-1]))
		case vs[len(vs)-1] != "":
			md[m[1]] = vs[len(vs)-1]
		}
	}
	if len(md) > 50 {
		return nil, invalid("metadata", "", "You can specify up to 50 keys, but you passed in %d.", len(md))
	}
	return md, nil
}

// unknown refuses the first parameter no field read.
func (p *params) unknown() *apiError {
	var rest []string
	for k := range p.v {
		if !p.used[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	slices.Sort(rest)
	return invalid(clip(rest[0]), "parameter_unknown", "Received unknown parameter: %s", clip(rest[0]))
}

// clip shortens what a message quotes back.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// formatAmount writes an amount as Stripe's messages do ("R$20.00").
func formatAmount(cents int64, currency string) string {
	sym := strings.ToUpper(currency) + " "
	switch currency {
	case "brl":
		sym = "R$"
	case "usd":
		sym = "$"
	}
	return fmt.Sprintf("%s%d.%02d", sym, cents/100, cents%100)
}
