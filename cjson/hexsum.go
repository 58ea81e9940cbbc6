package cjson

import "encoding/binary"

// hexPairs holds, for each byte value, its two lower-case hex digits as a
// little-endian pair: the first digit in the low byte.
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for v := range t {
		t[v] = uint16(digits[v>>4]) | uint16(digits[v&15])<<8
	}
	return t
}()

// HexSum writes the 64 lower-case hex digits of a SHA-256 sum into dst,
// exactly as hex.Encode does. Every digest and id flrh records ends in
// these digits, so it takes a byte's two digits at a time from a table:
// one load and one two-byte store a byte cost fewer instructions than
// hex.Encode's lookup per nibble. TestHexSumMatchesHexEncode holds it to
// hex.Encode.
func HexSum(dst *[64]byte, sum *[32]byte) {
	for i := 0; i < 32; i += 4 {
		d := dst[2*i : 2*i+8]
		binary.LittleEndian.PutUint16(d[0:], hexPairs[sum[i]])
		binary.LittleEndian.PutUint16(d[2:], hexPairs[sum[i+1]])
		binary.LittleEndian.PutUint16(d[4:], hexPairs[sum[i+2]])
		binary.LittleEndian.PutUint16(d[6:], hexPairs[sum[i+3]])
	}
}
