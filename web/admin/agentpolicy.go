package admin

import (
	"net/http"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The tenant's agent authentication policy, on the agent access page next
// to the API keys: how agents must authenticate (API key, RFC 9421
// signature, or either), whether every tool response is signed, and
// whether agent signatures must carry created (bounded to the edge's
// window) and a nonce (accepted once): replay-proof signatures.

type agentPolicy struct {
	Policy         string // api_key | signature | either
	SignAll        bool
	RequireCreated bool
	RequireNonce   bool
	Err            string
}

var policyValue = map[tenantsv1.AgentAuthPolicy]string{
	tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER:    "either",
	tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_API_KEY:   "api_key",
	tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE: "signature",
}

func (a *Admin) loadPolicy(r *http.Request) (agentPolicy, error) {
	resp, err := a.opts.Tenants.GetAgentAuthPolicy(r.Context(), connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return agentPolicy{}, err
	}
	p := agentPolicy{Policy: policyValue[resp.Msg.GetPolicy()], SignAll: resp.Msg.GetSignAllResponses(),
		RequireCreated: resp.Msg.GetRequireSignatureCreated(), RequireNonce: resp.Msg.GetRequireSignatureNonce()}
	if p.Policy == "" {
		p.Policy = "either"
	}
	return p, nil
}

func (a *Admin) saveAgentPolicy(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	p := agentPolicy{Policy: r.PostFormValue("policy"), SignAll: r.PostFormValue("sign_all") == "on",
		RequireCreated: r.PostFormValue("require_created") == "on", RequireNonce: r.PostFormValue("require_nonce") == "on"}
	// A nonce is only replay-proof with created: asking for one asks for both.
	p.RequireCreated = p.RequireCreated || p.RequireNonce
	var policy tenantsv1.AgentAuthPolicy
	for k, v := range policyValue {
		if v == p.Policy {
			policy = k
		}
	}
	if policy == tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_UNSPECIFIED {
		p.Err = "Escolha como os agentes se autenticam."
		d := apiKeysData{Errors: fieldErrors{}, AuthPolicy: p}
		if err := a.listKeys(r, &d); err != nil {
			a.serviceError(rw, r, err)
			return
		}
		a.render(rw, r, http.StatusUnprocessableEntity, "apikeys", a.newPage(r, "Acesso de agentes", "agentes", d))
		return
	}
	_, err := a.opts.Tenants.SetAgentAuthPolicy(r.Context(), connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: s.tenant.String(), Policy: policy,
		SignAllResponses: &p.SignAll, RequireSignatureCreated: &p.RequireCreated, RequireSignatureNonce: &p.RequireNonce}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "admin: agent auth policy set", "tenant_id", s.tenant, "by", s.user.GetId(), "policy", p.Policy, "sign_all", p.SignAll,
		"require_created", p.RequireCreated, "require_nonce", p.RequireNonce)
	http.Redirect(rw, r, "/admin/agentes?ok=salvo", http.StatusSeeOther)
}
