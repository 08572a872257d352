package apperr

import (
	"errors"
	"net/http"
	"testing"

	"connectrpc.com/connect"
)

// Every kind has one wire form, the same whichever path renders it.
func TestWireTable(t *testing.T) {
	for kind := range kindToCode {
		if _, ok := wires[kind]; !ok {
			t.Errorf("kind %v has no wire form", kind)
		}
	}
	cases := []struct {
		err    error
		status int
		rpc    int
		retry  bool
	}{
		{New(KindAborted, "concurrent_update", "x"), http.StatusConflict, RPCProtocol, true},
		{New(KindPermissionDenied, "forbidden", "x"), http.StatusForbidden, RPCProtocol, false},
		{Invalid("checkout.id", "invalid", "x"), http.StatusBadRequest, RPCInvalidParams, false},
		{NotFound("not_found", "x"), http.StatusNotFound, RPCProtocol, false},
		{New(KindUnavailable, "unavailable", "x"), http.StatusServiceUnavailable, RPCProtocol, true},
		{errors.New("boom"), http.StatusInternalServerError, RPCInternal, false},
		// A kind relayed from another service keeps its form.
		{connect.NewError(connect.CodeAborted, errors.New("x")), http.StatusConflict, RPCProtocol, true},
	}
	for _, c := range cases {
		w, _ := WireOf(c.err)
		if w.HTTPStatus != c.status || w.RPCCode != c.rpc || w.Retry != c.retry {
			t.Errorf("%v: %+v, want %d %d retry=%v", c.err, w, c.status, c.rpc, c.retry)
		}
	}
}
