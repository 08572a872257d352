// Package agentauth authenticates AI agents at a merchant's MCP and REST endpoints
// and signs what the merchant sends them (BCP binding, "Assinatura de
// mensagem"; ucp-digest §9 and §11).
//
// # Authentication (Middleware)
//
// Every request is authenticated before anything else looks at it; on
// failure the middleware answers a JSON-RPC error itself and the wrapped
// handler never runs. The tenant comes from the context (tenancy.With, set
// by the edge's Host routing) and its policy from WithTenantPolicy or, as
// a fallback, the registry:
//
//   - api_key: an agent API key (X-API-Key or Authorization: Bearer) is
//     required; signatures are not looked at.
//   - signature: an RFC 9421 signature made with a key of the agent's
//     profile is required; API keys are not looked at.
//   - either (default): at least one; every credential sent must verify.
//
// The agent profile a request acts for is named by BCP-Agent (RFC 8941
// dictionary, profile="<url>"; UCP-Agent accepted as an alias) and by
// meta["ucp-agent"].profile of each tools/call; all that are present must
// be the same string (after trimming) or the request gets 403
// profile_mismatch. An API key is bound to one profile URL: a request
// naming another profile gets 403 profile_mismatch; a request naming none
// acts for the key's profile. A signed request must name its profile,
// since that is where the verification keys come from.
//
// Signatures are verified with httpsig over the closed set BCP requires
// (@method, @authority, @path, @query with a query, bcp-agent or
// ucp-agent and idempotency-key when present, content-digest and
// content-type with a body); Content-Digest is recomputed over the raw
// body. Signatures are replay-proof (replay.go): a created older than
// SignatureWindow (5 min) or in the future, or an expires past, is refused
// (30 s of clock skew allowed); a nonce is accepted once, across every
// edge (the tenants service's replay cache); a merchant may require
// created, or created and a nonce. Keys come from a
// KeySource (the agent profile fetcher); an unknown kid triggers one forced
// profile refresh (rate-limited per profile URL) before key_not_found.
//
// Only POSTs whose JSON-RPC messages are all DefaultPublicMethods
// (initialize, server/discover, ping, tools/list, notifications/*) pass
// without credentials; they carry no agent data and change nothing.
// Every other request needs credentials, GET and DELETE included.
//
// Failures are JSON-RPC errors {"jsonrpc":"2.0","id":<id|null>,"error":
// {"code":…,"message":…,"data":{"code":…,"content":…}}} with an HTTP
// status: 401/-32000 for unauthenticated, signature_missing,
// signature_invalid, key_not_found, invalid_api_key; 403/-32000
// profile_mismatch; 400/-32600 digest_mismatch, algorithm_unsupported;
// -32001 with the profile error's status for invalid_profile_url and
// profile fetch failures; 503/-32000 unavailable. 401s carry
// WWW-Authenticate: Bearer (when API keys are accepted) and/or
// Accept-Signature (when signatures are). Secrets are never logged or
// echoed; API key lookups are cached under the key's SHA-256.
//
// # REST mode (RESTHandler)
//
// The REST binding (/bcp/rest) gets the same checks through RESTHandler:
// policy, API keys, signatures over the same closed component set
// (@method @authority @path, bcp-agent/ucp-agent, idempotency-key,
// content-digest, content-type), profile binding and Content-Digest. The
// differences: the profile comes from BCP-Agent/UCP-Agent only (there is
// no meta); no request is public; the operation is the one the edge's
// operation table (Options.Operations) routes the method and path to, so
// SignResponses signs the same responses as over MCP (POST
// …/checkout-sessions/{id}/complete; every response when the tenant signs
// all); failures are the flat REST body {"code","content"}
// (WriteRESTFailure) with the same statuses and challenge headers.
//
// # Signing (SignResponses, RemoteSigner)
//
// The merchant's private keys stay in the tenants service. RemoteSigner
// builds the signature base and asks SignWithCurrentKey to complete it
// with the current key's keyid and sign it. SignResponses signs the
// responses of the operations marked Signed (complete_checkout; every
// tools/call response when the tenant signs all) over @status, content-digest and content-type with created
// and keyid; RemoteSigner.SignWebhook signs order webhooks as requests.
package agentauth
