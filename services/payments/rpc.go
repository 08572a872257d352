package payments

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// GetPayment returns an attempt's current state.
func (s *Service) GetPayment(ctx context.Context, r *connect.Request[paymentsv1.GetPaymentRequest]) (*connect.Response[paymentsv1.GetPaymentResponse], error) {
	a, err := s.getAttempt(ctx, r.Msg.GetAttemptId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.GetPaymentResponse{Attempt: toProto(a)}), nil
}

// CancelPayment stops an attempt for good, or reports that its money
// moved (stop).
func (s *Service) CancelPayment(ctx context.Context, r *connect.Request[paymentsv1.CancelPaymentRequest]) (*connect.Response[paymentsv1.CancelPaymentResponse], error) {
	a, err := s.stop(ctx, r.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.CancelPaymentResponse{Attempt: toProto(a)}), nil
}

// RefundPayment refunds all or part of a paid attempt.
func (s *Service) RefundPayment(ctx context.Context, r *connect.Request[paymentsv1.RefundPaymentRequest]) (*connect.Response[paymentsv1.RefundPaymentResponse], error) {
	row, err := s.refund(ctx, r.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.RefundPaymentResponse{Refund: refundToProto(row)}), nil
}

// SimulatePixPayment pays a sandbox Pix charge at the PSP simulator.
func (s *Service) SimulatePixPayment(ctx context.Context, r *connect.Request[paymentsv1.SimulatePixPaymentRequest]) (*connect.Response[paymentsv1.SimulatePixPaymentResponse], error) {
	a, err := s.simulatePixPayment(ctx, r.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&paymentsv1.SimulatePixPaymentResponse{Attempt: toProto(a)}), nil
}

