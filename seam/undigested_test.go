package seam

import (
	"testing"

	"pgregory.net/rapid"
)

// SealAndProjectVerifiedUndigested answers as SealAndProjectVerified with
// the projection's digest and the query batch's emptied: the same
// verdicts, command and other members, or the same rejection, over drawn
// materializations and batches of one or two queries; and a successful
// undigested projection hashes neither preimage (its digests are empty).
func TestUndigestedIsSealAndProjectVerified(t *testing.T) {
	r, b, vb := lrVerified(t)
	var projected, rejected int
	defer func() {
		if projected == 0 || rejected == 0 {
			t.Errorf("%d projected, %d rejected: both outcomes must be reached", projected, rejected)
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		l, q := drawOneOrTwoQueries(rt, r, b)
		wantP, wantRej := SealAndProjectVerified(l, r, vb, q)
		gotP, gotRej := SealAndProjectVerifiedUndigested(l, r, vb, q)
		if wantRej != nil {
			rejected++
			if got, want := outcomeJSON(gotP, gotRej), outcomeJSON(nil, wantRej); got != want {
				rt.Fatalf("undigested\n got %s\nwant %s", got, want)
			}
			return
		}
		projected++
		if gotRej != nil || gotP.Digest != "" || gotP.QueryBatchDigest != "" {
			rt.Fatalf("undigested: %s, digests %q %q", outcomeJSON(gotP, gotRej), gotP.Digest, gotP.QueryBatchDigest)
		}
		wantP.Digest, wantP.QueryBatchDigest = "", ""
		if got, want := outcomeJSON(gotP, nil), outcomeJSON(wantP, nil); got != want {
			rt.Fatalf("undigested\n got %s\nwant %s", got, want)
		}
		// The lists in the order SealAndProjectVerified gives them, which
		// the canonical bytes above do not show.
		if (gotP.Command == nil) != (wantP.Command == nil) {
			rt.Fatalf("command %v, want %v", gotP.Command, wantP.Command)
		}
		if gotP.Command != nil {
			for i, d := range gotP.Command.Deltas {
				if d.DeliveryID() != wantP.Command.Deltas[i].DeliveryID() {
					rt.Fatalf("delta %d is %s, want %s", i, d.DeliveryID(), wantP.Command.Deltas[i].DeliveryID())
				}
			}
		}
		for i, v := range gotP.Verdicts {
			if v.Digest() != wantP.Verdicts[i].Digest() {
				rt.Fatalf("verdict %d is %s, want %s", i, v.Digest(), wantP.Verdicts[i].Digest())
			}
		}
	})
}
