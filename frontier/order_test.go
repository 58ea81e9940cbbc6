package frontier

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genID draws identifier-alphabet strings that often share long prefixes,
// tie within the 8 key bytes, or end early, to stress the keyed sorts.
func genID(t *rapid.T, label string) string {
	prefix := rapid.SampledFrom([]string{"", "delivery:", "sha256:", "delivery:00000000", "d"}).Draw(t, label+"/prefix")
	body := rapid.StringMatching(`[0-9a-f:./_-]{0,12}`).Draw(t, label+"/body")
	return prefix + body
}

// TestKeyedSortsAgreeWithByteOrder: the keyed sorts give exactly the order
// of a plain sort on the strings (then diff).
func TestKeyedSortsAgreeWithByteOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		ds := make([]ValueDelta, n)
		for i := range ds {
			ds[i] = ValueDelta{deliveryID: genID(rt, "id"),
				diff: int8(rapid.SampledFrom([]int{-1, 1}).Draw(rt, "diff"))}
		}
		got := sortByDelivery(ds)
		want := make([]*ValueDelta, n)
		for i := range ds {
			want[i] = &ds[i]
		}
		slices.SortStableFunc(want, func(a, b *ValueDelta) int {
			if c := cmp.Compare(a.deliveryID, b.deliveryID); c != 0 {
				return c
			}
			return int(a.diff) - int(b.diff)
		})
		if len(got) != len(want) {
			rt.Fatalf("%d sorted, want %d", len(got), len(want))
		}
		for i := range got {
			if g := got[i].d; g.deliveryID != want[i].deliveryID || g.diff != want[i].diff {
				rt.Fatalf("position %d: %q/%d, want %q/%d", i, g.deliveryID, g.diff, want[i].deliveryID, want[i].diff)
			}
		}
		plain := make([]string, n)
		for i := range plain {
			plain[i] = genID(rt, "digest")
		}
		digests := sortDigests(slices.Clone(plain))
		slices.Sort(plain)
		if !slices.Equal(digests, plain) {
			rt.Fatalf("digests %q, want %q", digests, plain)
		}
	})
}

// TestStoredPiecesFitTheirArena: the arena sized by storedPieceSize holds
// every stored value's pieces without growing, and the pieces around the
// value's bytes are its canonical RStoredValue.
func TestStoredPiecesFitTheirArena(t *testing.T) {
	pl := getPool(t)
	var svs []storedValue
	size := 0
	for i, v := range append(slices.Clone(pl.proposals), pl.verdicts...) {
		at := []int64{0, 7, 1 << 62}[i%3]
		sv := storedValue{deliveryID: DeliveryID("src:a", at, "dataflow/0", v.kind, v.digest), sourceID: "src:a", logicalTime: at, value: v}
		svs = append(svs, sv)
		size += storedPieceSize(sv.deliveryID, sv.sourceID, v.kind, v.digest)
	}
	arena := make([]byte, 0, size)
	for i := range svs {
		arena = svs[i].encode(arena)
	}
	if cap(arena) != size {
		t.Fatalf("arena grew from %d to %d bytes", size, cap(arena))
	}
	for i := range svs {
		assertCanonical(t, svs[i].appendCanonical(nil))
	}
}
