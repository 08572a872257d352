// Package ids makes the platform's resource identifiers: a short type
// prefix and a UUIDv7 in lower-case Crockford base32, e.g.
// "chk_06f3k1j9m8q4c2v7h5n0x1t2ra". They sort by creation time (UUIDv7
// leads with milliseconds), so indexes stay append-mostly.
package ids

import (
	"strings"

	"github.com/google/uuid"
)

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// New returns a new id with the given prefix ("chk", "ord", "pay", ...).
func New(prefix string) string {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the random source fails, and then nothing
		// secure can continue.
		panic(err)
	}
	return prefix + "_" + encode(u)
}

// HasPrefix reports whether id looks like one made by New with prefix.
func HasPrefix(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(rest) != 26 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(alphabet, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// encode renders 128 bits as 26 base32 characters, most significant first.
func encode(u uuid.UUID) string {
	var out [26]byte
	// Process as a 130-bit big-endian number (2 zero bits of padding in front).
	var acc uint64
	bits := 2 // the leading pad bits are zero
	j := 0
	for _, b := range u {
		acc = acc<<8 | uint64(b)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out[j] = alphabet[(acc>>uint(bits))&31]
			j++
		}
	}
	return string(out[:j])
}
