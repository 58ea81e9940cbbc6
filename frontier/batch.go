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

// SharedBatch is Batch without the copies of its id lists, for callers
// that only read them: the lists share the batch's arrays, capped, so
// that an append moves them.
func (p *PublishedBatch) SharedBatch() StableProposalBatch {
	b := p.batch
	b.ProposalIDs = slices.Clip(b.ProposalIDs)
	b.EligibilityVerdictIDs = slices.Clip(b.EligibilityVerdictIDs)
	return b
}

// Proposals returns the embedded proposals in canonical order.
func (p *PublishedBatch) Proposals() []Value { return slices.Clone(p.proposals) }

// Verdicts returns the embedded verdicts in canonical order.
func (p *PublishedBatch) Verdicts() []Value { return slices.Clone(p.verdicts) }

// NumProposals and ProposalAt read the embedded proposals in canonical
// order without copying the list; NumVerdicts and VerdictAt the verdicts.
func (p *PublishedBatch) NumProposals() int      { return len(p.proposals) }
func (p *PublishedBatch) ProposalAt(i int) Value { return p.proposals[i] }
func (p *PublishedBatch) NumVerdicts() int       { return len(p.verdicts) }
func (p *PublishedBatch) VerdictAt(i int) Value  { return p.verdicts[i] }

// Digest is the published_batch_digest.
func (p *PublishedBatch) Digest() string { return p.digest }

// MarshalJSON writes the canonical RPublishedBatch.
func (p *PublishedBatch) MarshalJSON() ([]byte, error) {
	if p.canon == nil {
		return p.canonical(), nil // written for this call
	}
	return slices.Clone(p.canon), nil
}

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
	return bytes.Compare(a.canonical(), b.canonical())
}

// buildBatch stabilizes one epoch at the given global low watermark. The
// epoch's values must pair one proposal with one verdict per proposal_id and
// agree on the rule-set version; otherwise nothing is published.
func buildBatch(p *Profile, e *epoch, lowWatermark int64, h *hasher) (*PublishedBatch, *Rejection) {
	unresolved := func(reason string) *Rejection {
		r := reject(CodeUnresolvedDependency, "/prior_state/open_epochs").at(e.time)
		r.Context.Reason = reason
		return r
	}
	// Work on pointers to the epoch's values: sorting them moves a word,
	// not a whole Value, and pairing is checked by sorting instead of maps.
	np := 0
	for _, sv := range e.values {
		if sv.value.kind == KindEffectProposal {
			np++
		}
	}
	nv := len(e.values) - np
	// One proposal and its verdict, each tick's batch: the pointers on
	// the stack, and the batch, its values and its ids from one
	// allocation (publishedRoom).
	var ptrBuf [5]*Value
	var ptrs []*Value
	var room *publishedRoom
	if np == 1 && nv == 1 {
		ptrs, room = ptrBuf[:], new(publishedRoom)
	} else {
		ptrs = make([]*Value, 2*np+3*nv)
	}
	carve := func(k int) []*Value {
		part := ptrs[:0:k]
		ptrs = ptrs[k:]
		return part
	}
	props, verds := carve(np), carve(nv) // epoch (delivery-id) order
	byPID := carve(np)                   // proposals by proposal_id
	byVID := carve(nv)                   // verdicts by verdict_id
	byVP := carve(nv)                    // verdicts by the proposal_id they name
	for _, sv := range e.values {
		if sv.value.kind == KindEffectProposal {
			props = append(props, &sv.value)
		} else {
			verds = append(verds, &sv.value)
		}
	}
	byPID = append(byPID, props...)
	slices.SortFunc(byPID, func(a, b *Value) int { return compareCanonString(a.proposal.ProposalID, b.proposal.ProposalID) })
	for i := 1; i < len(byPID); i++ {
		if byPID[i].proposal.ProposalID == byPID[i-1].proposal.ProposalID {
			return nil, unresolved("duplicate proposal_id")
		}
	}
	byVID = append(byVID, verds...)
	slices.SortFunc(byVID, func(a, b *Value) int { return compareCanonString(a.verdict.VerdictID, b.verdict.VerdictID) })
	for i := 1; i < len(byVID); i++ {
		if byVID[i].verdict.VerdictID == byVID[i-1].verdict.VerdictID {
			return nil, unresolved("duplicate verdict_id")
		}
	}
	// With proposal ids distinct, the relation is a total bijection exactly
	// when the verdicts' proposal ids, sorted, are the proposals' ids.
	byVP = append(byVP, verds...)
	slices.SortFunc(byVP, func(a, b *Value) int { return compareCanonString(a.verdict.ProposalID, b.verdict.ProposalID) })
	if len(byVP) != len(byPID) {
		return nil, unresolved("proposal verdict relation is not a total bijection")
	}
	mismatch := false
	for i, v := range byVP {
		if v.verdict.ProposalID != byPID[i].proposal.ProposalID {
			return nil, unresolved("proposal verdict relation is not a total bijection")
		}
		mismatch = mismatch || v.verdict.RuleSetVersion != byPID[i].proposal.Versions.RuleSet
	}
	if mismatch {
		// Report the first mismatched proposal in epoch order.
		for _, v := range props {
			k, _ := slices.BinarySearchFunc(byVP, v.proposal.ProposalID, func(x *Value, id string) int {
				return compareCanonString(x.verdict.ProposalID, id)
			})
			if vd := &byVP[k].verdict; vd.RuleSetVersion != v.proposal.Versions.RuleSet {
				return nil, reject(CodeRuleSetVersionMismatch, "/prior_state/open_epochs").
					expect(v.proposal.Versions.RuleSet, vd.RuleSetVersion).at(e.time)
			}
		}
	}
	var pids []string
	if room != nil {
		pids = room.ids[:]
	} else {
		pids = make([]string, len(byPID)+len(byVID))
	}
	vids := pids[len(byPID):]
	pids = pids[:len(byPID):len(byPID)]
	for i, v := range byPID {
		pids[i] = v.proposal.ProposalID
	}
	for i, v := range byVID {
		vids[i] = v.verdict.VerdictID
	}
	byCanon := func(a, b *Value) int { return bytes.Compare(a.canon, b.canon) }
	slices.SortFunc(props, byCanon)
	slices.SortFunc(verds, byCanon)
	var values []Value
	if room != nil {
		values = room.values[:]
	} else {
		values = make([]Value, len(e.values))
	}
	proposals, verdicts := values[:len(props):len(props)], values[len(props):]
	for i, v := range props {
		proposals[i] = *v
	}
	for i, v := range verds {
		verdicts[i] = *v
	}
	var into *PublishedBatch
	if room != nil {
		into = &room.pb
	}
	return newPublishedBatch(into, p.digest, p.dataflow, e.time, lowWatermark, proposals, verdicts, pids, vids, h), nil
}

