// Package bcpschema holds the BCP JSON Schemas and validates BCP payloads
// against them.
//
// # Schemas
//
// BCP uses the shapes of UCP release 2026-04-08 with BCP names (architecture
// §2). The derived schemas are embedded (FS) with the layout of upstream's
// source/ tree and published under BaseURL (https://bcp.dev.br/draft/), e.g.
// schemas/shopping/checkout.json has $id
// https://bcp.dev.br/draft/schemas/shopping/checkout.json. They are produced
// by internal/derive from ../shared/reference/ucp/release-2026-04-08/source
// (see schemas/NOTICE for the exact renames and the one deliberate patch);
// never edit them by hand — a test re-runs the derivation and fails on drift.
//
// # Resolution per operation
//
// Upstream writes schemas as response shapes and marks request/response
// visibility per property with ucp_request / ucp_response: "omit" drops the
// property and its required entry, "required" adds it to required, "optional"
// removes it from required; the value is a string for every op or an object
// keyed by op (create, read, update, complete; a missing op leaves the
// property unchanged); {"transition":{"from","to","description"}} resolves to
// "from" and is surfaced as x-ucp-schema-transition. Inside an allOf an
// annotation on one branch also applies to the same property in sibling
// branches that do not annotate it (ucp-schema's propagation rule). The
// keywords are removed from the output; everything else is kept.
//
// Annotations sit in the referenced type files (line_item.json,
// fulfillment_method.json, ...), so resolution works on the reference graph:
// for one (Direction, Op) the bundler walks every $ref from the root, resolves
// a private copy of each reachable subschema and stores it in $defs under a
// readable key ("shopping.types.line_item", "shopping.fulfillment:fulfillment"),
// rewriting each $ref to "#/$defs/<key>". Copies are never shared between
// ops, the result has no $id and no external reference, and the same document
// is what an MCP client is shown and what the Validator compiles.
// ResolveAnnotations resolves one self-contained schema without following
// $refs; Resolve resolves an embedded schema and its graph.
//
// # Composition
//
// A checkout extension's schema defines $defs["br.dev.bcp.shopping.checkout"]
// as allOf[checkout.json, {additions}]. CheckoutSchema and the tool schemas
// compose the negotiated capabilities as the conjunction of those definitions
// (extensions sorted by name; known capabilities that do not extend checkout,
// such as order, are ignored; unknown names are an error). Because every
// extension repeats checkout.json, the resolved composition is flattened to
// allOf[checkout, additions...] so the base is validated once.
// DefaultCheckoutCapabilities is checkout + ap2_mandate + buyer_consent +
// discount + fulfillment; with ap2_mandate, complete requires ap2.checkout_mandate.
//
// # MCP tools
//
// The tools are not listed here: they are rows of the edge's operation
// table, each handing over a Tool (name, schema Root, Op, whether the
// idempotency key is required). ToolInputSchema / ToolOutputSchema return
// self-contained JSON Schemas for a Tool and the negotiated capability
// set; for the checkout tools (RootCheckout, RootOrder):
//
//   - meta (required, open): ucp-agent.profile required with format uri;
//     idempotency-key with format uuid, required when the Tool says so;
//   - id (required for tools on an existing resource);
//   - checkout (create/update/complete): the composed checkout resolved for
//     the tool's op, with properties.id forbidden: the binding forbids id in
//     the payload, and the violation is reported at $.checkout.id;
//   - no other top-level argument.
//
// Outputs are {"type":"object","oneOf":[checkout|order, error_response]}.
// Cart and catalog tools (cart.go, catalog.go) follow the same envelope.
//
// ToolAdvertisedSchema is what tools/list shows instead (advertise.go): the
// input schema rewritten in AdvertisedKeywords (one type per schema,
// inlined, no $ref, allOf, anyOf, not, pattern or format), with the members
// an agent fills in and short hints; it accepts what the full schema
// accepts (but null: a nullable member shows its one other type), and
// arguments are still validated against the full schema.
// AdvertisedViolations checks a schema against that subset.
//
// # Validation
//
// A ToolValidator compiles a set of tools once for a capability set
// (NewToolValidator, tens of milliseconds) and is safe for concurrent use:
//
//	v, err := bcpschema.NewToolValidator(tools) // or NewToolValidator(tools, negotiated...)
//	err = v.ValidateToolInput("create_checkout", args)
//	var ve *bcpschema.ValidationError
//	if errors.As(err, &ve) {
//		// JSON-RPC -32602; ve.Violations[i].Path is e.g. $.checkout.line_items[0].quantity
//	}
//
// A Validator (NewValidator) checks responses: ValidateCheckoutResponse(op,
// doc), ValidateErrorResponse, ValidateOrder; and discovery profiles:
// ValidateBusinessProfile, ValidatePlatformProfile (release 2026-04-08
// profile schema: keys under signing_keys).
//
// Failures are a *ValidationError whose Violations (at most MaxViolations,
// the rest counted in Omitted) are sorted by path, de-duplicated, and point
// at the deepest failing member as an RFC 9535-style normalized JSONPath:
// dot notation for identifier names, ['...'] otherwise ($.meta['ucp-agent']).
// A missing required property is reported at its own path
// ($.meta['ucp-agent'], keyword "required"). For anyOf/oneOf failures only the
// plausible branches are reported: branches rejected by a const discriminator
// (message type "error" vs "warning") are dropped, then the branches with the
// fewest failures win. Formats (uri, uuid, date-time, ...) are asserted.
// Schemas stay open as upstream wrote them (additionalProperties true), so
// omitted or unknown members are accepted, not rejected; only the tool
// argument envelope is closed.
package bcpschema
