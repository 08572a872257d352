// Package agentprofile resolves the agent (platform) profile an agent names
// on every request (BCP-Agent / UCP-Agent header, MCP meta["ucp-agent"])
// and negotiates capabilities against the merchant's own profile. The
// section numbers below are those of the UCP digest
// (shared/reference/ucp-digest.md); BCP names and the single version
// 2026-07-28 come from internal/bcpnames.
//
// # Fetching (§2.6)
//
// Fetcher.Get(ctx, url, dev) checks the URL (absolute, https — http too for
// development tenants —, no user information, no fragment, at most 2048
// bytes; literal special-use IPs refused) and answers invalid_profile_url
// otherwise. The fetch is one GET with Accept: application/json:
//
//   - Redirects are never followed: a 3xx is profile_unreachable, as are
//     non-2xx answers, DNS/connect/TLS failures and timeouts (connect 1 s,
//     whole fetch 3 s by default, including the wait for a fetch slot).
//   - The body is limited to MaxBytes (256 KiB, never below the 128 KiB
//     §2.6 demands); larger is profile_malformed. So is a body that is not
//     JSON or fails bcpschema's ValidatePlatformProfile; the message lists
//     at most five violations, and error messages quote at most 32 bytes of
//     what the agent's server sent.
//   - SSRF: production fetches may only connect to ordinary global unicast
//     addresses. The check runs in net.Dialer.Control, on the address the
//     socket is about to connect to, after DNS resolution — so a name that
//     resolves differently between a check and the connect (DNS rebinding)
//     gains nothing. Refused: loopback, RFC 1918, CGNAT 100.64/10,
//     link-local (incl. 169.254.169.254), 0/8, multicast, reserved,
//     documentation and benchmarking ranges, IPv4-mapped forms of those,
//     and in IPv6 everything outside 2000::/3 (::, ::1, ULA fc00::/7,
//     fe80::/10, ff00::/8, ...) plus 6to4, Teredo and documentation blocks
//     inside it; NAT64 addresses are judged by their embedded IPv4.
//     Proxies are disabled (they would be dialed instead of the target).
//     Development tenants (dev=true) may reach loopback and private
//     addresses; they use a separate client and connection pool, so a
//     connection opened for a development tenant is never reused by a
//     production fetch.
//
// # Caching
//
// Entries are keyed by (URL as sent, dev). A profile lives TTL (5 min); an
// origin max-age shorter than that is honoured, never below the 60 s floor
// (MinTTL), whatever the origin sends. A failed fetch is remembered for
// NegativeTTL (10 s) so an unreachable or broken agent host is not hit on
// every request. Concurrent misses for one key share one fetch; the fetch
// is detached from the first caller's context (it has its own deadline)
// and each caller waits only as long as its own context allows. At most
// MaxConcurrentFetches (64) fetches run at once — agents choose the URLs,
// so our discovery footprint must be fixed; a fetch that cannot get a slot
// before its deadline fails without being cached. The cache holds at most
// MaxEntries (10 000) entries in up to 16 shards; eviction is sampled LRU
// (8 random entries, an expired one first). The hit path is a shard read
// lock and a map lookup, without allocation.
//
// ForceRefresh is for a signature whose kid the cached profile lacks: it
// refetches at once, but at most once per MinTTL per URL (callers inside
// that interval get the cached profile, or join the refresh in flight). A
// failed forced refresh returns its error and keeps the still-fresh cached
// profile. The digest words this limit "per origin"; it is kept per URL
// here because one platform origin may host many agents' profiles and the
// per-URL cache already bounds what any URL can cost.
//
// # Profiles
//
// A Profile is immutable and shared by all requests of an agent; accessors
// return copies. Keys are read from signing_keys (release 2026-04-08,
// which the schema validates) and keys (main; outside the release schema,
// so checked here), compacted and de-duplicated by kid (first wins; the
// same key listed twice is one key). Per §2.1 a key we must not use is
// skipped, never a reason to reject the profile: use other than "sig",
// key_ops without "verify", a known alg that does not match kty/crv, no
// kid/kty, a different key under a repeated kid — and keys carrying private
// members (d, p, q, dp, dq, qi, oth, k): such a key is compromised (anyone
// can sign with it), so it must verify nothing, and its bytes are not
// kept. SkippedKeys says what was dropped and why. Unknown kty/crv/alg are
// kept; the signature verifier skips what it cannot use.
//
// Authority binding (§2.3) is not applied to agent profiles: it protects a
// party that dereferences schema URLs, and the business never does — it
// validates against its own embedded BCP schemas and negotiates by name
// and version only. Dropping entries on that SHOULD would only break
// sloppy but harmless agents.
//
// # Negotiation (§2.5)
//
// Negotiate(offer, agent): the agent's ucp.version must equal ours
// (version_unsupported otherwise); capabilities intersect by name and exact
// version string, the highest common version wins; extensions whose
// parents are gone are pruned to a fixpoint (one parent must remain, or at
// least one of several). Result.Incompatible is set when checkout did not
// survive: that is capabilities_incompatible, a business outcome answered
// with a UCP error body, not a protocol error. ResponseCapabilities(root)
// selects the root and the extensions that (transitively) extend it, so a
// checkout response never lists order and vice versa.
//
// PaymentHandlers: a business handler is kept when the agent's profile
// lists a handler of the same name, whatever its entry versions (§2.5:
// handler versions are author-controlled and not part of the capability
// intersection). An agent listing none of ours gets none: it could not
// drive them, and the buyer can still pay on the hosted checkout page
// (continue_url). Instrument-level narrowing (§7.2: available_instruments
// of agent, business and cart context) depends on the cart and belongs to
// the checkout, not here.
package agentprofile
