package cjson

import (
	"encoding/hex"
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
