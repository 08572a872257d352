package tenants

import (
	"bytes"
	"context"

	"connectrpc.com/connect"
	"github.com/go-jose/go-jose/v4"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// maxAuthorizationPayload bounds what SignCheckoutAuthorization signs (a
// checkout is a few KB; the MCP body limit is 1 MiB).
const maxAuthorizationPayload = 1 << 20

// SignCheckoutAuthorization is internal: the AP2 merchant_authorization of
// a checkout response, a detached JWS by the tenant's current key (the
// same key, kid and rotation as its RFC 9421 response signatures, so the
// profile's signing_keys verify both). Only canonical JSON objects are
// signed, which keeps this signing oracle to checkouts.
func (s *Service) SignCheckoutAuthorization(ctx context.Context, req *connect.Request[tenantsv1.SignCheckoutAuthorizationRequest]) (*connect.Response[tenantsv1.SignCheckoutAuthorizationResponse], error) {
	id, err := parseTenantID(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	payload := req.Msg.GetPayload()
	if len(payload) == 0 || len(payload) > maxAuthorizationPayload || payload[0] != '{' {
		return nil, apperr.Invalid("payload", "invalid_payload", "the payload must be a checkout's canonical JSON (at most %d bytes)", maxAuthorizationPayload)
	}
	if c, err := ap2.Canonical(payload); err != nil || !bytes.Equal(c, payload) {
		return nil, apperr.Invalid("payload", "invalid_payload", "the payload must be RFC 8785 canonical JSON")
	}
	ctx = tenancy.With(ctx, id)
	k, priv, err := s.currentKey(ctx, id)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: priv, KeyID: k.kid}}, nil)
	if err != nil {
		return nil, err
	}
	auth, err := ap2.Sign(signer, payload)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SignCheckoutAuthorizationResponse{MerchantAuthorization: auth, Kid: k.kid}), nil
}

// SetAP2Mandates switches the AP2 mandates extension on or off (an opt-in
// capability: bcpnames.DefaultCapabilities leaves it out). The row's
// change notification refreshes every edge's profile and negotiation.
func (s *Service) SetAP2Mandates(ctx context.Context, req *connect.Request[tenantsv1.SetAP2MandatesRequest]) (*connect.Response[tenantsv1.SetAP2MandatesResponse], error) {
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).SetTenantCapability(ctx, tenantsdb.SetTenantCapabilityParams{
			TenantID: id, Capability: bcpnames.AP2Mandate, Enabled: req.Msg.GetEnabled(),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "ap2 mandates set", "tenant_id", id, "enabled", req.Msg.GetEnabled())
	t, err := s.loadTenant(ctx, id)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.SetAP2MandatesResponse{Tenant: t}), nil
}
