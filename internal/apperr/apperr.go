// Package apperr is the platform's one vocabulary of domain errors and the
// one place they are mapped to connect codes (and back, on the client side,
// so the edge can turn them into JSON-RPC/BCP errors).
package apperr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgconn"
)

// Kind classifies an error the way callers need to react to it.
type Kind int

const (
	KindInternal Kind = iota
	KindInvalidArgument
	KindNotFound
	KindAlreadyExists
	KindFailedPrecondition
	KindPermissionDenied
	KindUnauthenticated
	KindUnavailable
	KindAborted
	KindUnimplemented
)

// Error is a domain error: a kind, a stable machine code (snake_case, e.g.
// "duplicate_domain"), a message safe to show to the caller, and
// optionally the offending field.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Field   string
	Err     error // cause, never shown to callers
}

func (e *Error) Error() string {
	s := e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// New makes an Error.
func New(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is an invalid-argument error on field.
func Invalid(field, code, format string, args ...any) *Error {
	return &Error{Kind: KindInvalidArgument, Code: code, Message: fmt.Sprintf(format, args...), Field: field}
}

// NotFound is a not-found error.
func NotFound(code, format string, args ...any) *Error {
	return New(KindNotFound, code, format, args...)
}

// As returns the *Error in err's chain, classifying PostgreSQL and context
// errors it recognises; anything else is internal.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "23505":
			return &Error{Kind: KindAlreadyExists, Code: "already_exists", Message: "already exists", Err: err}
		case "23503":
			return &Error{Kind: KindFailedPrecondition, Code: "reference_missing", Message: "a referenced resource does not exist", Err: err}
		case "23514", "22001", "22P02", "23502":
			return &Error{Kind: KindInvalidArgument, Code: "invalid_value", Message: "a value is out of range or malformed", Err: err}
		case "42501":
			// RLS refused the row: do not reveal that it exists.
			return &Error{Kind: KindNotFound, Code: "not_found", Message: "not found", Err: err}
		case "40001", "40P01":
			return &Error{Kind: KindAborted, Code: "conflict_retry", Message: "concurrent update, retry", Err: err}
		case "57P01", "57P02", "57P03", "53300":
			return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "database unavailable", Err: err}
		}
		// Class 08: connection exceptions (the server went away mid-request).
		if strings.HasPrefix(pg.Code, "08") {
			return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "database unavailable", Err: err}
		}
	}
	if pgconn.Timeout(err) {
		return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "a dependency is unavailable", Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "request cancelled or timed out", Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) || pgconn.SafeToRetry(err) {
		return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "a dependency is unavailable", Err: err}
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return FromConnect(ce)
	}
	return &Error{Kind: KindInternal, Code: "internal", Message: "internal error", Err: err}
}

// IsKind reports whether err classifies as kind.
func IsKind(err error, kind Kind) bool {
	e := As(err)
	return e != nil && e.Kind == kind
}

var kindToCode = map[Kind]connect.Code{
	KindInternal:           connect.CodeInternal,
	KindInvalidArgument:    connect.CodeInvalidArgument,
	KindNotFound:           connect.CodeNotFound,
	KindAlreadyExists:      connect.CodeAlreadyExists,
	KindFailedPrecondition: connect.CodeFailedPrecondition,
	KindPermissionDenied:   connect.CodePermissionDenied,
	KindUnauthenticated:    connect.CodeUnauthenticated,
	KindUnavailable:        connect.CodeUnavailable,
	KindAborted:            connect.CodeAborted,
	KindUnimplemented:      connect.CodeUnimplemented,
}

// Metadata keys carrying the machine code and field across connect calls.
const (
	headerCode  = "Bcp-Error-Code"
	headerField = "Bcp-Error-Field"
)

// ToConnect maps err to a connect error. Internal errors carry no detail.
func ToConnect(err error) *connect.Error {
	e := As(err)
	ce := connect.NewError(kindToCode[e.Kind], errors.New(e.Message))
	ce.Meta().Set(headerCode, e.Code)
	if e.Field != "" {
		ce.Meta().Set(headerField, e.Field)
	}
	return ce
}

// FromConnect rebuilds the domain error a service returned.
func FromConnect(ce *connect.Error) *Error {
	kind := KindInternal
	for k, c := range kindToCode {
		if c == ce.Code() {
			kind = k
		}
	}
	switch ce.Code() {
	case connect.CodeDeadlineExceeded, connect.CodeCanceled, connect.CodeResourceExhausted:
		kind = KindUnavailable
	}
	code := ce.Meta().Get(headerCode)
	if code == "" {
		code = ce.Code().String()
	}
	return &Error{Kind: kind, Code: code, Message: ce.Message(), Field: ce.Meta().Get(headerField), Err: ce}
}

// Interceptor is the server-side connect interceptor that maps every error
// a handler returns through ToConnect and turns panics into internal
// errors (logged with the stack, never sent to the caller).
func Interceptor(logger *slog.Logger) connect.Interceptor {
	return &interceptor{logger: logger}
}

type interceptor struct{ logger *slog.Logger }

func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (resp connect.AnyResponse, err error) {
		defer func() {
			if r := recover(); r != nil {
				i.logger.ErrorContext(ctx, "panic in handler", "procedure", req.Spec().Procedure, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				resp, err = nil, connect.NewError(connect.CodeInternal, errors.New("internal error"))
			}
		}()
		resp, err = next(ctx, req)
		if err != nil {
			err = i.mapErr(ctx, req.Spec().Procedure, err)
		}
		return resp, err
	}
}

func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) (err error) {
		defer func() {
			if r := recover(); r != nil {
				i.logger.ErrorContext(ctx, "panic in stream handler", "procedure", conn.Spec().Procedure, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = connect.NewError(connect.CodeInternal, errors.New("internal error"))
			}
		}()
		if err = next(ctx, conn); err != nil {
			err = i.mapErr(ctx, conn.Spec().Procedure, err)
		}
		return err
	}
}

func (i *interceptor) mapErr(ctx context.Context, procedure string, err error) error {
	return MapError(ctx, i.logger, procedure, err)
}

// MapError is what the interceptor does to a handler's error: a domain
// error becomes its connect error (internal ones logged, sent without
// detail). In-process direct calls (internal/direct) use it too.
func MapError(ctx context.Context, logger *slog.Logger, procedure string, err error) error {
	// Only an error that is itself already mapped passes as it is (an
	// inner interceptor's, or a direct call's returned unwrapped). One
	// wrapped by this service is classified by its outermost domain error,
	// and one received over HTTP (a wire error) is rebuilt: connect never
	// sends a wire error's metadata on, so passing it through would drop
	// its code and field.
	if ce, ok := err.(*connect.Error); ok && ce.Meta().Get(headerCode) != "" && !connect.IsWireError(ce) { //nolint:errorlint // only an unwrapped one passes as it is (above)
		return ce
	}
	e := As(err)
	if e.Kind == KindInternal {
		logger.ErrorContext(ctx, "internal error", "procedure", procedure, "err", err.Error())
	}
	return ToConnect(e)
}

// Violations are every rule a value breaks, in the order they are checked:
// a write answers the first as its error, a validate-only call all of them.
type Violations []*Error

// Add records err (nil: nothing).
func (v *Violations) Add(err error) {
	if err != nil {
		*v = append(*v, As(err))
	}
}

// First is the first violation, or nil.
func (v Violations) First() error {
	if len(v) == 0 {
		return nil
	}
	return v[0]
}
