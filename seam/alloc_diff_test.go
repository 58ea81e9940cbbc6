package seam

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
	"pgregory.net/rapid"
)

// sortedIDSetCopy is sortedIDSet as it was written before ids in order
// were kept as given: always a sorted copy.
func sortedIDSetCopy(ids []string) ([]string, bool) {
	out := slices.Clone(ids)
	for _, s := range out {
		if !cjson.ValidID(s) {
			return nil, false
		}
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, false
		}
	}
	return out, true
}

// normalizeValueCopy is normalizeValue as it was written before the
// requirements' canonical forms shared one buffer and frontier ids in
// order were kept as given.
func normalizeValueCopy(q *Query, v frontier.Value) *parsedQuery {
	p, _ := v.Proposal()
	pq := &parsedQuery{proposal: v, proposalID: p.ProposalID, reqs: slices.Clone(q.FactRequirements)}
	canon := make([][]byte, len(pq.reqs))
	idx := make([]int, len(pq.reqs))
	for i := range pq.reqs {
		r := &pq.reqs[i]
		canon[i] = r.appendCanonical(make([]byte, 0, 96+len(r.Literal.Atom.canon)+len(r.PreconditionID)))
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(canon[a], canon[b]) })
	reqs := make([]FactRequirement, len(idx))
	pq.reqCanon = make([][]byte, len(idx))
	for i, j := range idx {
		reqs[i], pq.reqCanon[i] = pq.reqs[j], canon[j]
	}
	pq.reqs = reqs
	pq.frontier = slices.Clone(q.FrontierPreconditionIDs)
	slices.Sort(pq.frontier)
	pq.digest = cjson.DigestWritten(pq.appendPreimage)
	return pq
}

func TestSortedIDSetIsSortedCopy(t *testing.T) {
	pool := []string{"a", "b", "c:1", "c:2", "derivation:x", "not an id", "", "Z"}
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOfN(rapid.SampledFrom(pool), 0, 6).Draw(rt, "ids")
		if rapid.Bool().Draw(rt, "sorted") {
			slices.Sort(ids)
			ids = slices.Compact(ids)
		}
		before := slices.Clone(ids)
		got, ok := sortedIDSet(ids)
		want, wantOK := sortedIDSetCopy(ids)
		if ok != wantOK || !slices.Equal(got, want) || (got == nil) != (want == nil) {
			rt.Fatalf("sortedIDSet(%q) = %q, %v; the sorted copy is %q, %v", ids, got, ok, want, wantOK)
		}
		if !slices.Equal(ids, before) {
			rt.Fatalf("sortedIDSet changed its ids: %q -> %q", before, ids)
		}
	})
}

func TestNormalizeValueIsCopyingNormalize(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var reqs []FactRequirement
		var pre []string
		for j, k := 0, rapid.IntRange(0, 6).Draw(rt, "requirements"); j < k; j++ {
			id := fmt.Sprintf("p:%d", rapid.IntRange(0, 9).Draw(rt, "id"))
			reqs = append(reqs, req(rt, id, rapid.SampledFrom([]Polarity{Positive, Negative}).Draw(rt, "polarity"),
				rapid.SampledFrom(truthSubjects).Draw(rt, "subject")))
			pre = append(pre, id)
		}
		fr := rapid.SliceOfN(rapid.SampledFrom([]string{"frontier:a", "frontier:b", "frontier:c", "frontier:d"}), 0, 4).Draw(rt, "frontier")
		q := Query{Proposal: lrProposal("n", append(slices.Clone(pre), fr...)...), FactRequirements: reqs, FrontierPreconditionIDs: fr}
		v, rej := frontier.NewProposalValue(q.Proposal)
		if rej != nil {
			return // a malformed proposal never reaches normalizeValue
		}
		frBefore, reqsBefore := slices.Clone(fr), slices.Clone(reqs)
		got, want := normalizeValue(&q, v, nil), normalizeValueCopy(&q, v)
		if got.digest != want.digest || got.proposalID != want.proposalID || !slices.Equal(got.reqs, want.reqs) ||
			!slices.Equal(got.frontier, want.frontier) || !slices.EqualFunc(got.reqCanon, want.reqCanon, bytes.Equal) ||
			!bytes.Equal(got.appendCanonical(nil), want.appendCanonical(nil)) {
			rt.Fatalf("normalizeValue differs from the copying normalize\n got %+v\nwant %+v", got, want)
		}
		if !slices.Equal(fr, frBefore) || !slices.Equal(reqs, reqsBefore) {
			rt.Fatalf("normalizeValue changed its query")
		}
	})
}

// An atomIndex answers as a map from each atom to the order it was added
// in, below and above the number it scans.
func TestAtomIndexIsMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var x atomIndex
		ref := map[string]int{}
		for _, k := range rapid.SliceOfN(rapid.StringMatching(`[a-e]{1,2}`), 0, 3*atomIndexScan).Draw(rt, "ops") {
			if _, ok := ref[k]; !ok && rapid.Bool().Draw(rt, "add") {
				x.add(k)
				ref[k] = len(ref)
			}
			want, ok := ref[k]
			if !ok {
				want = -1
			}
			if got := x.find(k); got != want || x.has(k) != ok {
				rt.Fatalf("find(%q) = %d after %d atoms, want %d", k, got, len(ref), want)
			}
		}
		for k, want := range ref {
			if got := x.find(k); got != want {
				rt.Fatalf("find(%q) = %d, want %d", k, got, want)
			}
		}
	})
}
