package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// A repeat whose key another request holds in flight waits for that
// request's answer within the request deadline, not past it: awaitKey
// stops trying inFlightMargin before the deadline and answers
// request_in_flight (retry later with the same key).
func TestAwaitKeyWithinTheRequestDeadline(t *testing.T) {
	inFlight := newProtoError(http.StatusConflict, codeProtocol, codeRequestInFlight, "a request with this idempotency key is still being processed")
	replay := json.RawMessage(`{"id":"chk_1"}`)

	// The deadline is nearer than the margin: one try, then the answer.
	ctx, cancel := context.WithTimeout(context.Background(), inFlightMargin/2)
	defer cancel()
	tries := 0
	out, err := awaitKey(ctx, func() (json.RawMessage, error) {
		tries++
		return nil, inFlight
	})
	if pe, ok := err.(*protoError); !ok || pe.code != codeRequestInFlight || out != nil || tries != 1 {
		t.Fatalf("key in flight, deadline within the margin: %d tries, answer %s, error %v; want 1 try and request_in_flight", tries, out, err)
	}

	// Time left: it tries again and replays the first request's answer.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tries = 0
	out, err = awaitKey(ctx, func() (json.RawMessage, error) {
		if tries++; tries == 1 {
			return nil, inFlight
		}
		return replay, nil
	})
	if err != nil || string(out) != string(replay) || tries != 2 {
		t.Fatalf("key answered on the second try: %d tries, answer %s, error %v; want 2 tries and %s", tries, out, err, replay)
	}
}
