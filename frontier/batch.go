package frontier

import (
	"bytes"
	"slices"

	"flrh.dev/flrh/protocol"
)

// StableProposalBatch is the protocol's id-only record of one stabilized
// epoch.
type StableProposalBatch = protocol.StableProposalBatch

// PublishedBatch is an RPublishedBatch: a stable batch together with the
// exact proposals and verdicts it names. It is immutable.
type PublishedBatch struct {
	batch     StableProposalBatch
	proposals []Value // canonical-byte order
	verdicts  []Value // canonical-byte order
	digest    string  // published_batch_digest
	canon     []byte  // canonical RPublishedBatch bytes
}

// Batch returns a copy of the nested StableProposalBatch.
func (p *PublishedBatch) Batch() StableProposalBatch {
	b := p.batch
	b.ProposalIDs = slices.Clone(b.ProposalIDs)
	b.EligibilityVerdictIDs = slices.Clone(b.EligibilityVerdictIDs)
	return b
}

// Proposals returns the embedded proposals in canonical order.
func (p *PublishedBatch) Proposals() []Value { return slices.Clone(p.proposals) }

// Verdicts returns the embedded verdicts in canonical order.
func (p *PublishedBatch) Verdicts() []Value { return slices.Clone(p.verdicts) }

// Digest is the published_batch_digest.
func (p *PublishedBatch) Digest() string { return p.digest }

// MarshalJSON writes the canonical RPublishedBatch.
func (p *PublishedBatch) MarshalJSON() ([]byte, error) { return slices.Clone(p.canon), nil }

// valueCount is the number of values the batch holds against max_active_values.
func (p *PublishedBatch) valueCount() int { return len(p.proposals) + len(p.verdicts) }

// comparePublished orders ready batches: ascending logical time, then
// canonical bytes.
func comparePublished(a, b *PublishedBatch) int {
	switch {
	case a.batch.LogicalTime < b.batch.LogicalTime:
		return -1
	case a.batch.LogicalTime > b.batch.LogicalTime:
		return 1
	}
	return bytes.Compare(a.canon, b.canon)
}

// buildBatch stabilizes one epoch at the given global low watermark. The
// epoch's values must pair one proposal with one verdict per proposal_id and
// agree on the rule-set version; otherwise nothing is published.
func buildBatch(p *Profile, e *epoch, lowWatermark int64) (*PublishedBatch, *Rejection) {
	unresolved := func(reason string) *Rejection {
		r := reject(CodeUnresolvedDependency, "/prior_state/open_epochs").at(e.time)
		r.Context.Reason = reason
		return r
	}
	var proposals, verdicts []Value
	for _, sv := range e.values {
		if sv.value.kind == KindEffectProposal {
			proposals = append(proposals, sv.value)
		} else {
			verdicts = append(verdicts, sv.value)
		}
	}
	// Epoch values are in delivery-id order; index them by nested identity.
	byProposal := make(map[string]int, len(proposals))
	for i, v := range proposals {
		if _, dup := byProposal[v.proposal.ProposalID]; dup {
			return nil, unresolved("duplicate proposal_id")
		}
		byProposal[v.proposal.ProposalID] = i
	}
	verdictIDs := make(map[string]bool, len(verdicts))
	verdictOf := make(map[string]int, len(verdicts))
	pairs := make(map[string]int, len(verdicts)) // proposal_id -> verdicts naming it
	for i, v := range verdicts {
		if verdictIDs[v.verdict.VerdictID] {
			return nil, unresolved("duplicate verdict_id")
		}
		verdictIDs[v.verdict.VerdictID] = true
		pairs[v.verdict.ProposalID]++
		verdictOf[v.verdict.ProposalID] = i
	}
	if len(pairs) != len(byProposal) {
		return nil, unresolved("proposal verdict relation is not a total bijection")
	}
	//flrh:orderfree every failing entry yields the same rejection
	for id, n := range pairs {
		if _, ok := byProposal[id]; !ok || n != 1 {
			return nil, unresolved("proposal verdict relation is not a total bijection")
		}
	}
	for _, v := range proposals {
		vd := &verdicts[verdictOf[v.proposal.ProposalID]].verdict
		if vd.RuleSetVersion != v.proposal.Versions.RuleSet {
			return nil, reject(CodeRuleSetVersionMismatch, "/prior_state/open_epochs").
				expect(v.proposal.Versions.RuleSet, vd.RuleSetVersion).at(e.time)
		}
	}
	byCanon := func(a, b Value) int { return bytes.Compare(a.canon, b.canon) }
	slices.SortFunc(proposals, byCanon)
	slices.SortFunc(verdicts, byCanon)
	pids := make([]string, len(proposals))
	for i, v := range proposals {
		pids[i] = v.proposal.ProposalID
	}
	vids := make([]string, len(verdicts))
	for i, v := range verdicts {
		vids[i] = v.verdict.VerdictID
	}
	slices.Sort(pids)
	slices.Sort(vids)
	return newPublishedBatch(p.digest, p.dataflow, e.time, lowWatermark, proposals, verdicts, pids, vids), nil
}

