// Package qr renders a BR Code ("Pix Copia e Cola") string as a QR code, as
// PNG bytes for the payer's phone camera and as a compact SVG document for
// web pages and the admin UI.
//
// The QR symbol itself (segment mode, version, Reed-Solomon blocks, mask)
// comes from github.com/piglig/go-qr, a port of Nayuki's reference-quality
// QR generator with no runtime dependencies. This package only asks it for
// the module matrix and draws both images itself, so that the output is
// small (a 1-bit PNG; one SVG <path>), byte-for-byte deterministic, and
// has the layout payment QRs need: error-correction level M by default and
// the 4-module quiet zone that ISO/IEC 18004 requires for reliable scans.
//
// The package does not validate BR Codes: pass it the output of
// brcode.Payload.Encode or a PSP's pixCopiaECola (check the latter with
// brcode.Parse first if it comes from outside).
package qr
