// Package pricing is the pricing service: line and checkout totals,
// fulfillment methods with their options, and discounts. It owns the
// PostgreSQL schema "pricing" (shipping rates with CEP ranges, pickup
// locations, discounts, redemptions) and is reached only through its
// connect API, always in a tenant's scope.
//
// Files, top-down: service.go maps the connect API to the domain;
// quote.go (Price) is the deterministic pricing engine, with
// fulfillment.go, discounts.go and money.go; config.go holds the merchant
// configuration and its validation; store.go is the only SQL (sqlc
// package pricingdb, through pgstore.InTenant).
//
// # Money
//
// Amounts are int64 centavos within the protocol's 0..2^53-1; products
// and sums are overflow-checked and anything beyond is rejected as
// invalid, never rounded. Checkout totals are, in order: subtotal (sum of
// line subtotals), items_discount (when any), fulfillment (when an option
// is selected), total. There is no order-level "discount" total: every
// merchandise discount is allocated to lines, and free shipping is
// modelled inside fulfillment (below).
//
// # Discounts
//
// Codes are matched case-insensitively and echoed exactly as sent;
// rejected codes get one warning each at $.discounts.codes[i]. Every
// submitted code and every automatic discount is first checked alone
// (window [starts_at, ends_at), min_subtotal against the merchandise
// subtotal, usage limits excluding the quoted checkout's own redemptions).
// The survivors are ranked by priority (lower first), then by what each
// would take alone (larger first), then automatic before codes, then
// submission order. Walking that ranking, a discount joins only if it and
// everything already accepted are combinable; so a non-combinable discount
// applies alone and only when it ranks first, and the others get
// discount_code_combination_disallowed. Accepted discounts apply in that
// order: a percent takes value/10000 of what the merchandise still costs
// after the earlier ones (rounded half up, once), a fixed one takes its
// value capped at that remainder. Each is allocated across the lines in
// proportion to what each line still costs, with the largest-remainder
// method (ties to the lower line index), so allocations sum exactly to the
// discount and no line goes below zero; zero allocations are omitted.
//
// Free shipping: a free_shipping discount makes the selected shipping
// options cost nothing. Options keep showing their own price; the discount
// appears in discounts.applied with the amount it removed, allocated to
// each covered group ($.fulfillment.methods[i].groups[0]), and the
// checkout's fulfillment total is net of it (0 when everything shipped is
// covered). Until an option is selected it is applied with amount 0.
// Pickup fees are not shipping and are never covered. A rate's free_above
// threshold is compared with the merchandise amount after item discounts;
// reaching it makes that option's own price 0, with a free_shipping info.
//
// # Fulfillment
//
// One group per method (the platform default supports_multi_group=false).
// Ids are stable across updates through previous_methods: a method keeps the
// id it was sent or, without one, continues the first unclaimed previous
// method of its type; new ones get ship_N / pickup_N. Destinations keep a
// sent id or the id of a previous destination with the same address
// content, else dest_N; groups keep the sent or previous id, else grp_N. A
// generated id never reuses one that appeared in the request or the
// previous state. A method an update continues keeps its previous
// destinations (and destination choice) when it resends none, and its
// option choice when it resends no groups (the binding's update example
// sends only the method id and a group selection). Shipping options are the active rates covering the
// selected destination (CEP range, or UF — the UF comes from the CEP,
// carriers route by it), cheapest first. Pickup destinations are the
// merchant's active locations, with one option "pickup". Selections are
// validated, never substituted: an unknown id is left null with an
// invalid_selection error at its path, a previously offered option that is
// no longer offered gets fulfillment_changed. A group with exactly one
// option is preselected; with several, the agent must choose.
package pricing
