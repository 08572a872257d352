package payments

import (
	"context"
	"net/url"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
)

// TestHandler is the merchant's "Testar conexão" (admin, bcpctl handler
// test): it does what a first payment would do at the PSP or processor
// and reports the first failure in words the merchant can act on.
func (s *Service) TestHandler(ctx context.Context, r *connect.Request[paymentsv1.TestHandlerRequest]) (*connect.Response[paymentsv1.TestHandlerResponse], error) {
	resp, err := s.testHandler(ctx, r)
	if err != nil {
		return nil, err
	}
	// The outcome is kept in the tenant registry for the merchant's
	// go-live checklist ("passed at …"); a failure to keep it does not
	// change the answer.
	if tid, terr := tenancy.From(ctx); terr == nil && s.tenants != nil {
		m := resp.Msg
		if _, err := s.tenants.RecordPaymentHandlerTest(ctx, connect.NewRequest(&tenantsv1.RecordPaymentHandlerTestRequest{
			TenantId: tid.String(), HandlerId: r.Msg.GetHandlerId(), Ok: m.GetOk(), Code: m.GetCode(), Message: m.GetMessage(),
		})); err != nil {
			s.log.WarnContext(ctx, "payments: could not record the connection test", "handler", r.Msg.GetHandlerId(), "err", err)
		}
	}
	return resp, nil
}

func (s *Service) testHandler(ctx context.Context, r *connect.Request[paymentsv1.TestHandlerRequest]) (*connect.Response[paymentsv1.TestHandlerResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	h, secrets, err := s.handlerByID(ctx, tid.String(), r.Msg.GetHandlerId())
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, apperr.NotFound("handler_not_found", "this store has no payment handler %q", r.Msg.GetHandlerId())
	}
	base := r.Msg.GetBaseUrl()
	if base == "" && h.Tenant.GetPrimaryDomain() != "" {
		base = "https://" + h.Tenant.GetPrimaryDomain()
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, apperr.Invalid("base_url", "invalid_base_url", "base_url must be the merchant origin, e.g. https://loja.com.br")
	}
	out := &paymentsv1.TestHandlerResponse{}
	report := func(kind string, d apipix.Diagnosis) {
		out.Code, out.Message = d.Code, d.Merchant
		s.metrics.pspUnusable.WithLabelValues(kind, "test_"+d.Code).Inc()
	}
	c, err := s.connectionOf(ctx, *h, secrets, "")
	if err != nil && !unusable(err) {
		return nil, err
	}
	if err == nil && !h.isPix() {
		var proc card.Processor
		if proc, err = s.cardProcessor(ctx, tid.String(), h.ID, c); err == nil {
			err = checkProcessor(ctx, proc)
		}
		if err == nil {
			out.Ok, out.Code, out.Message = true, "ok", "Conexão com o processador de cartões verificada: as credenciais foram aceitas."
			return connect.NewResponse(out), nil
		}
	}
	if err != nil {
		report(kindName(h.isPix()), diagnose(err))
		return connect.NewResponse(out), nil
	}
	psp, err := s.pixClient(ctx, tid.String(), h.ID, c)
	if err != nil {
		report("pix", diagnose(err))
		return connect.NewResponse(out), nil
	}
	chave := c.chave
	if chave == "" {
		chave = h.Config.PixKey
	}
	if chave == "" {
		report("pix", apipix.Diagnose(&apipix.ConfigError{Code: "missing_pix_key", Msg: "configure a chave Pix do recebedor (pix_key)"}))
		return connect.NewResponse(out), nil
	}
	hook, err := s.ensureHook(ctx, h.ID, h.Environment)
	if err != nil {
		return nil, err
	}
	webhook := s.webhookURL(base, hook.ID)
	out.WebhookUrl = webhook
	if err := psp.TestConnection(ctx, chave, webhook); err != nil {
		report("pix", diagnose(err))
		return connect.NewResponse(out), nil
	}
	// Registered: the first payment need not register again.
	registered := webhook + " " + chave + " " + settingsKey(tid.String(), h.ID, c.settings.PSP)
	if err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		return q.SetHookURL(ctx, paymentsdb.SetHookURLParams{TenantID: tid, ID: hook.ID, RegisteredUrl: registered})
	}); err != nil {
		return nil, err
	}
	out.Ok, out.Code = true, "ok"
	out.Message = "Conexão com o PSP verificada: token OAuth2 obtido com o certificado de cliente, e webhook registrado para a chave " + chave + " em " + webhook + "."
	return connect.NewResponse(out), nil
}

func kindName(isPix bool) string {
	if isPix {
		return "pix"
	}
	return "card"
}

// credentialChecker is a processor client that can check its credentials
// with an authenticated read.
type credentialChecker interface {
	CheckCredentials(ctx context.Context) error
}

func checkProcessor(ctx context.Context, p card.Processor) error {
	if c, ok := p.(credentialChecker); ok {
		return c.CheckCredentials(ctx)
	}
	return nil
}
