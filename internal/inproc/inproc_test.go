package inproc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/inproc"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
)

type answering struct {
	checkoutv1connect.UnimplementedCheckoutServiceHandler
}

func (answering) GetCheckout(_ context.Context, r *connect.Request[checkoutv1.GetCheckoutRequest]) (*connect.Response[checkoutv1.GetCheckoutResponse], error) {
	if r.Msg.GetId() == "panic" {
		panic("boom")
	}
	if r.Msg.GetId() == "missing" {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no checkout missing"))
	}
	res := connect.NewResponse(&checkoutv1.GetCheckoutResponse{Result: &checkoutv1.CheckoutResult{Status: "incomplete", CheckoutJson: []byte(`{"id":"` + r.Msg.GetId() + `"}`)}})
	res.Header().Set("X-Served", "inproc")
	return res, nil
}

// A connect unary call is answered whole (message, headers, error
// codes); a panicking handler fails the call instead of the process.
func TestConnectUnary(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(checkoutv1connect.NewCheckoutServiceHandler(answering{}))
	c := checkoutv1connect.NewCheckoutServiceClient(inproc.Client(mux), "http://inproc")
	ctx := context.Background()
	res, err := c.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: "chk_7"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Msg.GetResult().GetCheckoutJson()); got != `{"id":"chk_7"}` || res.Msg.GetResult().GetStatus() != "incomplete" {
		t.Fatalf("answer = %s %s", got, res.Msg.GetResult().GetStatus())
	}
	if res.Header().Get("X-Served") != "inproc" {
		t.Fatalf("header X-Served = %q", res.Header().Get("X-Served"))
	}
	_, err = c.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: "missing"}))
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "no checkout missing") {
		t.Fatalf("not found: %v", err)
	}
	_, err = c.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: "panic"}))
	if err == nil || !strings.Contains(err.Error(), "handler panic: boom") {
		t.Fatalf("panic: %v", err)
	}
}

// Anything else streams: the response arrives as soon as the handler has
// written its header, while the handler is still running.
func TestStreamingResponse(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/connect+proto")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "second")
	})
	req, _ := http.NewRequest(http.MethodPost, "http://inproc/bcp.tenants.v1.TenantsService/WatchChanges", strings.NewReader("x"))
	req.Header.Set("Content-Type", "application/connect+proto")
	req.Header.Set("Connect-Protocol-Version", "1")
	type result struct {
		res *http.Response
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := inproc.Client(h).Do(req)
		got <- result{res, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the response waited for the handler to finish")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(r.res.Body, first); err != nil || string(first) != "first;" {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	close(release)
	rest, err := io.ReadAll(r.res.Body)
	if err != nil || string(rest) != "second" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}