// publishedRoom is a batch of one proposal and its verdict: the batch,
// its two values and its two ids.
type publishedRoom struct {
	pb     PublishedBatch
	values [2]Value
	ids    [2]string
}

// newPublishedBatch derives every identity of a batch whose values and id
// lists are already in canonical order. h is reset and used for the
// published digest.
func newPublishedBatch(into *PublishedBatch, profileDigest, dataflow string, t, low int64, proposals, verdicts []Value, pids, vids []string, h *hasher) *PublishedBatch {
	pre := h.scratch(256 + 72*(len(pids)+len(vids)))
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
	h.keep(pre)
	// The batch digest, the batch and cause ids derived from it and the
	// published digest are written in one array and made one string, each
	// cut from it, once the published digest is known; until then the
	// batch's canonical bytes take the first three from the array.
	var ids [batchStringsLen]byte
	sum := stableBatchDigests.Sum(pre)
	writeDigest(ids[:digestLen], &sum)
	hex := ids[len("sha256:"):digestLen]
	k := digestLen
	k += copy(ids[k:], "batch:")
	k += copy(ids[k:], hex)
	k += copy(ids[k:], "reaction:")
	copy(ids[k:], hex)
	pb := into
	if pb == nil {
		pb = new(PublishedBatch)
	}
	*pb = PublishedBatch{
		batch: StableProposalBatch{
			Kind:                  protocol.KindStableProposalBatch,
			LogicalTime:           t,
			LowWatermark:          low,
			ProposalIDs:           pids,
			EligibilityVerdictIDs: vids,
			DataflowVersion:       dataflow,
		},
		proposals: proposals,
		verdicts:  verdicts,
	}
	if h.undigested {
		// Published undigested: nothing is hashed over the batch's
		// canonical bytes, and the caller that reads them (an order of
		// several ready batches, MarshalJSON) writes them then
		// (canonical). A tick's batch is read as values, never as bytes.
		all := string(ids[:publishedAt])
		pb.batch.BatchDigest = all[:digestLen]
		pb.batch.BatchID = all[digestLen:causeIDAt]
		pb.batch.CauseID = all[causeIDAt:publishedAt]
		return pb
	}
	b, at := appendPublishedHead(make([]byte, 0, pb.canonicalCap()), pb, ids[:digestLen], ids[digestLen:causeIDAt], ids[causeIDAt:publishedAt])
	// The published digest preimage shares the batch and the two value
	// lists with the wire object; hash it from the pieces.
	h.reset()
	h.bytes(publishedPreimageOpen)
	h.bytes(b[at.batch[0]:at.batch[1]])
	h.bytes(publishedPreimageProposals)
	h.bytes(b[at.proposals[0]:at.proposals[1]])
	h.bytes(publishedPreimageVerdicts)
	h.bytes(b[at.verdicts[0]:at.verdicts[1]])
	h.bytes(closeBrace)
	h.h.Sum(h.sum[:0])
	writeDigest(ids[publishedAt:], &h.sum)
	all := string(ids[:])
	pb.batch.BatchDigest = all[:digestLen]
	pb.batch.BatchID = all[digestLen:causeIDAt]
	pb.batch.CauseID = all[causeIDAt:publishedAt]
	pb.digest = all[publishedAt:]
	pb.canon = appendPublishedTail(b, pb.digest)
	return pb
}

