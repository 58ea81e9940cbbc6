package seam

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/internal/racebuild"
	"pgregory.net/rapid"
)

// projectPlain is Project with the projector's rooms unused: every list
// made on its own.
func projectPlain(l Materialization, r frontier.Profile, b BindingProfile, q QueryBatch) (*Projection, *Rejection) {
	var trusted Rejection
	out, rej := projectWith(&projector{l: &l, r: &r, b: &b, plain: true}, &q, &trusted)
	if rej != nil {
		return nil, withTrusted(rej, &trusted)
	}
	return out, nil
}

// A projection that keeps a batch of one query, the facts of a small
// materialization and the evidence rows in the projector's rooms answers
// as one that makes every list on its own: drawn materializations of none
// to four facts in any order (the room holds two), batches of one query
// (the room's) or two, requirements on atoms with and without a fact
// state, projected once (SealAndProjectVerified) and again through the
// same projector's rooms after a rejection.
func TestProjectorRoomsArePlain(t *testing.T) {
	r, b, vb := lrVerified(t)
	rapid.Check(t, func(rt *rapid.T) {
		l, q := drawOneOrTwoQueries(rt, r, b)
		want := outcomeJSON(projectPlain(l, r, b, q.Sealed()))
		if got := outcomeJSON(SealAndProjectVerified(l, r, vb, q)); got != want {
			rt.Fatalf("SealAndProjectVerified with its rooms\n got %s\nwant %s", got, want)
		}
		if got := outcomeJSON(Project(l, r, b, q.Sealed())); got != want {
			rt.Fatalf("Project with its rooms\n got %s\nwant %s", got, want)
		}
	})
}

// A refund tick's projection (one query of two requirements and a
// frontier precondition) keeps its parsed query, its list, its facts and
// its evidence rows in the projector, writes its command into the
// projection preimage without a copy, and its proposal and verdict values
// keep their id sets, and its batch digest and its own are one string,
// and its command is the room's alone (a command of its own was made
// first, then left for the room's), and the projector's frame is
// recycled: 14 allocations, where each of those was one of its own (25).
func TestOneQueryProjectionAllocations(t *testing.T) {
	if racebuild.Enabled {
		return // the race detector's pools drop what is put back
	}
	r, bind := lrRProfile(t), lrBinding().Sealed()
	l := truthFour(t)
	l.Facts = l.Facts[:2]
	l.QueryAtoms = []Atom{l.Facts[0].Atom, l.Facts[1].Atom}
	v, _ := VerifyBinding(bind)
	q := QueryBatch{BindingProfileDigest: bind.ProfileDigest, LFixpointDigest: l.FixpointDigest,
		RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: []Query{{
			Proposal:                lrProposal("allocs", "p:a", "p:b", "frontier:c"),
			FactRequirements:        []FactRequirement{req(t, "p:b", Negative, "false_only"), req(t, "p:a", Positive, "true_only")},
			FrontierPreconditionIDs: []string{"frontier:c"}}}}
	if _, rej := SealAndProjectVerified(l, r, v, q); rej != nil {
		t.Fatal(rej.Code, rej.Path)
	}
	if a := testing.AllocsPerRun(50, func() { SealAndProjectVerified(l, r, v, q) }); a > 14 {
		t.Fatalf("SealAndProjectVerified makes %v allocations, want at most 14", a)
	}
}

// SealAndProjectVerified's frame is recycled: a projection it returned
// answers the same, byte for byte, after the frame has served other
// projections (sealed and undigested, of other batches), and a rejection
// too.
func TestSealFrameKeepsNothingReturned(t *testing.T) {
	r, b, vb := lrVerified(t)
	rapid.Check(t, func(rt *rapid.T) {
		l, q := drawOneOrTwoQueries(rt, r, b)
		p, rej := SealAndProjectVerified(l, r, vb, q)
		want := outcomeJSON(p, rej)
		for i, n := 0, rapid.IntRange(1, 3).Draw(rt, "others"); i < n; i++ {
			l2, q2 := drawOneOrTwoQueries(rt, r, b)
			if rapid.Bool().Draw(rt, "undigested") {
				SealAndProjectVerifiedUndigested(l2, r, vb, q2)
			} else {
				SealAndProjectVerified(l2, r, vb, q2)
			}
		}
		if got := outcomeJSON(p, rej); got != want {
			rt.Fatalf("a projection changed once its frame served others\n got %s\nwant %s", got, want)
		}
	})
}

// drawOneOrTwoQueries draws a materialization of none to four of
// truthFour's facts in any order, its query atoms all four or the facts'
// own, and a batch of one or two queries whose requirements name atoms
// with and without a fact state.
func drawOneOrTwoQueries(rt *rapid.T, r frontier.Profile, b BindingProfile) (Materialization, QueryBatch) {
	four := truthFour(rt)
	l := four
	l.Facts = nil
	for _, i := range rapid.Permutation([]int{0, 1, 2, 3}).Draw(rt, "facts order")[:rapid.IntRange(0, 4).Draw(rt, "facts")] {
		l.Facts = append(l.Facts, four.Facts[i])
	}
	if rapid.Bool().Draw(rt, "only the facts' atoms declared") {
		l.QueryAtoms = nil
		for _, f := range l.Facts {
			l.QueryAtoms = append(l.QueryAtoms, f.Atom)
		}
	}
	var qs []Query
	for i, n := 0, rapid.IntRange(1, 2).Draw(rt, "queries"); i < n; i++ {
		reqs, pre, fr := drawRequirements(rt, 3, "frontier:c")
		qs = append(qs, Query{Proposal: lrProposal(fmt.Sprintf("q%d", i), pre...), FactRequirements: reqs, FrontierPreconditionIDs: fr})
	}
	return l, QueryBatch{BindingProfileDigest: b.ProfileDigest, LFixpointDigest: l.FixpointDigest,
		RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: qs}
}
