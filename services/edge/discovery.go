package edge

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Profile is the business discovery profile served at /.well-known/bcp.
// Field order is the order agents see.
type Profile struct {
	UCP         ProfileUCP        `json:"ucp"`
	SigningKeys []json.RawMessage `json:"signing_keys"`
}

// ProfileUCP is the profile's "ucp" object (the key keeps its UCP name).
type ProfileUCP struct {
	Version         string                          `json:"version"`
	Services        map[string][]ServiceEntry       `json:"services"`
	Capabilities    map[string][]CapabilityEntry    `json:"capabilities"`
	PaymentHandlers map[string][]PaymentHandlerItem `json:"payment_handlers"`
}

// ServiceEntry is one transport binding of a service.
type ServiceEntry struct {
	Version   string `json:"version"`
	Spec      string `json:"spec"`
	Transport string `json:"transport"`
	Schema    string `json:"schema,omitempty"`
	Endpoint  string `json:"endpoint"`
}

// CapabilityEntry advertises one capability version.
type CapabilityEntry struct {
	Version string               `json:"version"`
	Spec    string               `json:"spec"`
	Schema  string               `json:"schema"`
	Extends agentprofile.Extends `json:"extends,omitempty"` // a string, or an array for several parents
	Config  json.RawMessage      `json:"config,omitempty"`
}

// PaymentHandlerItem advertises one configured handler instance.
type PaymentHandlerItem struct {
	ID                   string          `json:"id"`
	Version              string          `json:"version"`
	Spec                 string          `json:"spec,omitempty"`
	Schema               string          `json:"schema,omitempty"`
	AvailableInstruments json.RawMessage `json:"available_instruments,omitempty"`
	Config               json.RawMessage `json:"config"`
}

// BuildProfile renders the profile of a tenant as seen on host.
func BuildProfile(d *tenantsv1.GetDiscoveryResponse, baseURL string) *Profile {
	p := &Profile{
		UCP: ProfileUCP{
			Version: bcpnames.Version,
			Services: map[string][]ServiceEntry{
				bcpnames.Service: {{
					Version: bcpnames.Version, Spec: bcpnames.ServiceSpec, Transport: "mcp",
					Schema: bcpnames.MCPSchema, Endpoint: baseURL + "/bcp/mcp",
				}, {
					Version: bcpnames.Version, Spec: bcpnames.ServiceSpec, Transport: "rest",
					Schema: RESTSchema, Endpoint: baseURL + restBase,
				}},
			},
			Capabilities:    map[string][]CapabilityEntry{},
			PaymentHandlers: map[string][]PaymentHandlerItem{},
		},
		SigningKeys: []json.RawMessage{},
	}
	enabled := map[string]bool{}
	for _, c := range d.GetTenant().GetCapabilities() {
		enabled[c] = true
	}
	for _, c := range bcpnames.Capabilities {
		// An extension whose parents are all disabled would be pruned by
		// every agent anyway; do not advertise it, nor the parents that are.
		var parents agentprofile.Extends
		for _, p := range c.Extends {
			if enabled[p] {
				parents = append(parents, p)
			}
		}
		if !enabled[c.Name] || (len(c.Extends) > 0 && len(parents) == 0) {
			continue
		}
		entry := CapabilityEntry{Version: bcpnames.Version, Spec: c.Spec, Schema: c.Schema, Extends: parents}
		if c.Name == bcpnames.AP2Mandate {
			entry.Config = ap2.Config
		}
		p.UCP.Capabilities[c.Name] = []CapabilityEntry{entry}
	}
	for _, h := range d.GetPaymentHandlers() {
		item := PaymentHandlerItem{ID: h.GetId(), Version: h.GetVersion(), Spec: h.GetSpec(), Schema: h.GetSchema(), Config: json.RawMessage(h.GetConfigJson())}
		if ai := h.GetAvailableInstrumentsJson(); ai != "" && ai != "[]" {
			item.AvailableInstruments = json.RawMessage(ai)
		}
		if len(item.Config) == 0 {
			item.Config = json.RawMessage("{}")
		}
		p.UCP.PaymentHandlers[h.GetName()] = append(p.UCP.PaymentHandlers[h.GetName()], item)
	}
	for _, k := range d.GetSigningKeysJson() {
		p.SigningKeys = append(p.SigningKeys, json.RawMessage(k))
	}
	return p
}

// discovery serves /.well-known/bcp with caching headers, keeping the
// rendered body per (tenant, host) until the tenant changes.
type discovery struct {
	data    *tenantData
	baseURL func(host string) string

	mu    sync.RWMutex
	cache map[string]renderedProfile // tenant id + "|" + host
	gen   uint64                     // bumped on invalidation; stale fills are dropped
}

// maxProfiles bounds the rendered-profile cache.
const maxProfiles = 4096

type renderedProfile struct {
	tenantID string
	body     []byte
	etag     string
}

func (d *discovery) get(ctx context.Context, tenantID, host string) (renderedProfile, error) {
	key := tenantID + "|" + strings.ToLower(host)
	d.mu.RLock()
	rp, ok := d.cache[key]
	gen := d.gen
	d.mu.RUnlock()
	if ok {
		return rp, nil
	}
	data, err := d.data.get(ctx, tenantID)
	if err != nil {
		return renderedProfile{}, err
	}
	body, err := json.Marshal(BuildProfile(data, d.baseURL(host)))
	if err != nil {
		return renderedProfile{}, err
	}
	sum := sha256.Sum256(body)
	rp = renderedProfile{tenantID: tenantID, body: body, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		return rp, nil // invalidated meanwhile: serve it, do not keep it
	}
	// Hosts carry arbitrary ports, so keys are attacker-chosen: bound the
	// cache, evicting an arbitrary entry (map order is random).
	for k := range d.cache {
		if len(d.cache) < maxProfiles {
			break
		}
		delete(d.cache, k)
	}
	d.cache[key] = rp
	return rp, nil
}

func (d *discovery) invalidate(tenantID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	for k, rp := range d.cache {
		if rp.tenantID == tenantID {
			delete(d.cache, k)
		}
	}
}

func (d *discovery) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	clear(d.cache)
}

func (d *discovery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := tenantFrom(r.Context())
	rp, err := d.get(r.Context(), t.GetId(), r.Host)
	if err != nil {
		writeServiceError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("ETag", rp.etag)
	h.Set("Vary", "Host")
	if etagMatches(r.Header.Get("If-None-Match"), rp.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rp.body)
	}
}

// etagMatches implements If-None-Match's weak comparison over a list.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimPrefix(strings.TrimSpace(c), "W/")
		if c == "*" || c == etag {
			return true
		}
	}
	return false
}
