// Package brcode encodes and parses Pix BR Codes ("Pix Copia e Cola"), the
// EMV Merchant-Presented Mode (MPM) subset that the Banco Central do Brasil
// defines for Pix QR codes.
//
// We generate BR Codes ourselves because no maintained Go module exists for
// them and the format is small: a flat list of TLV data objects (2-digit ID,
// 2-digit length, value), a few nested templates, and a CRC-16/CCITT-FALSE
// in field 63. The package has three layers:
//
//   - [CRC16] and [Checksum]: the checksum of field 63.
//   - [DecodeTLV] and [EncodeTLV]: one level of generic EMV MPM TLV, with
//     lengths counted in characters as EMVCo requires (the CRC still runs
//     over UTF-8 bytes). [IsTemplate] says which IDs nest further.
//   - [Payload], [Payload.Encode] and [Parse]: the Pix rules on top.
//
// # Strict encoder, precise parser
//
// [Payload.Encode] only writes printable ASCII, because bank apps disagree
// on how to count and display multi-byte text; clean merchant names and
// cities with [NormalizeName] and [NormalizeCity] first. [Parse] accepts
// valid UTF-8 text (the BR Code manual v2.0 allows it) but otherwise applies
// the same rules as the encoder, so that a code we accept is one we could
// have produced: for any ASCII input s that Parse accepts,
// Encode(Parse(s)) == s. Every error is an [*Error] that names the field
// ("59", or "26-25" for a sub-field) and wraps one of the Err* sentinels, so
// callers can branch with errors.Is and show the field to an operator.
//
// # Static and dynamic codes
//
// A static code carries a Pix key (26-01), is reusable, and may carry an
// amount and a txid of at most 25 alphanumerics (62-05). A dynamic code
// carries the location of a PSP-signed JWS (26-25, without "https://"),
// always has point of initiation 12 (single use), and its 62-05 is ignored
// by banks because the real txid lives in the JWS. For checkout use dynamic
// codes from a PSP; static codes suit donation-style or offline use.
//
// Money is int64 centavos throughout and is formatted with integer
// arithmetic only ([FormatAmount], [ParseAmount]); floats never touch it.
package brcode
