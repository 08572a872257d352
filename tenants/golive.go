package tenants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// The go-live checklist (issue 34): what a merchant still lacks before an
// agent can buy. The registry answers for what it holds (domains, payment
// handlers and their last connection test, API keys, the agent auth
// policy, AP2 and signing keys); the catalog and pricing services answer
// for products and shipping, through their connect APIs (this service
// never reads their schemas).

// Clients are the services the checklist asks. A nil client leaves its
// items UNKNOWN.
type Clients struct {
	Catalog catalogv1connect.CatalogServiceClient
	Pricing pricingv1connect.PricingServiceClient
}

// UseClients wires the services the checklist asks (platform, after the
// clients are built).
func (s *Service) UseClients(c Clients) { s.clients = c }

// Checklist item keys, in the order a merchant goes through them.
const (
	// ItemActive is listed only while the operator has the store
	// suspended.
	ItemActive         = "active"
	ItemDomain         = "domain"
	ItemPaymentHandler = "payment_handler"
	ItemProduct        = "product"
	ItemShipping       = "shipping"
	ItemAgentAccess    = "agent_access"
	ItemAP2            = "ap2"
)

var brasilia = func() *time.Location {
	if l, err := time.LoadLocation("America/Sao_Paulo"); err == nil {
		return l
	}
	return time.FixedZone("BRT", -3*3600)
}()

func (s *Service) GetGoLiveChecklist(ctx context.Context, req *connect.Request[tenantsv1.GetGoLiveChecklistRequest]) (*connect.Response[tenantsv1.GetGoLiveChecklistResponse], error) {
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	c, err := s.checklist(ctx, id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetGoLiveChecklistResponse{Checklist: c}), nil
}

// maxChecklists bounds ListGoLiveChecklists (the console shows 50 a page).
const maxChecklists = 100

func (s *Service) ListGoLiveChecklists(ctx context.Context, req *connect.Request[tenantsv1.ListGoLiveChecklistsRequest]) (*connect.Response[tenantsv1.ListGoLiveChecklistsResponse], error) {
	raw := req.Msg.GetTenantIds()
	if len(raw) > maxChecklists {
		return nil, apperr.Invalid("tenant_ids", "too_many_tenants", "at most %d tenants at once", maxChecklists)
	}
	ids := make([]uuid.UUID, len(raw))
	for i, r := range raw {
		id, err := uuid.Parse(r)
		if err != nil {
			return nil, apperr.Invalid(fmt.Sprintf("tenant_ids[%d]", i), "invalid_tenant_id", "tenant ids must be UUIDs")
		}
		ids[i] = id
	}
	out := make([]*tenantsv1.GoLiveChecklist, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = s.checklist(ctx, id)
		}()
	}
	wg.Wait()
	resp := &tenantsv1.ListGoLiveChecklistsResponse{}
	for i, c := range out {
		switch {
		case errs[i] != nil && apperr.IsKind(errs[i], apperr.KindNotFound):
		case errs[i] != nil:
			return nil, errs[i]
		default:
			resp.Checklists = append(resp.Checklists, c)
		}
	}
	return connect.NewResponse(resp), nil
}

// registryFacts is what the checklist reads of the registry, in one
// transaction.
type registryFacts struct {
	tenant   *tenantsv1.Tenant
	handlers []tenantsdb.TenantsPaymentHandler
	tests    map[string]tenantsdb.TenantsHandlerTest
	profiles []string // of the live API keys
}

