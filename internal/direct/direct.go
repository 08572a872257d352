// Package direct runs a service call in process without HTTP or protobuf
// encoding, for the clients protoc-gen-bcp-direct generates (package
// <service>direct). The call goes through the same steps as one over the
// internal listener: the caller's token and tenant are authorized by the
// service's policy (svcauth.Direct), the handler sees only the context
// authorization gives it, its errors are mapped by apperr.MapError and a
// panic becomes an internal error. Messages are copied both ways, so
// caller and service never share one (as over the wire).
package direct

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
)

// Chain is how a direct client reaches its service.
type Chain struct {
	// Authorize gives the handler's context for a call to procedure, or
	// the refusal (svcauth.Direct).
	Authorize func(ctx context.Context, procedure string) (context.Context, error)
	Logger    *slog.Logger
	// Trace, when set, wraps each authorized call in a span of the
	// caller's trace (internal/tracing), as the connect interceptors do
	// over the wire: it returns the handler's context (authorization's,
	// which keeps none of the caller's values) with the span, and end,
	// which is given the call's outcome. Nil: none.
	Trace func(caller, handler context.Context, procedure string, req proto.Message) (_ context.Context, end func(error))
}

// NotMounted is the answer of a direct client whose service has not been
// built yet (during startup).
func NotMounted(procedure string) error {
	return connect.NewError(connect.CodeUnavailable, fmt.Errorf("%s: service not started yet", procedure))
}

// Unary calls fn, a connect handler method, as the internal listener
// would.
func Unary[Req, Res any](ctx context.Context, ch Chain, procedure string, req *connect.Request[Req], fn func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error)) (res *connect.Response[Res], err error) {
	log := ch.Logger
	if log == nil {
		log = slog.Default()
	}
	hctx, err := ch.Authorize(ctx, procedure)
	if err != nil {
		return nil, apperr.MapError(ctx, log, procedure, err)
	}
	in := connect.NewRequest(clone(req.Msg))
	for k, v := range req.Header() {
		in.Header()[k] = v
	}
	if ch.Trace != nil {
		var end func(error)
		hctx, end = ch.Trace(ctx, hctx, procedure, any(in.Msg).(proto.Message))
		defer func() { end(err) }() // after the recover below has set err
	}
	defer func() {
		if r := recover(); r != nil {
			log.ErrorContext(hctx, "panic in handler", "procedure", procedure, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, connect.NewError(connect.CodeInternal, errors.New("internal error"))
		}
	}()
	out, err := fn(hctx, in)
	if err != nil {
		return nil, apperr.MapError(hctx, log, procedure, err)
	}
	if out == nil || out.Msg == nil {
		return nil, connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	res = connect.NewResponse(clone(out.Msg))
	for k, v := range out.Header() {
		res.Header()[k] = v
	}
	for k, v := range out.Trailer() {
		res.Trailer()[k] = v
	}
	return res, nil
}

// clone copies a generated message (*T is always a proto.Message here).
func clone[T any](m *T) *T {
	if m == nil {
		return new(T)
	}
	return any(proto.Clone(any(m).(proto.Message))).(*T)
}

// Slot holds a service's handler once it is built: the services of one
// process are built in turn, each taking the others' clients.
type Slot[H any] struct{ p atomic.Pointer[H] }

// Set mounts h.
func (s *Slot[H]) Set(h H) { s.p.Store(&h) }

// Get returns the handler, if mounted.
func (s *Slot[H]) Get() (H, bool) {
	if p := s.p.Load(); p != nil {
		return *p, true
	}
	var zero H
	return zero, false
}
