package edge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/bcpdev/bcp/internal/tracing"
)

// startOperation starts the span of one operation (an MCP tool call or its
// REST equivalent) inside the listener's request span, when that is
// recorded (internal/tracing): the tool, the binding and the merchant;
// end adds the checkout id and the outcome, as toolMetrics classes them
// (ok, business_error, rejected, failed), and the checkout's status.
// Nothing of the arguments or the answer but those ids and words.
func startOperation(ctx context.Context, req opRequest) (context.Context, func(out json.RawMessage, err error)) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		// tracing.Start would start nothing: skip building the name and
		// attributes.
		return ctx, endNothing
	}
	ctx, sp := tracing.Start(ctx, "tool "+req.op.name, trace.WithAttributes(
		tracing.AttrTool.String(req.op.name), attribute.String("bcp.binding", string(req.binding))))
	if !sp.IsRecording() {
		return ctx, endNothing
	}
	if t := tenantFrom(ctx); t.GetId() != "" {
		sp.SetAttributes(tracing.AttrTenant.String(t.GetId()))
	}
	return ctx, func(out json.RawMessage, err error) {
		defer sp.End()
		var ids struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(req.args, &ids)
		var res struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		outcome := "ok"
		var pe *protoError
		switch {
		case err == nil && isErrorEnvelope(out):
			outcome = "business_error"
		case err == nil:
			_ = json.Unmarshal(out, &res)
		case errors.As(err, &pe) && pe.status < 500:
			outcome = "rejected"
			sp.SetAttributes(attribute.String("bcp.error_code", pe.code))
		default:
			outcome = "failed"
			sp.SetStatus(codes.Error, "")
		}
		for _, id := range []string{ids.ID, res.ID} {
			if strings.HasPrefix(id, "chk_") {
				sp.SetAttributes(tracing.AttrCheckout.String(id))
				break
			}
		}
		if res.Status != "" && len(res.Status) <= 40 {
			sp.SetAttributes(attribute.String("bcp.checkout_status", res.Status))
		}
		sp.SetAttributes(tracing.AttrOutcome.String(outcome))
	}
}

func endNothing(json.RawMessage, error) {}
