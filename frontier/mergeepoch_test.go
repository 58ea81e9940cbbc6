package frontier

import (
	"bytes"
	"slices"
	"testing"

	"flrh.dev/flrh/internal/racebuild"

	"pgregory.net/rapid"
)

func epochBytes(e *epoch) []byte {
	var b []byte
	e.write(func(p []byte) { b = append(b, p...) })
	return b
}

// TestMergeEpochIsPlain holds mergeEpoch to its unboxed merge over chains
// of merges at one time: small and large, inserts, repeats and
// retractions of what the epoch holds, each merge from the epoch the one
// before made.
func TestMergeEpochIsPlain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pl := getPool(t)
		at := rapid.Int64Range(0, 5).Draw(t, "time")
		var got, want *epoch
		for range rapid.IntRange(1, 4).Draw(t, "merges") {
			n := rapid.IntRange(1, 4).Draw(t, "deltas")
			var ds []*ValueDelta
			seen := map[string]bool{}
			for range n {
				var d ValueDelta
				if want != nil && len(want.values) > 0 && rapid.Bool().Draw(t, "again") {
					sv := want.values[rapid.IntRange(0, len(want.values)-1).Draw(t, "which")]
					diff := rapid.SampledFrom([]int{1, -1}).Draw(t, "diff")
					var rej *Rejection
					if d, rej = NewValueDelta(sv.sourceID, at, diff, "dataflow/0", sv.value); rej != nil {
						t.Fatal(rej)
					}
				} else {
					d = genValueDelta(t, pl, 0)
					var rej *Rejection
					if d, rej = NewValueDelta(d.sourceID, at, 1, "dataflow/0", d.value); rej != nil {
						t.Fatal(rej)
					}
				}
				if !seen[d.deliveryID] {
					seen[d.deliveryID] = true
					ds = append(ds, &d)
				}
			}
			slices.SortFunc(ds, func(a, b *ValueDelta) int { return compareCanonString(a.deliveryID, b.deliveryID) })
			var gs, ws Stats
			got, want = mergeEpoch(got, at, ds, &gs), mergeEpochIn(want, at, ds, &ws, false)
			if gs != ws {
				t.Fatalf("stats %+v, plain %+v", gs, ws)
			}
			if got.time != want.time || got.size != want.size || len(got.values) != len(want.values) {
				t.Fatalf("epoch at %d size %d with %d values, plain at %d size %d with %d", got.time, got.size, len(got.values), want.time, want.size, len(want.values))
			}
			if g, w := epochBytes(got), epochBytes(want); !bytes.Equal(g, w) || len(g) != got.size {
				t.Fatalf("epoch %s, plain %s", g, w)
			}
			for i := range got.values {
				if got.values[i].logicalTime != want.values[i].logicalTime || got.values[i].deliveryID != want.values[i].deliveryID {
					t.Fatalf("value %d differs", i)
				}
			}
		}
	})
}

// TestSmallMergeIsOneAllocation counts a tick's merge: a proposal and its
// verdict at a new time, the epoch, its list and values in one
// allocation and their pieces in another.
func TestSmallMergeIsOneAllocation(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	pl := getPool(t)
	d1, _ := NewValueDelta("src:a", 3, 1, "dataflow/0", pl.proposals[0])
	d2, _ := NewValueDelta("src:b", 3, 1, "dataflow/0", pl.verdicts[0])
	ds := []*ValueDelta{&d1, &d2}
	slices.SortFunc(ds, func(a, b *ValueDelta) int { return compareCanonString(a.deliveryID, b.deliveryID) })
	var st Stats
	if n := testing.AllocsPerRun(20, func() { mergeEpoch(nil, 3, ds, &st) }); n != 2 {
		t.Fatalf("a small merge allocates %v times, want 2", n)
	}
}
