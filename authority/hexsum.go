package authority

import "encoding/binary"

// hexSum writes the 64 lower-case hex digits of a SHA-256 sum into dst,
// as hex.Encode does, four bytes of the sum at a time: every digest and id
// a decision records ends in these digits, a dozen of them per decision,
// and the table lookup per nibble of hex.Encode cost more than the
// arithmetic below. TestHexSumMatchesHexEncode holds it to hex.Encode.
func hexSum(dst *[64]byte, sum *[32]byte) {
	for i := 0; i < 32; i += 4 {
		// Spread the eight nibbles of four bytes over the eight bytes of
		// x, most significant nibble in the most significant byte.
		x := uint64(binary.BigEndian.Uint32(sum[i : i+4]))
		x = (x | x<<16) & 0x0000ffff0000ffff
		x = (x | x<<8) & 0x00ff00ff00ff00ff
		x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
		// A nibble n becomes '0'+n, plus 'a'-'0'-10 where n >= 10
		// (n+6 carries into bit 4 exactly then); no byte overflows.
		ten := ((x + 0x0606060606060606) >> 4) & 0x0101010101010101
		binary.BigEndian.PutUint64(dst[2*i:2*i+8], x+0x3030303030303030+ten*('a'-'0'-10))
	}
}
