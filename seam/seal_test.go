package seam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// outcomeJSON renders what a Project call returned, projection or
// rejection, byte for byte.
func outcomeJSON(p *Projection, rej *Rejection) string {
	if rej != nil {
		b, _ := json.Marshal(rej)
		return "rejected " + string(b)
	}
	b, _ := json.Marshal(p)
	return "projected " + string(b)
}

// truthSubjects are the subjects of truthFour's four facts.
var truthSubjects = []string{"true_only", "false_only", "both", "neither"}

// drawRequirements draws up to most fact requirements over truthFour's
// subjects, ids p:0, p:1, ..., and whether the query also names frontier
// precondition frontierID; pre is every precondition the proposal names.
func drawRequirements(rt *rapid.T, most int, frontierID string) (reqs []FactRequirement, pre, frontierIDs []string) {
	for j, k := 0, rapid.IntRange(0, most).Draw(rt, "requirements"); j < k; j++ {
		id := fmt.Sprintf("p:%d", j)
		reqs = append(reqs, req(rt, id, rapid.SampledFrom([]Polarity{Positive, Negative}).Draw(rt, "polarity"),
			rapid.SampledFrom(truthSubjects).Draw(rt, "subject")))
		pre = append(pre, id)
	}
	if rapid.Bool().Draw(rt, "frontier") {
		frontierIDs = []string{frontierID}
		pre = append(pre, frontierIDs...)
	}
	return reqs, pre, frontierIDs
}

// SealAndProject answers exactly as Project over the sealed batch: the same
// projection, or the same rejection (code, path, context and the digests
// it trusts), whatever is wrong with the batch and in whichever order.
func TestSealAndProjectIsProjectOfSealed(t *testing.T) {
	r := lrRProfile(t)
	rapid.Check(t, func(rt *rapid.T) {
		l, b := truthFour(rt), lrBinding()
		var qs []Query
		for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "queries"); i < n; i++ {
			reqs, pre, frontierIDs := drawRequirements(rt, 5, fmt.Sprintf("frontier:%d", i))
			q := Query{Proposal: lrProposal(fmt.Sprintf("q%d", rapid.IntRange(0, 4).Draw(rt, "suffix")), pre...),
				FactRequirements: reqs, FrontierPreconditionIDs: frontierIDs}
			switch rapid.IntRange(0, 9).Draw(rt, "fault") {
			case 0:
				q.Proposal.Versions.RuleSet = "rules/wrong/1"
			case 1:
				q.Proposal.Preconditions = append(q.Proposal.Preconditions, "p:orphan")
			case 2:
				q.Proposal.ProposalID = "not an id"
			case 3:
				q.QueryDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
			case 4:
				q.Proposal.Versions.Canonicalization = "other/1"
			}
			qs = append(qs, q)
		}
		q := QueryBatch{BindingProfileDigest: b.ProfileDigest, LFixpointDigest: l.FixpointDigest,
			RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: qs}
		switch rapid.IntRange(0, 9).Draw(rt, "batch fault") {
		case 0:
			q.LFixpointDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		case 1:
			b.MaxQueries = 1
			b = b.Sealed()
			q.BindingProfileDigest = b.ProfileDigest
		case 2:
			l.Facts = l.Facts[1:]
		case 3:
			b.ProfileDigest = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
		case 4:
			q.QueryBatchDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		}
		before, _ := json.Marshal(q)
		want := outcomeJSON(Project(l, r, b, q.Sealed()))
		got := outcomeJSON(SealAndProject(l, r, b, q))
		if got != want {
			rt.Fatalf("SealAndProject differs from Project of the sealed batch\n got %s\nwant %s", got, want)
		}
		// Verified once, the binding profile projects as it does checked
		// every time; one whose digest is not its own does not verify, and
		// the zero VerifiedBinding is checked in full.
		v, ok := VerifyBinding(b)
		if ok != (b.Sealed().ProfileDigest == b.ProfileDigest) {
			rt.Fatalf("VerifyBinding says %v for digest %s", ok, b.ProfileDigest)
		}
		if !ok {
			v = VerifiedBinding{}
			if zero := outcomeJSON(SealAndProjectVerified(l, r, v, q)); zero == want {
				rt.Fatalf("the zero VerifiedBinding projected the batch of another binding profile: %s", zero)
			}
		} else if got := outcomeJSON(SealAndProjectVerified(l, r, v, q)); got != want {
			rt.Fatalf("SealAndProjectVerified differs from Project of the sealed batch\n got %s\nwant %s", got, want)
		}
		if after, _ := json.Marshal(q); !bytes.Equal(before, after) {
			rt.Fatalf("SealAndProject changed its batch")
		}
	})
}
