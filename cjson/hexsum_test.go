package cjson

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestHexSumMatchesHexEncode(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, sum [32]byte) {
		var got, want [64]byte
		HexSum(&got, &sum)
		hex.Encode(want[:], sum[:])
		if got != want {
			t.Fatalf("HexSum(%x) = %s, want %s", sum, got[:], want[:])
		}
	}
	// Every byte value at every position of a word.
	for v := 0; v < 256; v++ {
		var sum [32]byte
		for i := range sum {
			sum[i] = byte(v + i)
		}
		check(t, sum)
	}
	rapid.Check(t, func(rt *rapid.T) {
		var sum [32]byte
		copy(sum[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "sum"))
		check(rt, sum)
	})
}

// UnhexSum agrees with hex.Decode on every 64 bytes: valid lower-case
// digits decode to the same bytes, anything else (upper case, any other
// byte, bytes with the high bit set) is refused.
func TestUnhexSumMatchesHexDecode(t *testing.T) {
	alphabet := []byte("0123456789abcdefABCDEFgz/:@`G\x00\x7f\x80\xb0\xe1\xff")
	rapid.Check(t, func(t *rapid.T) {
		var d [64]byte
		if rapid.Bool().Draw(t, "valid") {
			hex.Encode(d[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
			if rapid.Bool().Draw(t, "damaged") {
				d[rapid.IntRange(0, 63).Draw(t, "at")] = rapid.SampledFrom(alphabet).Draw(t, "with")
			}
		} else {
			for i := range d {
				d[i] = rapid.SampledFrom(alphabet).Draw(t, "b")
			}
		}
		var got [32]byte
		ok := UnhexSum(&got, &d)
		want, err := hex.DecodeString(string(d[:]))
		lower := bytes.Equal(bytes.ToLower(d[:]), d[:])
		if wantOK := err == nil && lower; ok != wantOK {
			t.Fatalf("%q: UnhexSum %v, want %v", d, ok, wantOK)
		}
		if ok && !bytes.Equal(got[:], want) {
			t.Fatalf("%q: %x, want %x", d, got, want)
		}
	})
	for c := 0; c < 256; c++ { // every byte in every position of a word
		for at := range 8 {
			d := [64]byte([]byte(strings.Repeat("0", 64)))
			d[at] = byte(c)
			var got [32]byte
			wantOK := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
			if ok := UnhexSum(&got, &d); ok != wantOK {
				t.Fatalf("byte %#x at %d: %v", c, at, ok)
			}
		}
	}
}
