package edge

import (
	"context"
	"encoding/json"
	"slices"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
)

// AP2 mandates (br.dev.bcp.shopping.ap2_mandate). With the extension
// negotiated every checkout response carries ap2.merchant_authorization:
// the merchant's detached JWS over the JCS form of the response without
// "ap2" — the whole response as the agent receives it, "ucp" envelope
// included, so it is signed here, after wrap. The key stays in the tenants
// service (SignCheckoutAuthorization). Idempotent replays send the stored,
// already authorized, bytes. The mandate itself is verified by the
// checkout service at completion.

// authorize adds ap2.merchant_authorization to a checkout response. A
// response that cannot be signed is not sent: the session is locked to
// AP2, and an unsigned checkout would be one the agent must refuse.
func (m *mcpEdge) authorize(ctx context.Context, out json.RawMessage) (json.RawMessage, error) {
	payload, err := ap2.Payload(out)
	if err != nil {
		return nil, err
	}
	r, err := m.tenants.SignCheckoutAuthorization(ctx, connect.NewRequest(&tenantsv1.SignCheckoutAuthorizationRequest{
		TenantId: tenantFrom(ctx).GetId(), Payload: payload,
	}))
	if err != nil {
		return nil, serviceError(err)
	}
	return ap2.Insert(out, r.Msg.GetMerchantAuthorization())
}

// withoutAP2 is caps without the AP2 extension (see run).
func withoutAP2(caps []string) []string {
	if !slices.Contains(caps, bcpnames.AP2Mandate) {
		return caps
	}
	return slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == bcpnames.AP2Mandate })
}
