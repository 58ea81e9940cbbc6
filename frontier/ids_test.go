package frontier

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestBatchIDsAreTheConcatenations holds batchIDs to the two strings
// written out.
func TestBatchIDsAreTheConcatenations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		suffix := rapid.StringMatching(`[0-9a-f]{0,64}`).Draw(t, "suffix")
		id, cause := batchIDs(suffix)
		if id != "batch:"+suffix || cause != "reaction:"+suffix {
			t.Fatalf("batchIDs(%q) = %q, %q", suffix, id, cause)
		}
	})
}

// TestSortedDigestsIsSorted holds sortedDigests, its keys on the stack for
// a few deltas and made for more, to the digests sorted, over drawn
// digests that often share long prefixes.
func TestSortedDigestsIsSorted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringMatching(`(sha256:[0-9a-f]{0,20})?`).Draw(t, "prefix")
		tails := rapid.SliceOfN(rapid.StringMatching(`[0-9a-f]{0,12}`), 0, 20).Draw(t, "tails")
		ds := make([]*ValueDelta, len(tails))
		want := make([]string, len(tails))
		for i, s := range tails {
			ds[i] = &ValueDelta{digest: prefix + s}
			want[i] = prefix + s
		}
		slices.Sort(want)
		if got := sortedDigests(ds); !slices.Equal(got, want) {
			t.Fatalf("sortedDigests = %s, want %s", strings.Join(got, " "), strings.Join(want, " "))
		}
	})
}