func (s *Service) checklist(ctx context.Context, id uuid.UUID) (*tenantsv1.GoLiveChecklist, error) {
	ctx = tenancy.With(ctx, id)
	f := registryFacts{tests: map[string]tenantsdb.TenantsHandlerTest{}}
	err := pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		row, err := q.GetTenantByID(ctx, id)
		if err != nil {
			return err
		}
		domains, err := q.ListDomains(ctx, id)
		if err != nil {
			return err
		}
		f.tenant = toProto(row, domains)
		if f.handlers, err = q.ListPaymentHandlers(ctx, id); err != nil {
			return err
		}
		tests, err := q.ListHandlerTests(ctx, id)
		if err != nil {
			return err
		}
		for _, t := range tests {
			f.tests[t.HandlerID] = t
		}
		f.profiles, err = q.ListLiveAPIKeyProfiles(ctx, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("tenant_not_found", "no tenant %s", id)
	}
	if err != nil {
		return nil, err
	}
	ref := f.tenant.GetSlug()
	var product, shipping *tenantsv1.ChecklistItem
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); product = s.productItem(ctx, ref) }()
	go func() { defer wg.Done(); shipping = s.shippingItem(ctx, ref) }()
	wg.Wait()
	items := []*tenantsv1.ChecklistItem{
		domainItem(f.tenant),
		handlerItem(f, ref),
		product,
		shipping,
		agentAccessItem(f, ref),
		s.ap2Item(ctx, f.tenant, ref),
	}
	if f.tenant.GetStatus() == tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED {
		// Only while suspended: a merchant the operator stopped sells
		// nothing, whatever else is ready.
		items = append([]*tenantsv1.ChecklistItem{{Key: ItemActive, State: stateMissing, Label: "Loja ativa", LabelEn: "Store active",
			Detail: "A loja está suspensa pelo operador: agentes e compradores recebem 403.", DetailEn: "Suspended: agents and buyers get 403 until the operator resumes it.",
			Command: "bcpctl tenant resume " + ref}}, items...)
	}
	out := &tenantsv1.GoLiveChecklist{TenantId: id.String(), Items: items}
	for _, it := range items {
		switch it.GetState() {
		case tenantsv1.ChecklistState_CHECKLIST_STATE_NOT_REQUIRED:
			continue
		case tenantsv1.ChecklistState_CHECKLIST_STATE_DONE:
			out.Done++
		}
		out.Required++
	}
	out.Ready = out.Done == out.Required
	return out, nil
}

const (
	stateDone        = tenantsv1.ChecklistState_CHECKLIST_STATE_DONE
	stateMissing     = tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING
	stateNotRequired = tenantsv1.ChecklistState_CHECKLIST_STATE_NOT_REQUIRED
	stateUnknown     = tenantsv1.ChecklistState_CHECKLIST_STATE_UNKNOWN
)

// DevOnlyDomain reports whether a domain can only be reached on the
// operator's own machine or a test network (RFC 2606/6761 names): a
// production store needs a public one.
func DevOnlyDomain(d string) bool {
	for _, suffix := range []string{".localhost", ".test", ".invalid", ".example", ".local", ".internal"} {
		if strings.HasSuffix(d, suffix) {
			return true
		}
	}
	return false
}

func domainItem(t *tenantsv1.Tenant) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemDomain, Label: "Domínio da loja", LabelEn: "Store domain",
		Command: "bcpctl domain add " + t.GetSlug() + " <domain> --primary"}
	d := t.GetPrimaryDomain()
	switch {
	case d == "":
		it.State, it.Detail, it.DetailEn = stateMissing, "A loja não tem domínio.", "The store has no domain."
	case t.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_PRODUCTION && DevOnlyDomain(d):
		it.State = stateMissing
		it.Detail = d + " só funciona na máquina do operador: uma loja em produção precisa de um domínio público (peça ao operador)."
		it.DetailEn = d + " only resolves on the operator's machine: a production store needs a public domain."
	default:
		it.State, it.Detail, it.DetailEn = stateDone, d, d
		it.Command = ""
	}
	return it
}

func handlerItem(f registryFacts, ref string) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemPaymentHandler, Label: "Meio de pagamento com conexão testada", LabelEn: "Payment handler with a passing connection test",
		AdminPath: "/admin/pagamentos"}
	if len(f.handlers) == 0 {
		it.State = stateMissing
		it.Detail = "Nenhum meio de pagamento configurado."
		it.DetailEn = "No payment handler."
		it.Command = "bcpctl handler set " + ref + " --preset pix-sandbox"
		return it
	}
	// The newest passing test wins; otherwise say what the first handler
	// lacks.
	var best *tenantsdb.TenantsHandlerTest
	var bestHandler tenantsdb.TenantsPaymentHandler
	for _, h := range f.handlers {
		if t, ok := f.tests[h.ID]; ok && t.Ok && (best == nil || t.TestedAt.After(best.TestedAt)) {
			best, bestHandler = &t, h
		}
	}
	if best != nil {
		it.State, it.DoneTime = stateDone, timestamppb.New(best.TestedAt)
		sandbox, sandboxEn := "", ""
		if bestHandler.Environment == "sandbox" {
			sandbox, sandboxEn = " (sandbox: só pagamentos de teste)", " (sandbox: test payments only)"
		}
		it.Detail = fmt.Sprintf("%s%s: conexão testada com sucesso em %s (horário de Brasília).", bestHandler.ID, sandbox, best.TestedAt.In(brasilia).Format("02/01/2006 15:04"))
		it.DetailEn = fmt.Sprintf("%s%s: connection test passed at %s.", bestHandler.ID, sandboxEn, best.TestedAt.UTC().Format(time.RFC3339))
		it.AdminPath = "/admin/pagamentos/" + bestHandler.ID
		return it
	}
	h := f.handlers[0]
	it.State, it.AdminPath = stateMissing, "/admin/pagamentos/"+h.ID
	it.Command = "bcpctl handler test " + ref + " " + h.ID
	if t, ok := f.tests[h.ID]; ok {
		it.Detail = fmt.Sprintf("%s: o teste de conexão falhou em %s (%s): %s", h.ID, t.TestedAt.In(brasilia).Format("02/01/2006 15:04"), t.Code, t.Message)
		it.DetailEn = fmt.Sprintf("%s: the connection test failed at %s (%s); fix the handler and test again.", h.ID, t.TestedAt.UTC().Format(time.RFC3339), t.Code)
		return it
	}
	it.Detail = h.ID + ": conexão ainda não testada (ou alterada depois do último teste): use “Testar conexão”."
	it.DetailEn = h.ID + ": connection not tested since it was last set."
	return it
}

