package authority

import (
	"slices"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// CheckedBatch is a published batch sealed and checked once, under one
// R profile, by SealBatch. The producer of a batch digests it to seal it
// and Authorize digests it again to check it; given the CheckedBatch
// (Input.Checked), Authorize instead compares the batch it is asked to
// decide with the private copy that was checked, member by member, and
// skips the digests only when every member is the same. On any difference,
// or another profile, it checks Input.Batch in full as before, so a
// CheckedBatch can save work but never admit a batch the full check
// would reject. The zero value checks nothing.
type CheckedBatch struct {
	batch   PublishedBatch // a deep copy: no caller can change it
	profile string
	ok      bool
	// plainIDs reports that the batch's digest and id and its published
	// digest need no escaping (computed or compared with computed ones
	// when sealed, or tested then), so that a decision of the batch
	// writes them without the test.
	plainIDs bool
}

// SealBatch computes b's published-batch digest, checks the batch under
// profile exactly as Authorize does (pairing, identity, the stable-batch
// and published-batch digests), and returns b with its digest set and the
// CheckedBatch that lets Authorize skip the same work for it. A batch
// Authorize would reject is the same typed rejection here.
func SealBatch(b PublishedBatch, profile string) (PublishedBatch, CheckedBatch, error) {
	if r := checkBatchIdentity(b, profile, nil); r != nil {
		return b, CheckedBatch{}, r
	}
	d, err := publishedBatchDigest(b)
	if err != nil {
		r := reject("CANONICALIZATION_VIOLATION", "/published_batch")
		r.Actual = err.Error()
		return b, CheckedBatch{}, r
	}
	b.PublishedBatchDigest = d
	// checkBatchIdentity compared the batch's digest and id with the
	// digest it computed, and d was just computed: all three are plain.
	return b, CheckedBatch{batch: copyBatch(b), profile: profile, ok: true, plainIDs: true}, nil
}

// SealBatchDigested is SealBatch for a batch whose producer took both
// its digests over the contract's preimages already, under profile: the
// stable-batch digest it carries (b.Batch.BatchDigest, which binds the
// profile) and published, the published-batch digest. Every other check is SealBatch's; those two
// digests are not taken again. The caller vouches for them: R publishes
// its batches with both (frontier.PublishedBatch), over values whose
// every string it validated as an id, a version or a digest, so no
// canonicalization can fail here either. A digest that is not the
// contract's would seal a batch Authorize then decides without checking
// it, so only a producer that computed it may call this.
func SealBatchDigested(b PublishedBatch, profile, published string) (PublishedBatch, CheckedBatch, error) {
	if r := checkBatchShape(b); r != nil {
		return b, CheckedBatch{}, r
	}
	if id := b.Batch.BatchID; !strings.HasPrefix(id, "batch:") || id[len("batch:"):] != hexOf(b.Batch.BatchDigest) {
		return b, CheckedBatch{}, reject("BATCH_DIGEST_MISMATCH", "/published_batch/batch/batch_digest")
	}
	b.PublishedBatchDigest = published
	plainIDs := cjson.Plain(b.Batch.BatchDigest) && cjson.Plain(b.Batch.BatchID) && cjson.Plain(published)
	return b, CheckedBatch{batch: copyBatch(b), profile: profile, ok: true, plainIDs: plainIDs}, nil
}

// covers reports whether c checked exactly b under profile.
func (c CheckedBatch) covers(b PublishedBatch, profile string) bool {
	return c.ok && c.profile == profile && sameBatch(c.batch, b)
}

// copyBatch copies every slice of b, so later writes to the caller's
// slices cannot reach the copy. Strings are immutable and shared. Every
// id list of the copy (the batch's two, each proposal's preconditions,
// each verdict's supports) is cut from one array, each capped at its
// length so that an append to one moves it and cannot reach the next:
// three allocations for a batch, however many lists it has, and two for
// a batch of one proposal and one verdict.
func copyBatch(b PublishedBatch) PublishedBatch {
	n := len(b.Batch.ProposalIDs) + len(b.Batch.EligibilityVerdictIDs)
	for i := range b.Proposals {
		n += len(b.Proposals[i].Preconditions)
	}
	for i := range b.Verdicts {
		n += len(b.Verdicts[i].SupportDerivationIDs)
	}
	var ids []string
	if n > 0 {
		ids = make([]string, n)
	}
	b.Batch.ProposalIDs, ids = cutCopy(b.Batch.ProposalIDs, ids)
	b.Batch.EligibilityVerdictIDs, ids = cutCopy(b.Batch.EligibilityVerdictIDs, ids)
	if len(b.Proposals) == 1 && len(b.Verdicts) == 1 {
		// A batch of one (the workflow's): its proposal and verdict
		// together, each list capped at one.
		one := &struct {
			p [1]protocol.EffectProposal
			v [1]protocol.EligibilityVerdict
		}{[1]protocol.EffectProposal{b.Proposals[0]}, [1]protocol.EligibilityVerdict{b.Verdicts[0]}}
		b.Proposals, b.Verdicts = one.p[:], one.v[:]
	} else {
		b.Proposals, b.Verdicts = slices.Clone(b.Proposals), slices.Clone(b.Verdicts)
	}
	for i := range b.Proposals {
		b.Proposals[i].Preconditions, ids = cutCopy(b.Proposals[i].Preconditions, ids)
	}
	for i := range b.Verdicts {
		b.Verdicts[i].SupportDerivationIDs, ids = cutCopy(b.Verdicts[i].SupportDerivationIDs, ids)
	}
	return b
}

// cutCopy copies s into the front of ids and returns the copy, capped at
// its length, and the rest of ids. A nil s stays nil and an empty one
// empty, as slices.Clone keeps them (an empty s comes back capped at
// nothing, so no element of the caller's array is reachable through it).
func cutCopy(s, ids []string) (cp, rest []string) {
	if len(s) == 0 {
		return s[:0:0], ids
	}
	k := copy(ids, s)
	return ids[:k:k], ids[k:]
}

// sameBatch reports whether two published batches have the same members.
// Every member is compared (TestSameBatchSeesEveryMember changes each one
// in turn, by reflection, so a member added to a protocol type fails the
// test until it is compared here). A nil and an empty slice are the same:
// both encode as [] in every preimage. Strings shared with the checked copy
// compare in constant time.
func sameBatch(a, b PublishedBatch) bool {
	if a.PublishedBatchDigest != b.PublishedBatchDigest || len(a.Proposals) != len(b.Proposals) || len(a.Verdicts) != len(b.Verdicts) {
		return false
	}
	ha, hb := a.Batch, b.Batch
	if ha.Kind != hb.Kind || ha.BatchID != hb.BatchID || ha.LogicalTime != hb.LogicalTime || ha.LowWatermark != hb.LowWatermark ||
		ha.BatchDigest != hb.BatchDigest || ha.CauseID != hb.CauseID || ha.DataflowVersion != hb.DataflowVersion ||
		!slices.Equal(ha.ProposalIDs, hb.ProposalIDs) || !slices.Equal(ha.EligibilityVerdictIDs, hb.EligibilityVerdictIDs) {
		return false
	}
	for i := range a.Proposals {
		pa, pb := &a.Proposals[i], &b.Proposals[i]
		if pa.Kind != pb.Kind || pa.ProposalID != pb.ProposalID || pa.EffectType != pb.EffectType || pa.ActionDigest != pb.ActionDigest ||
			pa.CauseID != pb.CauseID || pa.CorrelationID != pb.CorrelationID || pa.ProposalDedupKey != pb.ProposalDedupKey ||
			pa.DestinationDigest != pb.DestinationDigest || pa.GoalID != pb.GoalID || pa.ObligationID != pb.ObligationID ||
			pa.DeclaredRiskHint != pb.DeclaredRiskHint || pa.Versions != pb.Versions || !slices.Equal(pa.Preconditions, pb.Preconditions) {
			return false
		}
	}
	for i := range a.Verdicts {
		va, vb := &a.Verdicts[i], &b.Verdicts[i]
		if va.Kind != vb.Kind || va.VerdictID != vb.VerdictID || va.ProposalID != vb.ProposalID || va.Status != vb.Status ||
			va.CauseID != vb.CauseID || va.RuleSetVersion != vb.RuleSetVersion || !slices.Equal(va.SupportDerivationIDs, vb.SupportDerivationIDs) {
			return false
		}
	}
	return true
}
