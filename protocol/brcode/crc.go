package brcode

// crcTable is the byte-wise lookup table for CRC-16/CCITT-FALSE
// (poly 0x1021, no reflection). A table keeps Parse and Encode cheap enough
// to run on every webhook and every rendered QR.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 returns the CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no
// reflection, xorout 0) of data, the checksum EMV MPM uses in field 63.
func CRC16(data []byte) uint16 {
	return crcUpdate(0xFFFF, data)
}

func crcUpdate[T string | []byte](crc uint16, data T) uint16 {
	for i := 0; i < len(data); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^data[i]]
	}
	return crc
}

// Checksum returns the value of field 63 for body: the CRC16 of its UTF-8
// bytes as 4 uppercase hex digits. body must be the whole payload up to and
// including the literal "6304".
func Checksum(body string) string {
	var b [4]byte
	appendHex(b[:0], crcUpdate(0xFFFF, body))
	return string(b[:])
}

const hexUpper = "0123456789ABCDEF"

func appendHex(b []byte, v uint16) []byte {
	return append(b, hexUpper[v>>12], hexUpper[v>>8&0xF], hexUpper[v>>4&0xF], hexUpper[v&0xF])
}
