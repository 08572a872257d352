package tracing

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// scrubbing is the exporter every span leaves through: it drops what the
// libraries record by default that may carry a secret or buyer data —
// callers' addresses and user agents, URL paths and queries (server spans
// keep the route pattern, client spans the origin), headers, statements,
// error texts — and redacts any remaining value that looks like an e-mail,
// a bearer token or a PEM block.
type scrubbing struct{ sdktrace.SpanExporter }

func (s scrubbing) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, sp := range spans {
		out[i] = scrubSpan(sp)
	}
	return s.SpanExporter.ExportSpans(ctx, out)
}

// scrubSpan returns sp, or a cleaned copy of it.
func scrubSpan(sp sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	if cleanAttrs(sp.Attributes()) && sp.Status().Description == "" && cleanEvents(sp.Events()) {
		return sp
	}
	stub := tracetest.SpanStubFromReadOnlySpan(sp)
	stub.Attributes = scrubAttrs(stub.Attributes)
	if stub.Status.Code == codes.Error {
		stub.Status.Description = ""
	}
	for i := range stub.Events {
		stub.Events[i].Attributes = scrubAttrs(stub.Events[i].Attributes)
	}
	return stub.Snapshot()
}

// dropped are attribute keys never exported (prefixes end in '.').
var dropped = []string{
	"url.query", "url.path", "client.address", "client.port", "network.peer.address", "network.peer.port",
	"user_agent.original", "http.request.header.", "http.response.header.", "db.query.text", "db.statement",
	"enduser.", "exception.message", "exception.stacktrace", "http.url", "http.target", "net.peer.",
	"rpc.request.metadata.", "rpc.response.metadata.",
}

func isDropped(k string) bool {
	for _, d := range dropped {
		if k == d || (strings.HasSuffix(d, ".") && strings.HasPrefix(k, d)) {
			return true
		}
	}
	return false
}

// secretLike matches values that look like an e-mail, a bearer or basic
// credential, a PEM block or a key with a well-known prefix.
var secretLike = regexp.MustCompile(`(?i)[^\s@"]+@[^\s@"]+\.[a-z]{2,}|bearer\s|basic\s|-----BEGIN|\b(sk|rk|pk|whsec)_(live|test)_|bcp_(key|sk)_`)

func cleanAttrs(as []attribute.KeyValue) bool {
	for _, a := range as {
		if isDropped(string(a.Key)) || a.Key == "url.full" {
			return false
		}
		if a.Value.Type() == attribute.STRING && secretLike.MatchString(a.Value.AsString()) {
			return false
		}
	}
	return true
}

func cleanEvents(es []sdktrace.Event) bool {
	for _, e := range es {
		if !cleanAttrs(e.Attributes) {
			return false
		}
	}
	return true
}

func scrubAttrs(as []attribute.KeyValue) []attribute.KeyValue {
	out := as[:0:0]
	for _, a := range as {
		k := string(a.Key)
		switch {
		case isDropped(k):
			continue
		case k == "url.full":
			a = attribute.String(k, origin(a.Value.AsString()))
		case a.Value.Type() == attribute.STRING && secretLike.MatchString(a.Value.AsString()):
			a = attribute.String(k, "[redacted]")
		}
		out = append(out, a)
	}
	return out
}

// origin is the scheme and host of a URL ("" when it is none).
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
