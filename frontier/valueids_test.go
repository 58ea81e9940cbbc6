package frontier

import (
	"slices"
	"testing"

	"flrh.dev/flrh/internal/racebuild"
	"pgregory.net/rapid"
)

// sortedIDSetIn answers as sortedIDSet whatever room it is handed (none,
// too small, large enough), leaves the ids as they were, and writes into
// the room only when the ids fit; its list is capped at its length, so an
// append moves it.
func TestSortedIDSetInIsSortedIDSet(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOfN(rapid.SampledFrom([]string{"p:a", "p:b", "frontier:c", "x:1", "x:10", "x:9", "not an id"}), 0, 6).Draw(rt, "ids")
		before := slices.Clone(ids)
		var room []string
		if n := rapid.IntRange(-1, valueIDs).Draw(rt, "room"); n >= 0 {
			room = make([]string, 0, n)
		}
		want, wantOK := sortedIDSet(slices.Clone(ids))
		got, ok := sortedIDSetIn(room, ids)
		if ok != wantOK || (ok && (!slices.Equal(got, want) || got == nil || cap(got) != len(got))) {
			rt.Fatalf("sortedIDSetIn(%d, %q) = %q (cap %d), %v; sortedIDSet gives %q, %v", cap(room), ids, got, cap(got), ok, want, wantOK)
		}
		if !slices.Equal(ids, before) {
			rt.Fatalf("sortedIDSetIn changed its ids: %q -> %q", before, ids)
		}
		if ok && len(got) > 0 && room != nil && len(ids) <= cap(room) && &got[0] != &room[:1][0] {
			rt.Fatalf("%d ids not written into a room of %d", len(ids), cap(room))
		}
	})
}

// A proposal or verdict of few ids keeps them in its sealed value: three
// allocations (the value, its canonical bytes and its digest), where the
// sorted copy of the ids was a fourth. Its accessors still hand out
// copies, and the caller's list is not kept.
func TestSmallValueKeepsItsIDs(t *testing.T) {
	p := m3Proposal()
	v := mustProposal(t, p)
	got, _ := v.Proposal()
	got.Preconditions[0] = "changed:1"
	p.Preconditions[0] = "changed:2"
	if again, _ := v.Proposal(); !slices.Equal(again.Preconditions, mustProposal(t, m3Proposal()).proposal.Preconditions) {
		t.Fatalf("the sealed preconditions changed: %q", again.Preconditions)
	}
	if racebuild.Enabled {
		return // counted without the race detector only, as the other allocation counts
	}
	p = m3Proposal()
	if len(p.Preconditions) > valueIDs {
		t.Fatalf("the proposal has %d preconditions, more than a value holds", len(p.Preconditions))
	}
	if a := testing.AllocsPerRun(20, func() { NewProposalValue(p) }); a != 3 {
		t.Fatalf("NewProposalValue makes %v allocations, want 3", a)
	}
	e := m3Verdict()
	if a := testing.AllocsPerRun(20, func() { NewVerdictValue(e) }); a != 3 {
		t.Fatalf("NewVerdictValue makes %v allocations, want 3", a)
	}
}
