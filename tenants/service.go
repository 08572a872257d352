// Package tenants is the tenant registry service: merchants (tenants),
// their domains, agent API keys, signing keys and payment handler
// configuration. It serves the operator API (bcpctl) and the edge's lookups
// (Host resolution, discovery data, change notifications).
package tenants

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenantcache"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Service implements tenantsv1connect.TenantServiceHandler.
type Service struct {
	pool   *pgxpool.Pool
	sealer sealer.Sealer
	log    *slog.Logger
	watch  *Broadcaster
	// reserved hosts no tenant may own (ReserveHosts).
	reserved []string
	// signCache holds each tenant's live signing keys, unsealed, for
	// SignWithCurrentKey (every complete_checkout response is signed);
	// watch's notifications drop a tenant's entry on any key change.
	signCache *tenantcache.Cache[*liveKeys]
	// lastNonceSweep is when this process last swept expired signature
	// nonces (unix nanos; nonces.go).
	lastNonceSweep atomic.Int64
	// clients are the services the go-live checklist asks (golive.go).
	clients Clients
}

// New returns the service. watch may be nil when the process does not
// serve WatchChanges; signing keys are then read on every signature.
func New(pool *pgxpool.Pool, s sealer.Sealer, watch *Broadcaster, log *slog.Logger) *Service {
	svc := &Service{pool: pool, sealer: s, log: log, watch: watch, signCache: tenantcache.New[*liveKeys](tenantcache.Options{})}
	if watch != nil {
		watch.addLocal(svc.signCache)
	}
	return svc
}

var _ tenantsv1connect.TenantServiceHandler = (*Service)(nil)

// Policy says which token each procedure needs: the edge's lookups are
// internal, everything else is operator-only.
func Policy(procedure string) svcauth.Access {
	switch procedure {
	case tenantsv1connect.TenantServicePingProcedure,
		tenantsv1connect.TenantServiceResolveHostProcedure,
		tenantsv1connect.TenantServiceGetDiscoveryProcedure,
		tenantsv1connect.TenantServiceGetSettingsProcedure,
		tenantsv1connect.TenantServiceWatchChangesProcedure,
		// Agent authentication at the edge and response/webhook signing.
		tenantsv1connect.TenantServiceGetAgentAuthPolicyProcedure,
		tenantsv1connect.TenantServiceAuthenticateAPIKeyProcedure,
		tenantsv1connect.TenantServiceSignWithCurrentKeyProcedure,
		tenantsv1connect.TenantServiceSignCheckoutAuthorizationProcedure,
		// The admin web (issue 6): sign-in, sessions, inviting users, the
		// merchant's own agent API keys and store settings (the admin
		// passes the tenant of the request's Host; keys are shown once
		// and stored hashed).
		tenantsv1connect.TenantServiceListAPIKeysProcedure,
		tenantsv1connect.TenantServiceCreateAPIKeyProcedure,
		tenantsv1connect.TenantServiceRevokeAPIKeyProcedure,
		tenantsv1connect.TenantServiceSetSettingsProcedure,
		tenantsv1connect.TenantServiceInviteMerchantUserProcedure,
		tenantsv1connect.TenantServiceListMerchantUsersProcedure,
		tenantsv1connect.TenantServiceSignInMerchantUserProcedure,
		tenantsv1connect.TenantServiceGetMerchantSessionProcedure,
		tenantsv1connect.TenantServiceEndMerchantSessionProcedure,
		// The admin web's merchant pages (issue 6, item 2): the store name,
		// signing keys, payment handlers (secrets stay write-only) and the
		// agent auth policy, always for the tenant of the request's Host.
		tenantsv1connect.TenantServiceSetTenantNameProcedure,
		tenantsv1connect.TenantServiceSetAP2MandatesProcedure,
		tenantsv1connect.TenantServiceListSigningKeysProcedure,
		tenantsv1connect.TenantServiceRotateSigningKeyProcedure,
		tenantsv1connect.TenantServiceRevokeSigningKeyProcedure,
		tenantsv1connect.TenantServiceSetPaymentHandlerProcedure,
		tenantsv1connect.TenantServiceRemovePaymentHandlerProcedure,
		tenantsv1connect.TenantServiceSetAgentAuthPolicyProcedure,
		// The edges' usage flushes (RecordUsage also refuses the operator
		// token itself); GetUsage stays operator-only.
		tenantsv1connect.TenantServiceRecordUsageProcedure,
		// The payments service's PSP and processor credentials (the
		// procedure refuses the operator token itself).
		tenantsv1connect.TenantServiceGetPaymentHandlerSecretsProcedure,
		// Onboarding (issue 34): the admin's "Primeiros passos" and
		// set-password page; connection tests recorded by the payments
		// service (the procedure refuses the operator token itself).
		tenantsv1connect.TenantServiceGetGoLiveChecklistProcedure,
		tenantsv1connect.TenantServiceCheckPasswordLinkProcedure,
		tenantsv1connect.TenantServiceSetPasswordWithLinkProcedure,
		tenantsv1connect.TenantServiceRecordPaymentHandlerTestProcedure:
		return svcauth.Internal
	case tenantsv1connect.TenantServiceLeaseRateTokensProcedure,
		tenantsv1connect.TenantServiceClaimSignatureNonceProcedure:
		// The edges' rate limit buckets and signature nonce replay cache,
		// for the tenant of the call (the procedures also refuse the
		// operator token themselves).
		return svcauth.Tenant
	}
	return svcauth.Operator
}