// canonicalLen is the length of the batch's canonical bytes when it keeps
// them, and canonicalCap when it does not.
func (p *PublishedBatch) canonicalLen() int {
	if p.canon != nil {
		return len(p.canon)
	}
	return p.canonicalCap()
}

// canonicalCap is the capacity the batch's canonical bytes are written
// in: the members around the values take some 580 bytes, and every id
// some 75 in the batch and its lists.
func (p *PublishedBatch) canonicalCap() int {
	size := 768 + 80*(len(p.batch.ProposalIDs)+len(p.batch.EligibilityVerdictIDs))
	for _, v := range p.proposals {
		size += len(v.canon) + 1
	}
	for _, v := range p.verdicts {
		size += len(v.canon) + 1
	}
	return size
}

// canonical returns the batch's canonical RPublishedBatch bytes: those
// written when it was published, or, for a batch published undigested
// (which keeps none), the same bytes written now, into a slice of their
// own (the batch is not written to: it may be read concurrently).
func (p *PublishedBatch) canonical() []byte {
	if p.canon != nil {
		return p.canon
	}
	b, _ := appendPublishedHead(make([]byte, 0, p.canonicalCap()), p, p.batch.BatchDigest, p.batch.BatchID, p.batch.CauseID)
	return appendPublishedTail(b, p.digest)
}

// publishedPieces marks, in an RPublishedBatch written by
// appendPublishedHead, where the three pieces its published digest's
// preimage shares with it start and end: the batch and the two value
// lists.
type publishedPieces struct{ batch, proposals, verdicts [2]int }

// appendPublishedHead writes p's RPublishedBatch up to its eligibility
// verdicts (appendPublishedTail closes it), with the batch's digest and
// ids given apart from p (which need not hold them yet).
func appendPublishedHead[S string | []byte](b []byte, p *PublishedBatch, digest, batchID, causeID S) ([]byte, publishedPieces) {
	var at publishedPieces
	b = append(b, '{')
	b = appendKey(b, "batch", true)
	at.batch[0] = len(b)
	b = appendStableBatch(b, &p.batch, digest, batchID, causeID)
	at.batch[1] = len(b)
	b = appendKey(b, "effect_proposals", false)
	at.proposals[0] = len(b)
	b = appendValues(b, p.proposals)
	at.proposals[1] = len(b)
	b = appendKey(b, "eligibility_verdicts", false)
	at.verdicts[0] = len(b)
	b = appendValues(b, p.verdicts)
	at.verdicts[1] = len(b)
	return b, at
}

// appendPublishedTail closes an RPublishedBatch written up to its
// eligibility verdicts: its kind and its published digest.
func appendPublishedTail(b []byte, digest string) []byte {
	b = appendKey(b, "kind", false)
	b = appendString(b, "RPublishedBatch")
	b = appendKey(b, "published_batch_digest", false)
	b = appendString(b, digest)
	return append(b, '}')
}

// The constant pieces of the M3PublishedBatchPreimage around the batch and
// the two value lists. The contract version is an identifier, so its
// canonical string is itself in quotes.
var (
	publishedPreimageOpen      = []byte(`{"batch":`)
	publishedPreimageProposals = []byte(`,"contract_version":"` + ContractVersion + `","kind":"M3PublishedBatchPreimage","ordered_effect_proposals":`)
	publishedPreimageVerdicts  = []byte(`,"ordered_eligibility_verdicts":`)
)

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

// The digest, the batch id and the cause id are given apart from s (which
// need not hold them yet); they are a digest and two ids derived from its
// hex, so none holds a byte JSON escapes and each is quoted as it is.
func appendStableBatch[S string | []byte](b []byte, s *StableProposalBatch, digest, batchID, causeID S) []byte {
	b = append(b, '{')
	b = appendKey(b, "batch_digest", true)
	b = appendQuoted(b, digest)
	b = appendKey(b, "batch_id", false)
	b = appendQuoted(b, batchID)
	b = appendKey(b, "cause_id", false)
	b = appendQuoted(b, causeID)
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

func appendQuoted[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// A batch's four derived strings, made one: its batch digest
// ("sha256:<hex>"), batch id ("batch:<hex>"), cause id ("reaction:<hex>"),
// all three from the stable batch digest's hex, and its published digest.
const (
	digestLen       = len("sha256:") + 64
	causeIDAt       = digestLen + len("batch:") + 64
	publishedAt     = causeIDAt + len("reaction:") + 64
	batchStringsLen = publishedAt + digestLen
)
