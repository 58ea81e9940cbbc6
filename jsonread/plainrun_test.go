package jsonread

import (
	"testing"

	"pgregory.net/rapid"
)

// plainRunByBytes is plainRun one byte at a time: the oracle.
func plainRunByBytes(b []byte, i int) int {
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	return i
}

// Every byte value, at every offset of a word and past it, stops a run
// exactly where the byte loop does.
func TestPlainRunStopsAtEveryByte(t *testing.T) {
	for n := 0; n < 20; n++ {
		for at := 0; at < n; at++ {
			for c := range 256 {
				b := make([]byte, n)
				for k := range b {
					b[k] = 'a' + byte(k%26)
				}
				b[at] = byte(c)
				for start := 0; start <= n; start++ {
					if got, want := plainRun(b, start), plainRunByBytes(b, start); got != want {
						t.Fatalf("%q from %d: plainRun %d, byte loop %d", b, start, got, want)
					}
				}
			}
		}
	}
}

// Random texts, drawn mostly from the bytes near the ones that stop a run
// (and high bytes, whose borrows the word test must not mistake).
func TestPlainRunMatchesTheByteLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]byte{'"', '\\', 0x1f, 0x20, 0x21, 0x00, 0x01, 0x5b, 0x5d, 0x22 ^ 0x80, 0x5c ^ 0x80, 0x7f, 0x80, 0xa0, 0xff}),
			rapid.Byte()), 0, 64).Draw(t, "b")
		start := rapid.IntRange(0, len(b)).Draw(t, "start")
		if got, want := plainRun(b, start), plainRunByBytes(b, start); got != want {
			t.Fatalf("%q from %d: plainRun %d, byte loop %d", b, start, got, want)
		}
	})
}
