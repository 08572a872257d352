package edge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// Idempotency keys are the checkout service's: it keeps a key in the
// statement that writes the request's outcome (services/checkout,
// idempotency.go), answers a repeat with the stored answer as if it had
// executed it, refuses a different request under the same key
// (idempotency_conflict, 409) and says when the first request is still
// running (request_in_flight). The edge names the key (scope and request
// hash) and waits out request_in_flight for a while; the stored answer is
// the service's result, rendered here like any other.

// How long a duplicate waits for the first request with its key to finish
// before being told to retry: inFlightWait, within the request deadline
// (Config.RequestTimeout) less inFlightMargin for the last try and the
// answer. A first request cut short by a failover can hold its key for
// the 2-minute lease; its retries are told request_in_flight in time
// instead of being held past the deadline.
//
// inFlightWait is under a second (issue 32): an agent retrying a
// completion whose outcome is not known yet (its first request's process
// died, and the platform is settling it) is answered at once with
// request_in_flight and Retry-After, and comes back for the outcome,
// instead of being held (20 s waits held 62 of 235 such retries for 20
// s). The key is polled at inFlightPoll, doubling up to inFlightPollMax.
const (
	inFlightWait    = 700 * time.Millisecond
	inFlightPoll    = 25 * time.Millisecond
	inFlightPollMax = 200 * time.Millisecond
	inFlightMargin  = time.Second
)

// idempotencyScope is where a key lives: per binding, per agent profile and
// per operation. The binding is part of it so that a REST request and an
// MCP call that happen to share a key never replay each other's responses
// (their payload shapes differ even when the behaviour is the same).
func idempotencyScope(b binding, profile, operation string) string {
	return string(b) + " " + profile + " " + operation
}

// idempotencyOf is the key a request names, for the operations that change
// something (nil without a key, and for reads: a read is repeated, not
// replayed). The hash covers the operation and its arguments (for MCP not
// the JSON-RPC envelope, whose id changes; for REST the arguments are
// assembled from the headers, the path and the raw body bytes).
func idempotencyOf(b binding, op *operation, profile, key string, raw json.RawMessage) *checkoutv1.Idempotency {
	if key == "" || op.op == bcpschema.OpRead {
		return nil
	}
	sum := sha256.Sum256(append([]byte(op.name+"\n"), raw...))
	return &checkoutv1.Idempotency{Scope: idempotencyScope(b, profile, op.name), Key: key, RequestHash: sum[:]}
}

// awaitKey runs exec and, while the service answers that a request with
// the same key is still running, runs it again (it then replays that
// request's answer) until inFlightWait has passed, or the request's
// deadline is within inFlightMargin.
func awaitKey(ctx context.Context, exec func() (json.RawMessage, error)) (json.RawMessage, error) {
	deadline := time.Now().Add(inFlightWait)
	if d, ok := ctx.Deadline(); ok && d.Add(-inFlightMargin).Before(deadline) {
		deadline = d.Add(-inFlightMargin)
	}
	poll := inFlightPoll
	for {
		out, err := exec()
		pe, ok := errors.AsType[*protoError](err)
		if !ok || pe.code != codeRequestInFlight || !time.Now().Add(poll).Before(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, pe
		case <-time.After(poll):
		}
		poll = min(2*poll, inFlightPollMax)
	}
}

// codeRequestInFlight is the service's answer to a repeat that came while
// the first request with its key still runs; REST sends it with
// Retry-After.
const codeRequestInFlight = "request_in_flight"
