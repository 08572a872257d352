package bcp

import (
	"sync/atomic"

	segjson "github.com/segmentio/encoding/json"
)

// The checkout document is JSON where agents send and receive it and where
// the session stores it; between services it travels as typed protobuf
// messages. Every service decodes and encodes it through DecodeCheckout
// and EncodeCheckout, which count, so a test can hold the number of
// parses per request down (services/checkout TestCompleteDecodesTheCheckout).
var checkoutDecodes, checkoutEncodes atomic.Int64

// DecodeCheckout parses a checkout document (or a request or cart in the
// checkout's shape) into c.
func DecodeCheckout(data []byte, c *Checkout) error {
	checkoutDecodes.Add(1)
	return segjson.Unmarshal(data, c)
}

// EncodeCheckout is c's JSON, byte for byte what encoding/json writes
// (invalid UTF-8 replaced, HTML characters escaped, raw members compacted)
// but with segmentio's encoder, about twice as fast on a checkout
// (encode_test.go holds the bytes equal and measures it).
func EncodeCheckout(c *Checkout) ([]byte, error) {
	checkoutEncodes.Add(1)
	return encodeCheckout(c)
}

func encodeCheckout(c *Checkout) ([]byte, error) { return segjson.Marshal(c) }

// CheckoutCodecCounts says how many checkout documents this process has
// decoded and encoded so far.
func CheckoutCodecCounts() (decodes, encodes int64) {
	return checkoutDecodes.Load(), checkoutEncodes.Load()
}