func (s *Service) productItem(ctx context.Context, ref string) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemProduct, Label: "Produto ativo com estoque", LabelEn: "Active product in stock",
		AdminPath: "/admin/produtos", Command: "bcpctl catalog import " + ref + " <file.json|file.csv>"}
	if s.clients.Catalog == nil {
		it.State, it.Detail, it.DetailEn = stateUnknown, "Catálogo indisponível.", "The catalog service is not reachable from the tenant registry."
		return it
	}
	resp, err := s.clients.Catalog.SalesReadiness(ctx, connect.NewRequest(&catalogv1.SalesReadinessRequest{}))
	if err != nil {
		s.log.WarnContext(ctx, "go-live checklist: catalog", "err", err)
		it.State, it.Detail, it.DetailEn = stateUnknown, "Catálogo indisponível.", "The catalog service did not answer: "+apperr.As(err).Message
		return it
	}
	if title := resp.Msg.GetInStockTitle(); title != "" {
		it.State, it.Command = stateDone, ""
		it.Detail = "“" + title + "” está à venda com estoque."
		it.DetailEn = "“" + title + "” is active and in stock."
		return it
	}
	active := resp.Msg.GetActiveProducts()
	it.State = stateMissing
	if active == 0 {
		it.Detail, it.DetailEn = "Nenhum produto ativo no catálogo.", "No active product in the catalog."
	} else {
		it.Detail = fmt.Sprintf("%d produto(s) ativo(s), nenhum com estoque.", active)
		it.DetailEn = fmt.Sprintf("%d active product(s), none in stock.", active)
	}
	return it
}

func (s *Service) shippingItem(ctx context.Context, ref string) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemShipping, Label: "Frete ou retirada", LabelEn: "Shipping rates or pickup",
		AdminPath: "/admin/frete", Command: "bcpctl shipping rate add " + ref + " --title PAC --price 19,90"}
	if s.clients.Pricing == nil {
		it.State, it.Detail, it.DetailEn = stateUnknown, "Serviço de frete indisponível.", "The pricing service is not reachable from the tenant registry."
		return it
	}
	rates, err := s.clients.Pricing.ListShippingRates(ctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	var pickups *connect.Response[pricingv1.ListPickupLocationsResponse]
	if err == nil {
		pickups, err = s.clients.Pricing.ListPickupLocations(ctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
	}
	if err != nil {
		s.log.WarnContext(ctx, "go-live checklist: pricing", "err", err)
		it.State, it.Detail, it.DetailEn = stateUnknown, "Serviço de frete indisponível.", "The pricing service did not answer: "+apperr.As(err).Message
		return it
	}
	nr, np := 0, 0
	for _, r := range rates.Msg.GetRates() {
		if r.GetActive() {
			nr++
		}
	}
	for _, l := range pickups.Msg.GetLocations() {
		if l.GetActive() {
			np++
		}
	}
	if nr+np == 0 {
		it.State = stateMissing
		it.Detail = "Nenhuma tarifa de frete nem ponto de retirada ativos: o agente não tem como escolher a entrega."
		it.DetailEn = "No active shipping rate or pickup point: an agent cannot choose a delivery."
		return it
	}
	it.State, it.Command = stateDone, ""
	it.Detail = fmt.Sprintf("%s e %s ativos.", plural(nr, "tarifa de frete", "tarifas de frete"), plural(np, "ponto de retirada", "pontos de retirada"))
	it.DetailEn = fmt.Sprintf("%s and %s active.", plural(nr, "shipping rate", "shipping rates"), plural(np, "pickup point", "pickup points"))
	return it
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func agentAccessItem(f registryFacts, ref string) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemAgentAccess, Label: "Acesso de agentes", LabelEn: "Agent access (API key or signatures)",
		AdminPath: "/admin/agentes", Command: "bcpctl apikey create " + ref + " --agent-profile https://<agent>/profile.json"}
	dev := f.tenant.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT
	usable, refused := 0, 0
	for _, p := range f.profiles {
		if checkProfileURL(p, dev) == "" {
			usable++
		} else {
			refused++
		}
	}
	signature := f.tenant.GetAgentAuthPolicy() == tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE
	switch {
	case usable > 0 && !signature:
		it.State, it.Command = stateDone, ""
		it.Detail = plural(usable, "chave de API de agente ativa.", "chaves de API de agente ativas.")
		it.DetailEn = plural(usable, "live agent API key.", "live agent API keys.")
	case signature:
		it.State, it.Command = stateDone, ""
		it.Detail = "Agentes se identificam por assinatura (RFC 9421) com as chaves do seu perfil."
		it.DetailEn = "Agents authenticate by RFC 9421 signatures with their profile's keys (policy signature)."
	case refused > 0:
		it.State = stateMissing
		it.Detail = plural(refused, "chave de API presa a um perfil http, recusado fora do ambiente development: crie uma para um perfil https.",
			"chaves de API presas a perfis http, recusados fora do ambiente development: crie uma para um perfil https.")
		it.DetailEn = plural(refused, "API key is bound to an http agent profile, refused outside development.", "API keys are bound to http agent profiles, refused outside development.")
	default:
		it.State = stateMissing
		it.Detail = "Nenhuma chave de API de agente: crie uma para o perfil do agente (ou exija assinaturas em Agentes)."
		it.DetailEn = "No agent API key (and the auth policy is not signature)."
	}
	return it
}

