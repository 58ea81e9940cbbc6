package authority

import (
	"fmt"
	"reflect"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// TestCheckBatchShapeSmallIsMaps holds the scanning shape check of small
// batches to the set-based one it stands in for: over batches drawn from a
// few ids each (so that duplicates, strays and missing pairs are common),
// both give the same rejection or none.
func TestCheckBatchShapeSmallIsMaps(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	base := in.Batch.Proposals[0]
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, smallBatch).Draw(rt, "n")
		id := func(label, prefix string) string {
			return fmt.Sprintf("%s:%d", prefix, rapid.IntRange(0, n+1).Draw(rt, label))
		}
		var b PublishedBatch
		for i := 0; i < n; i++ {
			p := base
			p.ProposalID = id("proposal", "proposal")
			if rapid.IntRange(0, 9).Draw(rt, "malformed") == 0 {
				p.ActionDigest = "sha256:nothex"
			}
			if rapid.IntRange(0, 9).Draw(rt, "canon") == 0 {
				p.Versions.Canonicalization = "other"
			}
			b.Proposals = append(b.Proposals, p)
			b.Verdicts = append(b.Verdicts, protocol.EligibilityVerdict{ProposalID: id("for", "proposal"), VerdictID: id("verdict", "verdict")})
			b.Batch.ProposalIDs = append(b.Batch.ProposalIDs, id("pid", "proposal"))
			b.Batch.EligibilityVerdictIDs = append(b.Batch.EligibilityVerdictIDs, id("vid", "verdict"))
		}
		if rapid.Bool().Draw(rt, "consistent") {
			// Mostly well paired, so the later checks are reached too.
			for i := range b.Proposals {
				b.Batch.ProposalIDs[i] = b.Proposals[i].ProposalID
				b.Verdicts[i].ProposalID = b.Proposals[(i+1)%n].ProposalID
				b.Batch.EligibilityVerdictIDs[i] = b.Verdicts[i].VerdictID
			}
		}
		got, want := checkBatchShapeSmall(b), checkBatchShapeMaps(b)
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("small %+v, maps %+v", got, want)
		}
	})
}
