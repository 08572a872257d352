package stripecard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stripe/stripe-go/v85"
)

// poster sends a Charge's form POSTs the way stripe-go's backend does
// (BackendImplementation.CallRaw with MaxNetworkRetries 0, no telemetry,
// no logging) without what it does per request besides: its header map
// built by Add after Add, the log calls' arguments, the body copied to
// learn its length (withLength), its closures. The same bytes go out
// (the headers are those stripe-go's NewRequest wrote once, for this key;
// TestPosterIsStripeGos), through the same *http.Client, and the same
// answers come back: an answer of 400 or more is stripe-go's own
// *stripe.Error (ResponseToError), any other is decoded into v with its
// LastResponse set, and an error of the client is returned as it is.
type poster struct {
	hc      *http.Client
	be      *stripe.BackendImplementation
	header  http.Header // with an Idempotency-Key, replaced per request
	methods string      // POST /v1/payment_methods
	intents string      // POST /v1/payment_intents
}

func newPoster(be *stripe.BackendImplementation, key string, hc *http.Client) (*poster, error) {
	template, err := be.NewRequest(http.MethodPost, "/v1/payment_intents", key, "application/x-www-form-urlencoded",
		&stripe.Params{IdempotencyKey: stripe.String("key")})
	if err != nil {
		return nil, err
	}
	if len(template.Header["Idempotency-Key"]) != 1 {
		return nil, fmt.Errorf("stripecard: stripe-go's request has Idempotency-Key %q", template.Header["Idempotency-Key"])
	}
	base := strings.TrimSuffix(template.URL.String(), "/v1/payment_intents")
	return &poster{hc: hc, be: be, header: template.Header, methods: base + "/v1/payment_methods", intents: base + "/v1/payment_intents"}, nil
}

// post sends body (a form) to target with the Idempotency-Key key (which
// keyShaped checked: stripe-go would trim spaces, there are none) and
// decodes the answer into v.
func (p *poster) post(ctx context.Context, target, key string, body []byte, v stripe.LastResponseSetter) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	if err != nil {
		return err
	}
	// One map and one array for all values (Clone), the key in its slot.
	req.Header = p.header.Clone()
	req.Header["Idempotency-Key"][0] = key
	// With its length, and again from the start for net/http when it
	// sends the request again (GetBody, as stripe-go sets it).
	req.Body, req.ContentLength = formBody(body), int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return formBody(body), nil }
	res, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	b, err := readAll(res.Body, res.ContentLength)
	_ = res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode >= 400 {
		return p.be.ResponseToError(res, b)
	}
	err = json.Unmarshal(b, v)
	if err != nil {
		// stripe-go's words (unmarshalJSONVerbose).
		sample := string(b)
		if len(sample) > 500 {
			sample = sample[0:500] + " ..."
		}
		sample = strings.ReplaceAll(sample, "\n", "\\n")
		err = fmt.Errorf("Couldn't deserialize JSON (response status: %v, body sample: '%s'): %v", res.StatusCode, sample, err)
	}
	v.SetLastResponse(&stripe.APIResponse{
		Header: res.Header, IdempotencyKey: res.Header.Get("Idempotency-Key"), RawJSON: b,
		RequestID: res.Header.Get("Request-Id"), Status: res.Status, StatusCode: res.StatusCode,
	})
	return err
}

// formBody is a request body read from its start: an io.NopCloser of a
// *bytes.Reader, which net/http knows is in memory and so writes with the
// headers (one write to the connection; a body it does not know is
// written after the headers are flushed).
func formBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// readAll is io.ReadAll into a buffer of the answer's length (when it is
// known and not large) instead of one grown from 512 bytes.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > 1<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, length+1) // +1: the read that finds the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than it said: grow
		}
	}
}
