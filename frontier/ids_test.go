package frontier

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/internal/racebuild"
)

// A published batch's batch digest, batch id, cause id and published
// digest are one string (checkScratchBatch holds each to its derivation):
// newPublishedBatch makes three allocations, the batch, its canonical bytes
// and that string.
func TestPublishedBatchStringsAreOneString(t *testing.T) {
	p := mustProposal(t, m3Proposal())
	v := mustVerdict(t, m3Verdict())
	h := newHasher()
	profile := "sha256:" + strings.Repeat("ab", 32)
	props, verds := []Value{p}, []Value{v}
	pids, vids := []string{p.proposal.ProposalID}, []string{v.verdict.VerdictID}
	mk := func() *PublishedBatch {
		return newPublishedBatch(nil, profile, "dataflow/0", 9, 4, props, verds, pids, vids, h)
	}
	b := mk()
	hex := strings.TrimPrefix(b.batch.BatchDigest, "sha256:")
	if b.batch.BatchID != "batch:"+hex || b.batch.CauseID != "reaction:"+hex || !validDigest(b.digest) || !validDigest(b.batch.BatchDigest) {
		t.Fatalf("batch strings %q %q %q %q", b.batch.BatchDigest, b.batch.BatchID, b.batch.CauseID, b.digest)
	}
	if racebuild.Enabled {
		return // counted without the race detector only, as the other allocation counts
	}
	if a := testing.AllocsPerRun(20, func() { mk() }); a != 3 {
		t.Fatalf("newPublishedBatch makes %v allocations, want 3", a)
	}
}

// TestSortedDigestsIsSorted holds sortDigests, its keys on the stack for
// a few deltas and made for more, to the digests sorted, over drawn
// digests that often share long prefixes.
func TestSortedDigestsIsSorted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringMatching(`(sha256:[0-9a-f]{0,20})?`).Draw(t, "prefix")
		tails := rapid.SliceOfN(rapid.StringMatching(`[0-9a-f]{0,12}`), 0, 20).Draw(t, "tails")
		ds := make([]string, len(tails))
		want := make([]string, len(tails))
		for i, s := range tails {
			ds[i] = prefix + s
			want[i] = prefix + s
		}
		slices.Sort(want)
		if got := sortDigests(ds); !slices.Equal(got, want) {
			t.Fatalf("sortedDigests = %s, want %s", strings.Join(got, " "), strings.Join(want, " "))
		}
	})
}

// TestOneProposalBatchIsTheGeneralOne: an epoch of one proposal and its
// verdict, whose batch takes its values and ids from the batch's own
// allocation, publishes the batch the general path makes of the same
// values and ids, whichever order the epoch holds them in.
func TestOneProposalBatchIsTheGeneralOne(t *testing.T) {
	p := m3Profile(t)
	prop, verd := mustProposal(t, m3Proposal()), mustVerdict(t, m3Verdict())
	for _, order := range [][]Value{{prop, verd}, {verd, prop}} {
		e := &epoch{time: 9}
		for _, v := range order {
			e.values = append(e.values, &storedValue{value: v})
		}
		got, rej := buildBatch(&p, e, 4, newHasher())
		if rej != nil {
			t.Fatal(rej)
		}
		want := newPublishedBatch(nil, p.digest, p.dataflow, 9, 4, []Value{prop}, []Value{verd},
			[]string{prop.proposal.ProposalID}, []string{verd.verdict.VerdictID}, newHasher())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %+v, general %+v", got, want)
		}
	}
}