func (s *Service) ap2Item(ctx context.Context, t *tenantsv1.Tenant, ref string) *tenantsv1.ChecklistItem {
	it := &tenantsv1.ChecklistItem{Key: ItemAP2, Label: "Mandatos AP2", LabelEn: "AP2 mandates", AdminPath: "/admin/configuracoes"}
	if !slices.Contains(t.GetCapabilities(), bcpnames.AP2Mandate) {
		it.State = stateNotRequired
		it.Detail, it.DetailEn = "Desligados; ligue em Loja se quiser exigir mandatos AP2.", "Off (optional): `bcpctl ap2 on "+ref+"` turns them on."
		return it
	}
	id, _ := uuid.Parse(t.GetId())
	if _, _, err := s.currentKey(ctx, id); err != nil {
		if apperr.As(err).Code != "no_signing_key" {
			s.log.WarnContext(ctx, "go-live checklist: signing key", "err", err)
		}
		it.State, it.AdminPath = stateMissing, "/admin/chaves"
		it.Command = "bcpctl keys rotate " + ref + " --delay 0"
		it.Detail = "Ligados, mas a loja não tem chave de assinatura utilizável para a autorização do comerciante: gere uma em Chaves."
		it.DetailEn = "On, but the store has no usable signing key for its merchant authorizations."
		return it
	}
	it.State = stateDone
	it.Detail = "Ligados: as respostas de checkout levam a autorização do comerciante."
	it.DetailEn = "On: checkout answers carry the merchant authorization; agents must send checkout mandates."
	return it
}

// RecordPaymentHandlerTest keeps a connection test's outcome (payments'
// TestHandler calls it); the operator token is refused, so only a test
// that ran can be recorded.
func (s *Service) RecordPaymentHandlerTest(ctx context.Context, req *connect.Request[tenantsv1.RecordPaymentHandlerTestRequest]) (*connect.Response[tenantsv1.RecordPaymentHandlerTestResponse], error) {
	if svcauth.Principal(ctx) != "service" {
		return nil, apperr.New(apperr.KindPermissionDenied, "internal_only", "connection tests are recorded by the payments service only")
	}
	id, err := parseTenantID(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	msg := req.Msg.GetMessage()
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	ctx = tenancy.With(ctx, id)
	var n int64
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		n, err = tenantsdb.New(tx).RecordHandlerTest(ctx, tenantsdb.RecordHandlerTestParams{
			TenantID: id, HandlerID: req.Msg.GetHandlerId(), Ok: req.Msg.GetOk(), Code: req.Msg.GetCode(), Message: msg,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, apperr.NotFound("handler_not_found", "tenant has no payment handler %q", req.Msg.GetHandlerId())
	}
	return connect.NewResponse(&tenantsv1.RecordPaymentHandlerTestResponse{}), nil
}
