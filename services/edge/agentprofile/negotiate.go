package agentprofile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/bcpdev/bcp/internal/bcpnames"
)

// BusinessOffer is the business side of negotiation: what the tenant's
// discovery profile advertises.
type BusinessOffer struct {
	// Version is the business ucp.version (default bcpnames.Version).
	Version         string
	Capabilities    map[string][]CapabilityEntry
	PaymentHandlers map[string][]HandlerEntry
}

// OfferFromProfileJSON builds the offer from a rendered business profile
// (the /.well-known/bcp body, e.g. json.Marshal of an edge.Profile; its
// single-string extends decodes as a one-parent Extends). Taking JSON keeps
// this package free of an import of the edge package, which uses it.
func OfferFromProfileJSON(doc []byte) (BusinessOffer, error) {
	var w struct {
		UCP struct {
			Version         string                       `json:"version"`
			Capabilities    map[string][]CapabilityEntry `json:"capabilities"`
			PaymentHandlers map[string][]HandlerEntry    `json:"payment_handlers"`
		} `json:"ucp"`
	}
	if err := json.Unmarshal(doc, &w); err != nil {
		return BusinessOffer{}, fmt.Errorf("agentprofile: business profile: %w", err)
	}
	if w.UCP.Version == "" {
		return BusinessOffer{}, errors.New("agentprofile: business profile has no ucp.version")
	}
	return BusinessOffer{Version: w.UCP.Version, Capabilities: w.UCP.Capabilities, PaymentHandlers: w.UCP.PaymentHandlers}, nil
}

// Result is a negotiated intersection. Treat it as read-only; it may be
// cached per (business profile, agent profile) pair.
type Result struct {
	// Version is the negotiated protocol version, echoed in every response.
	Version string
	// Capabilities maps each negotiated capability to its version.
	Capabilities map[string]string
	// PaymentHandlers are the business's handler entries whose name the
	// agent's profile also lists.
	PaymentHandlers map[string][]HandlerEntry
	// Incompatible is true when checkout is not in the intersection: the
	// edge answers capabilities_incompatible (a business outcome, HTTP 200 /
	// JSON-RPC result with ucp.status "error"), not a protocol error.
	Incompatible bool

	parents map[string][]string // extends of each negotiated capability
}

// ResponseCapability is one entry of a response's ucp.capabilities.
type ResponseCapability struct {
	Version string `json:"version"`
}

// Negotiate computes the business/agent intersection (digest §2.5).
//
//  1. The agent's ucp.version must equal the business version (BCP
//     advertises one version and no supported_versions yet), otherwise
//     *Error version_unsupported.
//  2. A business capability is kept when the agent lists the same name
//     with at least one identical version string; the highest common
//     version (YYYY-MM-DD sorts as text) is chosen.
//  3. Extensions whose parents are gone are pruned (one parent: it must
//     remain; several: at least one must remain), repeated to a fixpoint so
//     chains collapse. The business's extends is authoritative: our schemas
//     define how an extension composes, whatever the agent declares.
//  4. Payment handlers: see PaymentHandlers in doc.go.
func Negotiate(business BusinessOffer, agent *Profile) (*Result, error) {
	if agent == nil {
		return nil, errors.New("agentprofile: Negotiate without an agent profile")
	}
	version := business.Version
	if version == "" {
		version = bcpnames.Version
	}
	if agent.version != version {
		return nil, &Error{
			Code:    CodeVersionUnsupported,
			Message: fmt.Sprintf("agent profile version %q is not supported; this business supports %s", clip(agent.version, 40), version),
		}
	}
	r := &Result{
		Version:         version,
		Capabilities:    make(map[string]string, len(business.Capabilities)),
		PaymentHandlers: map[string][]HandlerEntry{},
		parents:         make(map[string][]string, len(business.Capabilities)),
	}
	for name, offered := range business.Capabilities {
		listed := agent.caps[name]
		best, found := "", false
		var extends Extends
		for _, b := range offered {
			if b.Version == "" || (found && b.Version <= best) {
				continue
			}
			for _, a := range listed {
				if a.Version == b.Version {
					best, found, extends = b.Version, true, b.Extends
					break
				}
			}
		}
		if found {
			r.Capabilities[name] = best
			r.parents[name] = slices.Clone([]string(extends))
		}
	}
	for changed := true; changed; {
		changed = false
		for name, ps := range r.parents {
			if len(ps) == 0 || slices.ContainsFunc(ps, r.Has) {
				continue
			}
			delete(r.Capabilities, name)
			delete(r.parents, name)
			changed = true
		}
	}
	for name, hs := range business.PaymentHandlers {
		if len(agent.handlers[name]) > 0 {
			r.PaymentHandlers[name] = cloneHandlers(hs)
		}
	}
	r.Incompatible = !r.Has(bcpnames.Checkout)
	return r, nil
}

// Has reports whether name is in the intersection.
func (r *Result) Has(name string) bool {
	_, ok := r.Capabilities[name]
	return ok
}

// Names returns the negotiated capability names, sorted (e.g. for
// bcpschema.NewValidator).
func (r *Result) Names() []string { return slices.Sorted(maps.Keys(r.Capabilities)) }

// ResponseCapabilities is the ucp.capabilities of a response to an
// operation whose root capability is root (bcpnames.Checkout for checkout
// tools, bcpnames.Order for orders and order webhooks): the root and the
// negotiated extensions that extend it (digest §2.5 "Response capability
// selection"), never cart/order in a checkout response. An extension of a
// relevant extension is relevant too, since its additions land in the same
// payload. Empty when root was not negotiated.
func (r *Result) ResponseCapabilities(root string) map[string][]ResponseCapability {
	out := map[string][]ResponseCapability{}
	v, ok := r.Capabilities[root]
	if !ok {
		return out
	}
	out[root] = []ResponseCapability{{Version: v}}
	for changed := true; changed; {
		changed = false
		for name, ps := range r.parents {
			if _, done := out[name]; done || len(ps) == 0 {
				continue
			}
			if slices.ContainsFunc(ps, func(p string) bool { _, in := out[p]; return in }) {
				out[name] = []ResponseCapability{{Version: r.Capabilities[name]}}
				changed = true
			}
		}
	}
	return out
}
