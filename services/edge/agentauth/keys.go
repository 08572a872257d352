package agentauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bcpdev/bcp/httpsig"
)

// KeySource supplies the public signing keys an agent publishes in its
// profile (signing_keys, or keys in the main-branch shape), as raw JWK
// JSON objects. It caches; forceRefresh asks it to refetch the profile
// because a signature names a kid the cached copy lacks (the agent may have
// rotated). The KeySource rate-limits forced refreshes per URL; the
// Authenticator adds its own per-URL floor (Options.ForceRefreshInterval)
// so a flood of unknown kids cannot turn into a flood of fetches either way.
//
// dev is true for development tenants, whose agents may publish profiles
// on http or loopback addresses.
//
// Failures the agent should see as profile errors are *ProfileError; any
// other error is answered 503 unavailable.
//
// The edge adapts services/edge/agentprofile to it:
//
//	type profileKeys struct{ f *agentprofile.Fetcher }
//
//	func (k profileKeys) SigningKeys(ctx context.Context, url string, dev, force bool) ([]json.RawMessage, error) {
//		get := k.f.Get
//		if force {
//			get = k.f.ForceRefresh
//		}
//		p, err := get(ctx, url, dev)
//		var pe *agentprofile.Error
//		if errors.As(err, &pe) {
//			return nil, &agentauth.ProfileError{Code: pe.Code, Message: pe.Message, Status: pe.HTTPStatus(), Err: err}
//		}
//		if err != nil {
//			return nil, err
//		}
//		return p.SigningKeys(), nil
//	}
type KeySource interface {
	SigningKeys(ctx context.Context, profileURL string, dev bool, forceRefresh bool) ([]json.RawMessage, error)
}

// KeySourceFunc adapts a function to KeySource.
type KeySourceFunc func(ctx context.Context, profileURL string, dev bool, forceRefresh bool) ([]json.RawMessage, error)

// SigningKeys implements KeySource.
func (f KeySourceFunc) SigningKeys(ctx context.Context, profileURL string, dev, forceRefresh bool) ([]json.RawMessage, error) {
	return f(ctx, profileURL, dev, forceRefresh)
}

// lookupKey finds kid among raw JWKs. Keys that do not parse are skipped
// (one bad key must not break an agent's other keys); a key found but
// unusable for signatures is key_not_found, one of an unsupported type or
// curve algorithm_unsupported.
func lookupKey(raws []json.RawMessage, kid string) (httpsig.PublicKey, bool, error) {
	for _, raw := range raws {
		j, err := httpsig.ParseJWK(raw)
		if err != nil || j.Kid != kid {
			continue
		}
		pk, err := j.PublicKey()
		switch {
		case errors.Is(err, httpsig.ErrAlgorithmUnsupported):
			return httpsig.PublicKey{}, true, &httpsig.Error{Kind: httpsig.ErrAlgorithmUnsupported,
				Detail: fmt.Sprintf("key %q of the agent profile has a key type or curve this platform does not support", kid)}
		case err != nil:
			return httpsig.PublicKey{}, true, &httpsig.Error{Kind: httpsig.ErrKeyNotFound,
				Detail: fmt.Sprintf("key %q of the agent profile is not a usable public signing key", kid)}
		}
		return pk, true, nil
	}
	return httpsig.PublicKey{}, false, nil
}

// resolver resolves keyids of one request against the agent profile: the
// cached keys first, then at most one forced refresh per request (and per
// ForceRefreshInterval per profile URL).
func (a *Authenticator) resolver(profileURL string, dev bool) httpsig.KeyResolver {
	var (
		keys      []json.RawMessage
		loaded    bool
		refreshed bool
	)
	return func(ctx context.Context, kid string) (httpsig.PublicKey, error) {
		if !loaded {
			var err error
			if keys, err = a.opts.Keys.SigningKeys(ctx, profileURL, dev, false); err != nil {
				return httpsig.PublicKey{}, err
			}
			loaded = true
		}
		pk, found, err := lookupKey(keys, kid)
		if found {
			return pk, err
		}
		if !refreshed && a.refresh.allow(profileURL, a.now()) {
			refreshed = true
			fresh, err := a.opts.Keys.SigningKeys(ctx, profileURL, dev, true)
			if err != nil {
				var pe *ProfileError
				if !errors.As(err, &pe) {
					return httpsig.PublicKey{}, err
				}
				// A profile that cannot be refetched does not make the
				// signature's kid any more known.
			} else {
				keys = fresh
				if pk, found, err := lookupKey(keys, kid); found {
					return pk, err
				}
			}
		}
		return httpsig.PublicKey{}, &httpsig.Error{Kind: httpsig.ErrKeyNotFound,
			Detail: fmt.Sprintf("keyid %q is not a signing key of the agent profile %s", kid, profileURL)}
	}
}

// refreshLimiter allows one forced refresh per profile URL per interval.
// Profile URLs are agent-chosen, so the map is bounded.
type refreshLimiter struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
}

const maxRefreshEntries = 10000

func (l *refreshLimiter) allow(url string, now time.Time) bool {
	if l.interval < 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[url]; ok && now.Sub(t) < l.interval {
		return false
	}
	if len(l.last) >= maxRefreshEntries {
		for k, t := range l.last {
			if now.Sub(t) >= l.interval {
				delete(l.last, k)
			}
		}
		for k := range l.last { // still full: drop arbitrary entries
			if len(l.last) < maxRefreshEntries/2 {
				break
			}
			delete(l.last, k)
		}
	}
	l.last[url] = now
	return true
}