// newPublishedBatch derives every identity of a batch whose values and id
// lists are already in canonical order.
func newPublishedBatch(profileDigest, dataflow string, t, low int64, proposals, verdicts []Value, pids, vids []string) *PublishedBatch {
	pre := make([]byte, 0, 256+72*(len(pids)+len(vids)))
	pre = append(pre, '{')
	pre = appendKey(pre, "contract_version", true)
	pre = appendString(pre, ContractVersion)
	pre = appendKey(pre, "dataflow_version", false)
	pre = appendString(pre, dataflow)
	pre = appendKey(pre, "kind", false)
	pre = appendString(pre, "M3StableBatchPreimage")
	pre = appendKey(pre, "logical_time", false)
	pre = appendInt(pre, t)
	pre = appendKey(pre, "low_watermark", false)
	pre = appendInt(pre, low)
	pre = appendKey(pre, "ordered_eligibility_verdict_ids", false)
	pre = appendStrings(pre, vids)
	pre = appendKey(pre, "ordered_proposal_ids", false)
	pre = appendStrings(pre, pids)
	pre = appendKey(pre, "profile_digest", false)
	pre = appendString(pre, profileDigest)
	pre = append(pre, '}')
	digest := digestOf(pre)
	suffix := hexOf(digest)
	pb := &PublishedBatch{
		batch: StableProposalBatch{
			Kind:                  protocol.KindStableProposalBatch,
			BatchID:               "batch:" + suffix,
			LogicalTime:           t,
			LowWatermark:          low,
			ProposalIDs:           pids,
			EligibilityVerdictIDs: vids,
			BatchDigest:           digest,
			CauseID:               "reaction:" + suffix,
			DataflowVersion:       dataflow,
		},
		proposals: proposals,
		verdicts:  verdicts,
	}
	size := 512 + 72*(len(pids)+len(vids))
	for _, v := range proposals {
		size += len(v.canon) + 1
	}
	for _, v := range verdicts {
		size += len(v.canon) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	b = appendKey(b, "batch", true)
	batchStart := len(b)
	b = appendStableBatch(b, &pb.batch)
	batchBytes := b[batchStart:]
	// The published digest preimage shares the batch and the two value
	// lists with the wire object; hash it from the pieces.
	h := newHasher()
	h.str(`{"batch":`)
	h.bytes(batchBytes)
	h.str(`,"contract_version":`)
	h.bytes(appendString(nil, ContractVersion))
	h.str(`,"kind":"M3PublishedBatchPreimage","ordered_effect_proposals":`)
	b = appendKey(b, "effect_proposals", false)
	listStart := len(b)
	b = appendValues(b, proposals)
	h.bytes(b[listStart:])
	h.str(`,"ordered_eligibility_verdicts":`)
	b = appendKey(b, "eligibility_verdicts", false)
	listStart = len(b)
	b = appendValues(b, verdicts)
	h.bytes(b[listStart:])
	h.str(`}`)
	pb.digest = h.digest()
	b = appendKey(b, "kind", false)
	b = appendString(b, "RPublishedBatch")
	b = appendKey(b, "published_batch_digest", false)
	b = appendString(b, pb.digest)
	pb.canon = append(b, '}')
	return pb
}

func appendValues(b []byte, vs []Value) []byte {
	b = append(b, '[')
	for i := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, vs[i].canon...)
	}
	return append(b, ']')
}

func appendStableBatch(b []byte, s *StableProposalBatch) []byte {
	b = append(b, '{')
	b = appendKey(b, "batch_digest", true)
	b = appendString(b, s.BatchDigest)
	b = appendKey(b, "batch_id", false)
	b = appendString(b, s.BatchID)
	b = appendKey(b, "cause_id", false)
	b = appendString(b, s.CauseID)
	b = appendKey(b, "dataflow_version", false)
	b = appendString(b, s.DataflowVersion)
	b = appendKey(b, "eligibility_verdict_ids", false)
	b = appendStrings(b, s.EligibilityVerdictIDs)
	b = appendKey(b, "kind", false)
	b = appendString(b, "StableProposalBatch")
	b = appendKey(b, "logical_time", false)
	b = appendInt(b, s.LogicalTime)
	b = appendKey(b, "low_watermark", false)
	b = appendInt(b, s.LowWatermark)
	b = appendKey(b, "proposal_ids", false)
	b = appendStrings(b, s.ProposalIDs)
	return append(b, '}')
}