func (s *Service) Ping(ctx context.Context, _ *connect.Request[tenantsv1.PingRequest]) (*connect.Response[tenantsv1.PingResponse], error) {
	return connect.NewResponse(&tenantsv1.PingResponse{Service: "tenants", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}

func (s *Service) CreateTenant(ctx context.Context, req *connect.Request[tenantsv1.CreateTenantRequest]) (*connect.Response[tenantsv1.CreateTenantResponse], error) {
	if err := s.checkReserved("domains", req.Msg.GetDomains()...); err != nil {
		return nil, err
	}
	t, err := s.createTenant(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.CreateTenantResponse{Tenant: t}), nil
}

func (s *Service) GetTenant(ctx context.Context, req *connect.Request[tenantsv1.GetTenantRequest]) (*connect.Response[tenantsv1.GetTenantResponse], error) {
	t, err := s.getTenant(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: t}), nil
}

func (s *Service) ListTenants(ctx context.Context, req *connect.Request[tenantsv1.ListTenantsRequest]) (*connect.Response[tenantsv1.ListTenantsResponse], error) {
	var list []*tenantsv1.Tenant
	var next string
	var err error
	if req.Msg.GetQuery() != "" {
		list, next, err = s.searchTenants(ctx, req.Msg.GetPageSize(), req.Msg.GetPageToken(), req.Msg.GetQuery())
	} else {
		list, next, err = s.listTenants(ctx, req.Msg.GetPageSize(), req.Msg.GetPageToken())
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.ListTenantsResponse{Tenants: list, NextPageToken: next}), nil
}

func (s *Service) SetTenantStatus(ctx context.Context, req *connect.Request[tenantsv1.SetTenantStatusRequest]) (*connect.Response[tenantsv1.SetTenantStatusResponse], error) {
	t, err := s.setStatus(ctx, req.Msg.GetTenant(), req.Msg.GetStatus())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetTenantStatusResponse{Tenant: t}), nil
}

func (s *Service) AddDomain(ctx context.Context, req *connect.Request[tenantsv1.AddDomainRequest]) (*connect.Response[tenantsv1.AddDomainResponse], error) {
	if err := s.checkReserved("domain", req.Msg.GetDomain()); err != nil {
		return nil, err
	}
	t, err := s.addDomain(ctx, req.Msg.GetTenant(), req.Msg.GetDomain(), req.Msg.GetPrimary())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.AddDomainResponse{Tenant: t}), nil
}

