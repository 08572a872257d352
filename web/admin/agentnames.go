package admin

import (
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// agentNamer names agents for the merchant. Agent profile documents carry
// no name (the UCP profile schema has none), so an agent is named by the
// label of the merchant's API key bound to its profile (the newest
// labelled key, revoked or not: old orders keep their name), else by the
// profile URL's host ("agente.example.com").
type agentNamer map[string]string

// agentNames reads the tenant's API keys; on error the names fall back to
// hosts (the page still shows).
func (a *Admin) agentNames(r *http.Request) agentNamer {
	n := agentNamer{}
	s := sessionFrom(r.Context())
	if s == nil {
		return n
	}
	resp, err := a.opts.Tenants.ListAPIKeys(r.Context(), connect.NewRequest(&tenantsv1.ListAPIKeysRequest{Tenant: s.tenant.String()}))
	if err != nil {
		a.log.WarnContext(r.Context(), "admin: API keys for agent names", "err", err)
		return n
	}
	newest := map[string]int64{}
	for _, k := range resp.Msg.GetApiKeys() {
		label, u := strings.TrimSpace(k.GetLabel()), k.GetAgentProfileUrl()
		if label == "" || u == "" {
			continue
		}
		at := k.GetCreateTime().AsTime().UnixNano()
		if _, seen := n[u]; !seen || at >= newest[u] {
			n[u], newest[u] = label, at
		}
	}
	return n
}

// Name is the agent's name for a profile URL ("" for none).
func (n agentNamer) Name(profileURL string) string {
	if profileURL == "" {
		return ""
	}
	if name := n[profileURL]; name != "" {
		return name
	}
	if u, err := url.Parse(profileURL); err == nil && u.Host != "" {
		return u.Host
	}
	return profileURL
}
