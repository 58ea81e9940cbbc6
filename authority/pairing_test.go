package authority

import (
	"sort"
	"strings"
	"testing"
)

// A batch of two proposals whose verdicts are published in the opposite
// order (R orders proposals, verdicts and id lists each by its own
// canonical bytes) is decided per proposal with its own verdict.
func TestVerdictsPairByProposalNotPosition(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	b := in.Batch
	p1, v1 := b.Proposals[0], b.Verdicts[0]
	p2, v2 := p1, v1
	p2.ProposalID = "proposal:zz-second"
	p2.ActionDigest = "sha256:" + strings.Repeat("0", 64) // sorts before p1 by canonical bytes
	v2.ProposalID, v2.VerdictID, v2.Status = p2.ProposalID, "verdict:aa-second", "ineligible"
	v1.VerdictID = "verdict:zz-first"
	b.Proposals = append(b.Proposals[:0:0], p2, p1) // p2 first
	b.Verdicts = append(b.Verdicts[:0:0], v1, v2)   // v1 first: not paired by position
	b.Batch.ProposalIDs = []string{p1.ProposalID, p2.ProposalID}
	b.Batch.EligibilityVerdictIDs = []string{v1.VerdictID, v2.VerdictID}
	sort.Strings(b.Batch.ProposalIDs)
	sort.Strings(b.Batch.EligibilityVerdictIDs)
	d := StableBatchDigest(in.ProfileDigest, b.Batch.LogicalTime, b.Batch.LowWatermark, b.Batch.ProposalIDs, b.Batch.EligibilityVerdictIDs, b.Batch.DataflowVersion)
	b.Batch.BatchDigest, b.Batch.BatchID = d, "batch:"+strings.TrimPrefix(d, "sha256:")
	b.PublishedBatchDigest = PublishedBatchDigest(b)
	in.Batch = b
	second := in.Actions[0]
	second.ProposalID = p2.ProposalID
	second.Nonce = "nonce:second"
	in.Actions = append(in.Actions, second)

	dec, err := Authorize(in)
	if err != nil {
		t.Fatalf("a well-formed two-proposal batch was refused: %v", err)
	}
	kinds := map[string]string{}
	for _, o := range dec.Outcomes {
		kinds[o.ProposalID] = o.Kind
		if o.ProposalID == p2.ProposalID && (o.Rejection == nil || o.Rejection.Code != "PROPOSAL_INELIGIBLE") {
			t.Errorf("the ineligible proposal was not rejected as such: %+v", o.Rejection)
		}
	}
	if kinds[p1.ProposalID] != OutcomeIntent || kinds[p2.ProposalID] != OutcomeRejected {
		t.Fatalf("outcomes %v", kinds)
	}

	// A verdict for a proposal the batch does not carry breaks the bijection.
	bad := in
	bad.Batch.Verdicts = append(bad.Batch.Verdicts[:0:0], v1, v1)
	if _, err := Authorize(bad); err == nil || !strings.Contains(err.Error(), "BATCH_IDENTITY_MISMATCH") {
		t.Fatalf("duplicate verdict accepted: %v", err)
	}
}
