package postgres

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestHashColumns2: two columns sharing their allocations (and a sum
// beside them) hold what columns of their own hold, even filled past the
// capacity they were made for.
func TestHashColumns2(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hash := rapid.OneOf(rapid.Custom(func(t *rapid.T) string {
			return hashPrefix + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
		}), rapid.StringMatching(`[a-z0-9:]{0,9}`))
		n := rapid.IntRange(0, 4).Draw(t, "capacity")
		var shared [2]hashColumns
		var room []byte
		// The columns' strings and sums are parts of larger allocations:
		// what lies beside them stays as it was.
		strs, sums := make([]string, 2*n+2), make([][]byte, 2*n+2)
		strs[0], strs[2*n+1], sums[0], sums[2*n+1] = "before", "after", []byte("before"), []byte("after")
		shared[0], shared[1], room = newHashColumns2(n, strs[1:2*n+1], sums[1:2*n+1])
		defer func() {
			if strs[0] != "before" || strs[2*n+1] != "after" || string(sums[0]) != "before" || string(sums[2*n+1]) != "after" {
				t.Fatalf("beside the columns: %q %q %q %q", strs[0], strs[2*n+1], sums[0], sums[2*n+1])
			}
		}()
		prev := hash.Draw(t, "previous hash")
		room = appendSum(room, prev)
		for i := range shared {
			hs := rapid.SliceOfN(hash, 0, n+2).Draw(t, "hashes")
			own := newHashColumns(n)
			for _, h := range hs {
				own.add(h)
				shared[i].add(h)
			}
			if !reflect.DeepEqual(own.sums, shared[i].sums) || !reflect.DeepEqual(own.all, shared[i].all) ||
				own.anyText != shared[i].anyText || !reflect.DeepEqual(own.texts(), shared[i].texts()) {
				t.Fatalf("column %d: %+v, own %+v", i, shared[i], own)
			}
		}
		if !bytes.Equal(room, hashSum(prev)) {
			t.Fatalf("the room holds %x, want the sum of %q", room, prev)
		}
		// Filling the later columns left the earlier ones as they were.
		for i := range shared {
			own := newHashColumns(n)
			for _, h := range shared[i].all {
				own.add(h)
			}
			if !reflect.DeepEqual(own.sums, shared[i].sums) {
				t.Fatalf("column %d overwritten: %x, want %x", i, shared[i].sums, own.sums)
			}
		}
	})
}

// appendSumByDigit is appendSum as it was first written, a digit at a
// time: the oracle for the table-driven one.
func appendSumByDigit(b []byte, h string) []byte {
	if len(h) != len(hashPrefix)+64 || h[:len(hashPrefix)] != hashPrefix {
		return b
	}
	for i := len(hashPrefix); i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return b
		}
	}
	nibble := func(c byte) byte {
		if c <= '9' {
			return c - '0'
		}
		return c - 'a' + 10
	}
	for i := len(hashPrefix); i < len(h); i += 2 {
		b = append(b, nibble(h[i])<<4|nibble(h[i+1]))
	}
	return b
}

// TestAppendSumMatchesByDigit: the table-driven appendSum appends what
// the digit-at-a-time one does, for canonical hashes, for ones with a
// single byte changed anywhere (to any value, so every byte that is not a
// lowercase hex digit is tried), and for other text.
func TestAppendSumMatchesByDigit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := hashPrefix + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 1, 2:
			b := []byte(h)
			b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
			h = string(b)
		case 3:
			h = rapid.String().Draw(t, "text")
		}
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "prefix")
		got := appendSum(append([]byte(nil), prefix...), h)
		want := appendSumByDigit(append([]byte(nil), prefix...), h)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("appendSum(%q) = %x, want %x", h, got, want)
		}
	})
	// Every byte value in every digit position.
	base := hashPrefix + strings.Repeat("0123456789abcdef", 4)
	for at := len(hashPrefix); at < len(base); at++ {
		for c := 0; c < 256; c++ {
			b := []byte(base)
			b[at] = byte(c)
			if got, want := appendSum(nil, string(b)), appendSumByDigit(nil, string(b)); !reflect.DeepEqual(got, want) {
				t.Fatalf("appendSum(%q) = %x, want %x", b, got, want)
			}
		}
	}
}

func BenchmarkAppendSum(b *testing.B) {
	h := hashPrefix + strings.Repeat("0123456789abcdef", 4)
	buf := make([]byte, 0, 32)
	for b.Loop() {
		buf = appendSum(buf[:0], h)
	}
}