func (s *Service) RemoveDomain(ctx context.Context, req *connect.Request[tenantsv1.RemoveDomainRequest]) (*connect.Response[tenantsv1.RemoveDomainResponse], error) {
	t, err := s.removeDomain(ctx, req.Msg.GetTenant(), req.Msg.GetDomain())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.RemoveDomainResponse{Tenant: t}), nil
}

func (s *Service) CreateAPIKey(ctx context.Context, req *connect.Request[tenantsv1.CreateAPIKeyRequest]) (*connect.Response[tenantsv1.CreateAPIKeyResponse], error) {
	key, secret, err := s.createAPIKey(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.CreateAPIKeyResponse{ApiKey: key, Secret: secret}), nil
}

func (s *Service) RevokeAPIKey(ctx context.Context, req *connect.Request[tenantsv1.RevokeAPIKeyRequest]) (*connect.Response[tenantsv1.RevokeAPIKeyResponse], error) {
	key, err := s.revokeAPIKey(ctx, req.Msg.GetTenant(), req.Msg.GetApiKeyId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.RevokeAPIKeyResponse{ApiKey: key}), nil
}

func (s *Service) ListAPIKeys(ctx context.Context, req *connect.Request[tenantsv1.ListAPIKeysRequest]) (*connect.Response[tenantsv1.ListAPIKeysResponse], error) {
	keys, err := s.listAPIKeys(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.ListAPIKeysResponse{ApiKeys: keys}), nil
}

func (s *Service) SetPaymentHandler(ctx context.Context, req *connect.Request[tenantsv1.SetPaymentHandlerRequest]) (*connect.Response[tenantsv1.SetPaymentHandlerResponse], error) {
	h, v, err := s.setPaymentHandler(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetPaymentHandlerResponse{Handler: h, Violations: violationsToProto(v)}), nil
}

func (s *Service) GetPaymentHandlerSecrets(ctx context.Context, req *connect.Request[tenantsv1.GetPaymentHandlerSecretsRequest]) (*connect.Response[tenantsv1.GetPaymentHandlerSecretsResponse], error) {
	sec, err := s.paymentHandlerSecrets(ctx, req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetPaymentHandlerSecretsResponse{SecretsJson: sec}), nil
}

func (s *Service) RemovePaymentHandler(ctx context.Context, req *connect.Request[tenantsv1.RemovePaymentHandlerRequest]) (*connect.Response[tenantsv1.RemovePaymentHandlerResponse], error) {
	if err := s.removePaymentHandler(ctx, req.Msg.GetTenant(), req.Msg.GetHandlerId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.RemovePaymentHandlerResponse{}), nil
}

func (s *Service) SetTenantName(ctx context.Context, req *connect.Request[tenantsv1.SetTenantNameRequest]) (*connect.Response[tenantsv1.SetTenantNameResponse], error) {
	t, err := s.setName(ctx, req.Msg.GetTenant(), req.Msg.GetName())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetTenantNameResponse{Tenant: t}), nil
}

func (s *Service) ResolveHost(ctx context.Context, req *connect.Request[tenantsv1.ResolveHostRequest]) (*connect.Response[tenantsv1.ResolveHostResponse], error) {
	t, err := s.resolveHost(ctx, req.Msg.GetHost())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.ResolveHostResponse{Tenant: t}), nil
}

func (s *Service) GetDiscovery(ctx context.Context, req *connect.Request[tenantsv1.GetDiscoveryRequest]) (*connect.Response[tenantsv1.GetDiscoveryResponse], error) {
	d, err := s.discovery(ctx, req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(d), nil
}

func (s *Service) WatchChanges(ctx context.Context, _ *connect.Request[tenantsv1.WatchChangesRequest], stream *connect.ServerStream[tenantsv1.WatchChangesResponse]) error {
	if s.watch == nil {
		return connect.NewError(connect.CodeUnimplemented, errors.New("change notifications are not served by this process"))
	}
	return s.watch.Serve(ctx, stream.Send)
}
