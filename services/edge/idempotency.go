package edge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// How long a duplicate waits for the first request with its key to finish
// before being told to retry.
const (
	inFlightWait = 20 * time.Second
	inFlightPoll = 25 * time.Millisecond
)

// idempotencyScope is where a key lives: per binding, per agent profile and
// per operation. The binding is part of it so that a REST request and an
// MCP call that happen to share a key never replay each other's responses
// (their payload shapes differ even when the behaviour is the same).
func idempotencyScope(b binding, profile, operation string) string {
	return string(b) + " " + profile + " " + operation
}

// idempotent runs exec at most once per (binding, agent, operation, key): a
// repeat of the same request gets the stored response, a different request
// under the same key gets idempotency_conflict (409), and a repeat arriving
// while the first is still running waits for its response. Storage
// failures fail closed (503). Without a key, exec just runs.
func (m *mcpEdge) idempotent(ctx context.Context, b binding, op *operation, args toolArgs, raw json.RawMessage, exec func() (json.RawMessage, error)) (json.RawMessage, error) {
	key := args.Meta.IdempotencyKey
	if key == "" {
		return exec()
	}
	// The hash covers the operation and its arguments (for MCP not the
	// JSON-RPC envelope, whose id changes; for REST the arguments are
	// assembled from the headers, the path and the raw body bytes).
	scope := idempotencyScope(b, args.Meta.Agent.Profile, op.name)
	sum := sha256.Sum256(append([]byte(op.name+"\n"), raw...))
	claim := func() (*checkoutv1.ClaimIdempotencyKeyResponse, error) {
		r, err := m.checkout.ClaimIdempotencyKey(ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: scope, Key: key, RequestHash: sum[:]}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	inFlight := newProtoError(http.StatusConflict, codeProtocol, "request_in_flight", "a request with this idempotency key is still being processed; retry later with the same key")
	deadline := time.Now().Add(inFlightWait)
	for {
		c, err := claim()
		if err != nil {
			return nil, newProtoError(http.StatusServiceUnavailable, codeProtocol, "unavailable", "idempotency storage is unavailable; retry with the same key")
		}
		switch c.GetOutcome() {
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE:
			return m.executeOnce(ctx, scope, key, exec)
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_REPLAY:
			if !json.Valid(c.GetResponse()) {
				return nil, errors.New("edge: stored idempotent response is corrupt")
			}
			return json.RawMessage(c.GetResponse()), nil
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_CONFLICT:
			return nil, newProtoError(http.StatusConflict, codeProtocol, "idempotency_conflict", "this idempotency key was already used with a different request; use a new key for a new request")
		}
		if time.Now().After(deadline) {
			return nil, inFlight
		}
		select {
		case <-ctx.Done():
			return nil, inFlight
		case <-time.After(inFlightPoll):
		}
	}
}

// executeOnce runs the claimed request and records its outcome: a payload
// is stored for replays; a protocol error leaves no outcome, so the key is
// released and a retry executes again.
func (m *mcpEdge) executeOnce(ctx context.Context, scope, key string, exec func() (json.RawMessage, error)) (json.RawMessage, error) {
	// Detached: once started, the outcome must be recorded even if the
	// caller goes away.
	bg := context.WithoutCancel(ctx)
	res, err := exec()
	if err != nil {
		if _, rerr := m.checkout.ReleaseIdempotencyKey(bg, connect.NewRequest(&checkoutv1.ReleaseIdempotencyKeyRequest{Scope: scope, Key: key})); rerr != nil {
			m.log.WarnContext(ctx, "edge: release idempotency key", "err", rerr)
		}
		return nil, err
	}
	if _, err := m.checkout.FinishIdempotencyKey(bg, connect.NewRequest(&checkoutv1.FinishIdempotencyKeyRequest{Scope: scope, Key: key, Response: res})); err != nil {
		// The work is done and the key stays in flight: duplicates wait and
		// then are told to retry, never executed twice.
		m.log.ErrorContext(ctx, "edge: store idempotent response", "err", err)
	}
	return res, nil
}
