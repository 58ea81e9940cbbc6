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

// UnhexSum is HexSum's inverse: it writes the 32 bytes 64 lower-case hex
// digits spell into sum and reports whether they were all such digits
// (upper case is refused: a digit text flrh writes has one spelling). It
// reads eight digits at a time: each byte of a word is tested to be in
// '0'–'9' or 'a'–'f' (no byte's test carries into the next, as every byte
// is first held under 0x80), its value is its low nibble, plus 9 for a
// letter (bit 6), and the values are paired into bytes and gathered.
// TestUnhexSumMatchesHexDecode holds it to hex.Decode.
func UnhexSum(sum *[32]byte, d *[64]byte) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	var bad uint64
	for k := range 8 {
		x := binary.LittleEndian.Uint64(d[8*k : 8*k+8])
		digit := (x + (0x80-'0')*ones) &^ (x + (0x80-'9'-1)*ones)
		letter := (x + (0x80-'a')*ones) &^ (x + (0x80-'f'-1)*ones)
		bad |= x&high | ^(digit|letter)&high
		v := x&(0x0f*ones) + 9*(x>>6&ones)
		v = (v&0x00ff00ff00ff00ff)<<4 | v>>8&0x00ff00ff00ff00ff // a byte in each 16-bit lane
		v = (v | v>>8) & 0x0000ffff0000ffff
		v = (v | v>>16) & 0xffffffff
		binary.LittleEndian.PutUint32(sum[4*k:4*k+4], uint32(v))
	}
	return bad == 0
}
