package seam

import "testing"

// BenchmarkSealAndProjectVerified projects one proposal with two bound
// preconditions and one left to the frontier, the shape a workflow tick
// hands the seam.
func BenchmarkSealAndProjectVerified(b *testing.B) {
	r, bind := lrRProfile(b), lrBinding().Sealed()
	l := truthFour(b)
	v, ok := VerifyBinding(bind)
	if !ok {
		b.Fatal("binding profile does not verify")
	}
	q := QueryBatch{BindingProfileDigest: bind.ProfileDigest, LFixpointDigest: l.FixpointDigest,
		RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: []Query{{
			Proposal:                lrProposal("bench", "p:a", "p:b", "frontier:c"),
			FactRequirements:        []FactRequirement{req(b, "p:b", Negative, "false_only"), req(b, "p:a", Positive, "true_only")},
			FrontierPreconditionIDs: []string{"frontier:c"}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := SealAndProjectVerified(l, r, v, q); rej != nil {
			b.Fatal(rej.Code, rej.Path)
		}
	}
}
