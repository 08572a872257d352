package edge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// How long a duplicate waits for the first request with its key to finish
// before being told to retry.
const (
	inFlightWait = 20 * time.Second
	inFlightPoll = 25 * time.Millisecond
)

// idempotent runs exec at most once per (agent, operation, key): a repeat
// of the same request gets the stored response, a different request under
// the same key gets idempotency_conflict, and a repeat arriving while the
// first is still running waits for its response. Storage failures fail
// closed. Without a key, exec just runs.
func (m *mcpEdge) idempotent(ctx context.Context, spec toolSpec, args toolArgs, raw json.RawMessage, header http.Header, exec func() (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	key := args.Meta.IdempotencyKey
	if hk := header.Get("Idempotency-Key"); hk != "" && key != "" && hk != key {
		return nil, protocolError(codeProtocol, "idempotency_key_mismatch", "the Idempotency-Key header and meta[\"idempotency-key\"] differ")
	}
	if key == "" {
		return exec()
	}
	// Keys are per agent and per operation; the hash covers the operation
	// and its arguments (not the JSON-RPC envelope, whose id changes).
	scope := args.Meta.Agent.Profile + " " + spec.name
	sum := sha256.Sum256(append([]byte(spec.name+"\n"), raw...))
	claim := func() (*checkoutv1.ClaimIdempotencyKeyResponse, error) {
		r, err := m.checkout.ClaimIdempotencyKey(ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: scope, Key: key, RequestHash: sum[:]}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	deadline := time.Now().Add(inFlightWait)
	for {
		c, err := claim()
		if err != nil {
			return nil, protocolError(codeProtocol, "unavailable", "idempotency storage is unavailable; retry with the same key")
		}
		switch c.GetOutcome() {
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE:
			return m.executeOnce(ctx, scope, key, exec)
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_REPLAY:
			return replay(c.GetResponse())
		case checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_CONFLICT:
			return nil, protocolError(codeProtocol, "idempotency_conflict", "this idempotency key was already used with a different request; use a new key for a new request")
		}
		if time.Now().After(deadline) {
			return nil, protocolError(codeProtocol, "request_in_flight", "a request with this idempotency key is still being processed; retry later with the same key")
		}
		select {
		case <-ctx.Done():
			return nil, protocolError(codeProtocol, "request_in_flight", "a request with this idempotency key is still being processed; retry later with the same key")
		case <-time.After(inFlightPoll):
		}
	}
}

// executeOnce runs the claimed request and records its outcome: a result is
// stored for replays; a protocol error leaves no outcome, so the key is
// released and a retry executes again.
func (m *mcpEdge) executeOnce(ctx context.Context, scope, key string, exec func() (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
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
	stored, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	if _, err := m.checkout.FinishIdempotencyKey(bg, connect.NewRequest(&checkoutv1.FinishIdempotencyKeyRequest{Scope: scope, Key: key, Response: stored})); err != nil {
		// The work is done and the key stays in flight: duplicates wait and
		// then are told to retry, never executed twice.
		m.log.ErrorContext(ctx, "edge: store idempotent response", "err", err)
	}
	return res, nil
}

func replay(stored []byte) (*mcp.CallToolResult, error) {
	if !json.Valid(stored) {
		return nil, &jsonrpc.Error{Code: codeInternal, Message: "stored response is corrupt"}
	}
	out := json.RawMessage(stored)
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
}
