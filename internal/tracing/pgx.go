package tracing

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// QueryTracer is a pgx tracer that makes each statement run inside a
// recorded trace a client span named by its sqlc query name ("-- name:
// GetCheckout :one" → "GetCheckout"), else by its first words ("SELECT",
// "INSERT INTO orders.orders"): never its text or its arguments. A batch
// (pgstore sends most statements behind a set_config in one) is one span,
// named by its last statement. Statements outside a trace (river's
// polling, sweeps) make no span.
type QueryTracer struct{}

// PgxTracer returns the pgx tracer for a pool (nil when p is nil: none).
func (p *Provider) PgxTracer() pgx.QueryTracer {
	if p == nil {
		return nil
	}
	return QueryTracer{}
}

var attrDBSystem = attribute.String("db.system.name", "postgresql")

// sqlSpanKey marks the contexts this tracer started a span in: pgx also
// hands TraceQueryEnd the caller's own context (the rows of a batch when
// no batch tracer is set), whose span is not the tracer's to end.
type sqlSpanKey struct{}

func startSQL(ctx context.Context, sql string, attrs ...attribute.KeyValue) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	name, op := StatementName(sql)
	ctx, sp := Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, attrDBSystem, attribute.String("db.operation.name", op))...))
	return context.WithValue(ctx, sqlSpanKey{}, sp)
}

func endSQL(ctx context.Context, err error, attrs ...attribute.KeyValue) {
	sp, ok := ctx.Value(sqlSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		sp.SetStatus(codes.Error, "")
		attrs = append(attrs, AttrOutcome.String("error"))
	}
	sp.SetAttributes(attrs...)
	sp.End()
}

func (QueryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return startSQL(ctx, data.SQL)
}

func (QueryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if data.Err != nil {
		endSQL(ctx, data.Err)
		return
	}
	endSQL(ctx, nil, attribute.Int64("db.response.returned_rows", data.CommandTag.RowsAffected()))
}

func (QueryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if data.Batch == nil || len(data.Batch.QueuedQueries) == 0 {
		return ctx
	}
	q := data.Batch.QueuedQueries
	return startSQL(ctx, q[len(q)-1].SQL, attribute.Int("db.operation.batch.size", len(q)))
}

func (QueryTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (QueryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	endSQL(ctx, data.Err)
}

// StatementName names a statement for a span, and says its operation
// (SELECT, INSERT, …): the sqlc query name when it has one, else its first
// keyword and, for INSERT, UPDATE and DELETE, the table.
func StatementName(sql string) (name, op string) {
	s := strings.TrimSpace(sql)
	if rest, ok := strings.CutPrefix(s, "-- name: "); ok {
		line, body, _ := strings.Cut(rest, "\n")
		if f := strings.Fields(line); len(f) > 0 && isIdent(f[0]) {
			name = f[0]
		}
		s = strings.TrimSpace(body)
	}
	// Skip other leading comments.
	for strings.HasPrefix(s, "--") {
		_, s, _ = strings.Cut(s, "\n")
		s = strings.TrimSpace(s)
	}
	words := strings.Fields(s)
	if len(words) > 0 {
		op = strings.ToUpper(words[0])
		if !isIdent(op) {
			op = "SQL"
		}
	} else {
		op = "SQL"
	}
	if name != "" {
		return name, op
	}
	name = op
	table := ""
	switch op {
	case "INSERT", "DELETE":
		if len(words) > 2 {
			table = words[2] // INSERT INTO t, DELETE FROM t
		}
	case "UPDATE":
		if len(words) > 1 {
			table = words[1]
		}
	}
	if table != "" && isIdent(strings.ReplaceAll(table, ".", "_")) {
		name += " " + table
	}
	return name, op
}

// isIdent: letters, digits and underscores, at most 63 of them.
func isIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
