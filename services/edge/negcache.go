package edge

import (
	"context"
	"encoding/json"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Negotiation results and their response envelopes, kept.
//
// Every tool call negotiated the merchant's offer with the agent's profile
// and marshalled the response's "ucp" envelope from the result (sorted
// maps, through reflection): the same work with the same answer for every
// call of one agent at one merchant. A result is read-only
// (agentprofile.Result) and depends only on the offer and the profile: it
// is kept per (merchant, profile) — the profile as the fetcher's cache
// holds it, so a refreshed profile is a new key — and stamped with the
// offer generation it was computed under, so a merchant change (which bumps
// offerGen) retires it. Its envelopes are kept per root capability. Both
// maps are bounded: past their size they start over.

// maxNegotiations bounds the kept negotiation results and envelopes.
const maxNegotiations = 4096

type negKey struct {
	tenant  string
	profile *agentprofile.Profile
}

type negEntry struct {
	neg *agentprofile.Result
	gen uint64 // m.offerGen when computed
}

type envKey struct {
	neg        *agentprofile.Result
	capability string
}

// negotiate is agentprofile.Negotiate of the merchant's offer with profile,
// kept until the merchant changes. Errors are offer's as they come and
// Negotiate's as discovery errors.
func (m *mcpEdge) negotiate(ctx context.Context, tenantID string, profile *agentprofile.Profile) (*agentprofile.Result, error) {
	k := negKey{tenant: tenantID, profile: profile}
	m.nmu.Lock()
	e, ok := m.negs[k]
	m.nmu.Unlock()
	m.mu.Lock()
	gen := m.offerGen
	m.mu.Unlock()
	if ok && e.gen == gen {
		return e.neg, nil
	}
	offer, err := m.offer(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	neg, err := agentprofile.Negotiate(offer, profile)
	if err != nil {
		return nil, discoveryError(err)
	}
	m.nmu.Lock()
	if m.negs == nil || len(m.negs) >= maxNegotiations {
		m.negs = map[negKey]negEntry{}
	}
	m.negs[k] = negEntry{neg: neg, gen: gen}
	m.nmu.Unlock()
	return neg, nil
}

// responseEnvelope is the marshalled "ucp" member of a successful response
// of an operation whose root capability is capability: the negotiated
// version, the response capabilities and (checkout only) the negotiated
// payment handlers — {} when none, no member for orders.
func (m *mcpEdge) responseEnvelope(neg *agentprofile.Result, capability string) ([]byte, error) {
	k := envKey{neg: neg, capability: capability}
	m.nmu.Lock()
	env, ok := m.envs[k]
	m.nmu.Unlock()
	if ok {
		return env, nil
	}
	var handlers any = map[string]any{}
	switch {
	case capability == bcpnames.Order:
		handlers = nil // order responses carry no payment handlers
	case len(neg.PaymentHandlers) > 0:
		handlers = neg.PaymentHandlers
	}
	env, err := json.Marshal(envelope{
		Version:         bcpnames.Version,
		Capabilities:    neg.ResponseCapabilities(capability),
		PaymentHandlers: handlers,
	})
	if err != nil {
		return nil, err
	}
	m.nmu.Lock()
	if m.envs == nil || len(m.envs) >= maxNegotiations {
		m.envs = map[envKey][]byte{}
	}
	m.envs[k] = env
	m.nmu.Unlock()
	return env, nil
}