// ListAlerts lists the merchant's most recent payment alerts.
func (s *Service) ListAlerts(ctx context.Context, _ *connect.Request[paymentsv1.ListAlertsRequest]) (*connect.Response[paymentsv1.ListAlertsResponse], error) {
	out := &paymentsv1.ListAlertsResponse{}
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		rows, err := q.ListAlerts(ctx, tid)
		for _, a := range rows {
			out.Alerts = append(out.Alerts, &paymentsv1.Alert{Id: a.ID, Kind: a.Kind, Message: a.Message, AttemptId: a.AttemptID, CreateTime: timestamppb.New(a.CreatedAt)})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

var hookIDPattern = regexp.MustCompile(`^whk_[a-z0-9]{26}$`)

// maxWebhookItems bounds one notification (PSPs batch a few).
const maxWebhookItems = 1000

// IngestPixWebhook authenticates a PSP notification and stores each Pix
// in it once (by endToEndId) with its reconciliation job; OK means stored.
func (s *Service) IngestPixWebhook(ctx context.Context, r *connect.Request[paymentsv1.IngestPixWebhookRequest]) (*connect.Response[paymentsv1.IngestPixWebhookResponse], error) {
	m := r.Msg
	notFound := apperr.NotFound("unknown_hook", "no Pix webhook %q", m.GetHookId())
	if !hookIDPattern.MatchString(m.GetHookId()) {
		s.metrics.webhooks.WithLabelValues("unknown_hook").Inc()
		return nil, notFound
	}
	var hook paymentsdb.PaymentsHook
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		hook, err = q.GetHook(ctx, paymentsdb.GetHookParams{TenantID: tid, ID: m.GetHookId()})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		s.metrics.webhooks.WithLabelValues("unknown_hook").Inc()
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	psp, _, err := s.pixOf(ctx, hook.TenantID.String(), hook.HandlerID, hook.Environment)
	if err != nil {
		// A handler that cannot build its PSP client cannot check who
		// calls: nothing is stored, and the PSP will deliver again.
		s.log.ErrorContext(ctx, "payments: Pix webhook for a handler without usable PSP settings", "hook_id", hook.ID, "err", err.Error())
		return nil, apperr.New(apperr.KindUnavailable, "psp_not_configured", "the handler's PSP settings are not usable")
	}
	header := http.Header{}
	for k, v := range m.GetHeaders() {
		header.Set(k, v)
	}
	if err := psp.AuthenticateWebhook(ctx, pix.Webhook{Header: header, Body: m.GetBody(), ClientCertChain: m.GetClientCertChain()}); err != nil {
		s.log.WarnContext(ctx, "payments: Pix webhook rejected", "hook_id", hook.ID, "err", err.Error())
		s.metrics.webhooks.WithLabelValues("unauthenticated").Inc()
		return nil, apperr.New(apperr.KindUnauthenticated, "invalid_signature", "the webhook is not authenticated")
	}
	items, err := parseNotification(m.GetBody())
	if err != nil {
		s.metrics.webhooks.WithLabelValues("invalid").Inc()
		return nil, err
	}
	// Each Pix is stored on its own (one statement; a notification that
	// fails half way is delivered again, and what was stored is then a
	// duplicate), due for the resolve sweep a minute later, then
	// reconciled here: the sweep is only the backstop.
	out := &paymentsv1.IngestPixWebhookResponse{}
	var stored []string
	due := s.now().Add(reconcileBackstop)
	for _, it := range items {
		var n int64
		err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
			var err error
			n, err = q.InsertReceipt(ctx, paymentsdb.InsertReceiptParams{TenantID: tid, E2eID: it.p.EndToEndID, HookID: hook.ID,
				HandlerID: hook.HandlerID, Txid: it.p.Txid, Amount: it.amount, Horario: it.p.Horario, Raw: it.raw, ReconcileAfter: &due})
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			out.Duplicates++
			continue
		}
		out.Stored++
		stored = append(stored, it.p.EndToEndID)
	}
	s.metrics.webhooks.WithLabelValues("stored").Add(float64(out.Stored))
	s.metrics.webhooks.WithLabelValues("duplicate").Add(float64(out.Duplicates))
	s.log.InfoContext(ctx, "payments: Pix webhook stored", "hook_id", hook.ID, "stored", out.Stored, "duplicates", out.Duplicates)
	// Once begun, a reconciliation finishes even if the PSP hangs up.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
	defer cancel()
	for _, e2e := range stored {
		_ = s.reconcileOrRetry(rctx, e2e, 1, &webhookPSP{handlerID: hook.HandlerID, psp: psp}) // logged; the sweep tries again
	}
	return connect.NewResponse(out), nil
}

type notifiedPix struct {
	p      pix.Pix
	amount int64
	raw    json.RawMessage
}

// parseNotification reads {"pix":[...]} and checks each item's fields
// against the API Pix rules.
func parseNotification(body []byte) ([]notifiedPix, error) {
	var note pix.Notification
	if err := json.Unmarshal(body, &note); err != nil {
		return nil, apperr.Invalid("body", "invalid_notification", "the body is not a Pix notification {\"pix\":[...]}: %v", err)
	}
	if len(note.Pix) > maxWebhookItems {
		return nil, apperr.Invalid("body.pix", "invalid_notification", "at most %d Pix per notification", maxWebhookItems)
	}
	var raws struct {
		Pix []json.RawMessage `json:"pix"`
	}
	_ = json.Unmarshal(body, &raws)
	items := make([]notifiedPix, 0, len(note.Pix))
	for i, p := range note.Pix {
		amount, err := pix.ParseValor(p.Valor)
		switch {
		case !pix.EndToEndID.MatchString(p.EndToEndID):
			return nil, apperr.Invalid("body.pix["+itoa(i)+"].endToEndId", "invalid_notification", "endToEndId must match [a-zA-Z0-9]{32}")
		case p.Txid != "" && !pix.TxidAny.MatchString(p.Txid):
			return nil, apperr.Invalid("body.pix["+itoa(i)+"].txid", "invalid_notification", "txid must match [a-zA-Z0-9]{1,35}")
		case err != nil:
			return nil, apperr.Invalid("body.pix["+itoa(i)+"].valor", "invalid_notification", "valor must match \\d{1,10}\\.\\d{2}")
		case p.Horario.IsZero():
			return nil, apperr.Invalid("body.pix["+itoa(i)+"].horario", "invalid_notification", "horario is required (RFC 3339)")
		}
		items = append(items, notifiedPix{p: p, amount: amount, raw: raws.Pix[i]})
	}
	return items, nil
}

func itoa(i int) string { return strconv.Itoa(i) }
