package postgres

import (
	"encoding/hex"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestHashColumns3: three columns sharing their allocations hold what
// three columns of their own hold, even filled past the capacity they were
// made for.
func TestHashColumns3(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hash := rapid.OneOf(rapid.Custom(func(t *rapid.T) string {
			return hashPrefix + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
		}), rapid.StringMatching(`[a-z0-9:]{0,9}`))
		n := rapid.IntRange(0, 4).Draw(t, "capacity")
		var shared [3]hashColumns
		shared[0], shared[1], shared[2] = newHashColumns3(n)
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
