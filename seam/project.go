package seam

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strconv"
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
)

// fact is a validated fact state with its derived key and state.
type fact struct {
	positive, negative []string // sorted
	state              TruthState
	key                factKey // fact_key, computed on first use
	keyed              bool    // key is computed
}

// The seam's preimages open with the same bytes call after call (the
// contract's version and kind, the binding profile's digest), which these
// digest from a kept SHA-256 state instead of hashing them again; see
// cjson.Prefix.
var queryDigests, batchDigests, verdictDigests, projectionDigests cjson.Prefix

// parsedQuery is a query that passed every binding check.
type parsedQuery struct {
	proposal   frontier.Value
	proposalID string
	reqs       []FactRequirement // canonical order
	reqCanon   [][]byte
	frontier   []string // sorted
	digest     string   // the derived query digest
	// room for a query of few requirements: its reqs, and its canonical
	// forms in the order given and in canonical order
	inReqs  [smallReqs]FactRequirement
	inCanon [2 * smallReqs][]byte
}

// smallReqs is how many requirements a parsedQuery has room for.
const smallReqs = 2

func (pq *parsedQuery) appendLists(b []byte, reqKey, frontierKey string) []byte {
	b = append(b, reqKey...)
	b = append(b, '[')
	for i, r := range pq.reqCanon {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(b, "],"...)
	b = append(b, frontierKey...)
	b = appendIDs(b, pq.frontier)
	return b
}

// size bounds the bytes of a query's canonical forms, so they are built
// without regrowing.
func (pq *parsedQuery) size() int {
	n := 512 + pq.proposal.CanonicalSize()
	for _, r := range pq.reqCanon {
		n += len(r) + 1
	}
	for _, f := range pq.frontier {
		n += len(f) + 3
	}
	return n
}

// appendPreimage appends the LRQueryPreimage.
func (pq *parsedQuery) appendPreimage(b []byte) []byte {
	b = append(b, `{"contract_version":`...)
	b = cjson.AppendString(b, ContractVersion)
	b = append(b, `,"kind":"LRQueryPreimage",`...)
	b = pq.appendLists(b, `"ordered_fact_requirements":`, `"ordered_frontier_precondition_ids":`)
	b = append(b, `,"proposal":`...)
	b = pq.proposal.AppendCanonical(b)
	return append(b, '}')
}

// canonical is the LRProjectionQuery with its derived digest.
func (pq *parsedQuery) canonical() []byte {
	return pq.appendCanonical(make([]byte, 0, pq.size()))
}

// appendCanonical appends the LRProjectionQuery with its derived digest.
func (pq *parsedQuery) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = pq.appendLists(b, `"fact_requirements":`, `"frontier_precondition_ids":`)
	b = append(b, `,"kind":"LRProjectionQuery","proposal":`...)
	b = pq.proposal.AppendCanonical(b)
	b = append(b, `,"query_digest":`...)
	b = cjson.AppendString(b, pq.digest)
	return append(b, '}')
}

func appendIDs(b []byte, ids []string) []byte { return cjson.AppendStringList(b, ids) }

// normalizeQuery sorts a query's sets and derives its digest without the
// checks that need a materialization or a binding profile.
func normalizeQuery(q *Query) (*parsedQuery, *Rejection) {
	v, rej := frontier.NewProposalValue(q.Proposal)
	if rej != nil {
		return nil, reject(CodeMalformedQueryBatch, "/proposal"+rej.Path)
	}
	return normalizeValue(q, v, nil), nil
}

// normalizeValue is normalizeQuery with the query's proposal value already
// built, written into pq (nil: a parsedQuery of its own), which must be
// the zero parsedQuery.
func normalizeValue(q *Query, v frontier.Value, pq *parsedQuery) *parsedQuery {
	p, _ := v.SharedProposal() // read only
	src := q.FactRequirements
	if pq == nil {
		pq = new(parsedQuery)
	}
	pq.proposal, pq.proposalID = v, p.ProposalID
	// Every requirement's canonical form is written into one buffer
	// sized for all of them; each keeps its own capacity, so none grows
	// into the next.
	size := 0
	for i := range src {
		// 109 bytes of names, quotes and the longer polarity.
		size += 112 + len(src[i].Literal.Atom.canon) + len(src[i].PreconditionID)
	}
	buf := make([]byte, 0, size)
	// canon in the order given, then pq.reqCanon in canonical order,
	// from one list
	var cc [][]byte
	if len(src) <= smallReqs {
		cc = pq.inCanon[:2*len(src)]
	} else {
		cc = make([][]byte, 2*len(src))
	}
	canon := cc[:len(src):len(src)]
	idx := make([]int, len(src))
	for i := range src {
		start := len(buf)
		buf = src[i].appendCanonical(buf)
		canon[i] = buf[start:len(buf):len(buf)]
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(canon[a], canon[b]) })
	var reqs []FactRequirement
	if len(idx) <= smallReqs {
		reqs = pq.inReqs[:len(idx):len(idx)]
	} else {
		reqs = make([]FactRequirement, len(idx))
	}
	pq.reqCanon = cc[len(src):]
	for i, j := range idx {
		reqs[i], pq.reqCanon[i] = src[j], canon[j]
	}
	pq.reqs = reqs
	// The frontier ids are only read: ids already in order are kept as
	// given, others are sorted in a copy.
	pq.frontier = q.FrontierPreconditionIDs
	if !slices.IsSorted(pq.frontier) {
		pq.frontier = slices.Clone(pq.frontier)
		slices.Sort(pq.frontier)
	}
	pq.digest = queryDigests.DigestWritten(pq.appendPreimage)
	return pq
}

func batchDigest(q *QueryBatch, orderedQueries [][]byte) string {
	return batchDigests.DigestWritten(func(b []byte) []byte {
		return appendBatchPreimage(b, q, func(b []byte, i int) []byte { return append(b, orderedQueries[i]...) }, len(orderedQueries))
	})
}

// appendOneQueryBatch appends the LRQueryBatchPreimage of a batch of one
// query, pq: in order, its canonical form written into it directly.
func appendOneQueryBatch(b []byte, q *QueryBatch, pq *parsedQuery) []byte {
	return appendBatchPreimage(b, q, func(b []byte, _ int) []byte { return pq.appendCanonical(b) }, 1)
}

// appendBatchPreimage appends the LRQueryBatchPreimage of n queries, the
// i-th in canonical order written by appendQuery.
func appendBatchPreimage(b []byte, q *QueryBatch, appendQuery func(b []byte, i int) []byte, n int) []byte {
	b = append(b, `{"binding_profile_digest":`...)
	b = cjson.AppendString(b, q.BindingProfileDigest)
	b = append(b, `,"contract_version":`...)
	b = cjson.AppendString(b, ContractVersion)
	b = append(b, `,"kind":"LRQueryBatchPreimage","l_fixpoint_digest":`...)
	b = cjson.AppendString(b, q.LFixpointDigest)
	b = append(b, `,"ordered_queries":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuery(b, i)
	}
	b = append(b, `],"r_profile_digest":`...)
	b = cjson.AppendString(b, q.RProfileDigest)
	b = append(b, `,"rule_bundle_digest":`...)
	b = cjson.AppendString(b, q.RuleBundleDigest)
	return append(b, '}')
}

// projector carries the validated inputs of one Project call.
type projector struct {
	l        *Materialization
	r        *frontier.Profile
	b        *BindingProfile
	declared atomIndex // query atoms
	facts    atomIndex // fact states: positions in all
	all      []fact
	missing  map[string]bool // declared atoms without a fact state

	// Scratch space reused from one query to the next: evidence rows are
	// written into one arena (the verdict preimage into cjson's recycled
	// buffer), so evaluating a query allocates only what it returns.
	arena    []byte
	spans    [][2]int
	rows     [][]byte
	supports []string // a verdict's support ids; the verdict value keeps a copy
	// The first few spans, rows and support ids live in the projector.
	spanBuf [4][2]int
	rowBuf  [4][]byte
	supBuf  [8]string
	// A batch of one query, as a workflow tick projects, keeps its
	// parsed query, its list and the materialization's facts (up to
	// two) here, and the first evidence rows' bytes.
	oneQuery parsedQuery
	queryBuf [1]*parsedQuery
	factBuf  [2]fact
	arenaBuf [arenaBufSize]byte
	lt       int64 // the logical time the trusted digests point to
	// plain: nothing is kept in the rooms above; every list is made on
	// its own, as the tests' reference.
	plain bool

	// sealing: the batch's declared digests are not checked but derived,
	// as QueryBatch.Sealed would fill them in (SealAndProject).
	sealing bool
	// verified: the binding profile's digest is known to be its own
	// (VerifiedBinding), so it is not derived again.
	verified bool
	// undigested: while sealing, the batch digest and the projection's
	// digest are not derived (SealAndProjectVerifiedUndigested); a
	// rejection is Project's, which derives them.
	undigested bool
	// batchLater: while sealing a batch of one query, the batch digest
	// is derived with the projection's (projection), and the two made
	// one string.
	batchLater bool
}

// digestLen is the length of a digest as cjson spells it: "sha256:" and
// the sum's hex digits.
const digestLen = len("sha256:") + 2*sha256.Size

// putDigest writes a sum into dst, of digestLen bytes, as cjson.Digest
// spells it.
func putDigest(dst []byte, sum [sha256.Size]byte) {
	copy(dst, "sha256:")
	cjson.HexSum((*[2 * sha256.Size]byte)(dst[len("sha256:"):digestLen]), &sum)
}

// Project is project_lr: it binds one complete L materialization, the R
// profile, a binding profile and a query batch, and maps every query
// through the four-valued truth table to exactly one EligibilityVerdict and
// one pair of +1 R value deltas. An empty batch yields no verdicts and a nil
// command. Any problem rejects the whole call; nothing partial is returned.
func Project(l Materialization, r frontier.Profile, b BindingProfile, q QueryBatch) (*Projection, *Rejection) {
	var trusted Rejection // the digests validated so far
	out, rej := project(&l, &r, &b, &q, &trusted, false)
	if rej != nil {
		return nil, withTrusted(rej, &trusted)
	}
	return out, nil
}

// withTrusted gives rej the digests validated before it was met (trusted),
// unless it is the invariant violation of an incomplete fact-state
// projection, which names its own.
func withTrusted(rej, trusted *Rejection) *Rejection {
	if rej.Code != CodeInvariantViolation || rej.Context.Invariant != "complete_fact_state_projection" {
		rej.LogicalTime = trusted.LogicalTime
		rej.LFixpointDigest = trusted.LFixpointDigest
		rej.RProfileDigest = trusted.RProfileDigest
		rej.BindingProfileDigest = trusted.BindingProfileDigest
		rej.QueryBatchDigest = trusted.QueryBatchDigest
	}
	return rej
}

// SealAndProject is Project(l, r, b, q.Sealed()): it derives each query's
// digest and the batch digest once, while checking the batch, instead of
// once to seal it and again to check the seal. Any rejection is the one
// Project gives for the sealed batch.
func SealAndProject(l Materialization, r frontier.Profile, b BindingProfile, q QueryBatch) (*Projection, *Rejection) {
	var trusted Rejection
	if out, rej := project(&l, &r, &b, &q, &trusted, true); rej == nil {
		return out, nil
	}
	// Which problem is reported, and in which order queries are visited
	// to find it, is Project's: ask it, with the batch sealed.
	return Project(l, r, b, q.Sealed())
}

// VerifiedBinding is a binding profile whose digest was checked against
// its preimage once, held as a copy so that it cannot change afterwards.
// A caller that projects many batches under one binding profile verifies
// it once instead of digesting it again for every batch.
type VerifiedBinding struct {
	b  BindingProfile
	ok bool
}

// VerifyBinding checks b's digest; ok is false when it is not the digest
// of b's preimage.
func VerifyBinding(b BindingProfile) (v VerifiedBinding, ok bool) {
	if b.Sealed().ProfileDigest != b.ProfileDigest {
		return VerifiedBinding{}, false
	}
	return VerifiedBinding{b: b, ok: true}, true
}

// Profile returns the verified binding profile.
func (v VerifiedBinding) Profile() BindingProfile { return v.b }

// SealAndProjectVerified is SealAndProject(l, r, v.Profile(), q), the
// binding profile's digest not derived again. The zero VerifiedBinding is
// checked in full.
func SealAndProjectVerified(l Materialization, r frontier.Profile, v VerifiedBinding, q QueryBatch) (*Projection, *Rejection) {
	return sealAndProjectVerified(l, r, v, q, false)
}

// SealAndProjectVerifiedUndigested is SealAndProjectVerified for a caller
// that reads neither the projection's digest nor the query batch's: the
// projection's Digest and QueryBatchDigest are empty, and neither is
// derived. Everything else it returns — the verdicts, the command, every
// other member, every rejection — is SealAndProjectVerified's. (The
// verdicts bind each query's digest, not the batch's.)
func SealAndProjectVerifiedUndigested(l Materialization, r frontier.Profile, v VerifiedBinding, q QueryBatch) (*Projection, *Rejection) {
	return sealAndProjectVerified(l, r, v, q, true)
}

func sealAndProjectVerified(l Materialization, r frontier.Profile, v VerifiedBinding, q QueryBatch, undigested bool) (*Projection, *Rejection) {
	// The projector, its inputs and the digests it trusts live in one
	// frame, recycled: nothing the projection returns points into it (the
	// verdict keeps a copy of its support ids, the values and the
	// projection's room are allocations of their own, the evidence rows
	// are hashed where they were written), and a rejection is Project's,
	// made without it.
	f := sealFrames.Get().(*sealFrame)
	*f = sealFrame{l: l, r: r, b: v.b, q: q}
	f.p = projector{l: &f.l, r: &f.r, b: &f.b, sealing: true, verified: v.ok, undigested: undigested}
	out, rej := projectWith(&f.p, &f.q, &f.trusted)
	// Emptied before it is put back, so that a pooled frame holds none
	// of the caller's values.
	*f = sealFrame{}
	sealFrames.Put(f)
	if rej == nil {
		return out, nil
	}
	return Project(l, r, v.b, q.Sealed())
}

// sealFrames recycles SealAndProjectVerified's frames (some 3 KB each).
var sealFrames = sync.Pool{New: func() any { return new(sealFrame) }}

// sealFrame holds what SealAndProjectVerified's projector points to.
type sealFrame struct {
	l       Materialization
	r       frontier.Profile
	b       BindingProfile
	q       QueryBatch
	trusted Rejection
	p       projector
}

func project(l *Materialization, r *frontier.Profile, b *BindingProfile, q *QueryBatch, trusted *Rejection, sealing bool) (*Projection, *Rejection) {
	return projectWith(&projector{l: l, r: r, b: b, sealing: sealing}, q, trusted)
}

func projectWith(s *projector, q *QueryBatch, trusted *Rejection) (*Projection, *Rejection) {
	l, r, b := s.l, s.r, s.b
	if rej := s.checkMaterialization(); rej != nil {
		return nil, rej
	}
	s.lt = l.LogicalTime
	trusted.LogicalTime, trusted.LFixpointDigest = &s.lt, l.FixpointDigest
	if r.Digest() == "" {
		return nil, reject(CodeMalformedRProfile, "/r_profile")
	}
	trusted.RProfileDigest = r.Digest()
	if rej := s.checkBinding(); rej != nil {
		return nil, rej
	}
	trusted.BindingProfileDigest = b.ProfileDigest
	queries, batch, rej := s.checkBatch(q)
	if rej != nil {
		return nil, rej
	}
	trusted.QueryBatchDigest = batch
	for _, pq := range queries {
		for _, req := range pq.reqs {
			if s.missing[req.Literal.Atom.canon] {
				r := reject(CodeFactStateNotFound, "/query_batch/queries/fact_requirements/literal/atom")
				r.Context.ProposalID, r.Context.PreconditionID = pq.proposalID, req.PreconditionID
				return nil, r
			}
		}
	}
	if len(s.missing) > 0 {
		return nil, reject(CodeInvariantViolation, "/l_result/next_materialization/fact_states").
			invariant("complete_fact_state_projection", "")
	}
	return s.projection(q, batch, queries)
}

func (s *projector) checkMaterialization() *Rejection {
	l := s.l
	switch {
	case l.LogicalTime < 0:
		return reject(CodeMalformedLResult, "/l_result/logical_time")
	case !cjson.ValidDigest(l.FixpointDigest):
		return reject(CodeMalformedLResult, "/l_result/fixpoint_digest")
	case !cjson.ValidDigest(l.MaterializationDigest):
		return reject(CodeMalformedLResult, "/l_result/next_materialization/materialization_digest")
	case !cjson.ValidDigest(l.RuleBundleDigest):
		return reject(CodeMalformedLResult, "/l_result/rule_bundle_digest")
	case !cjson.ValidVersion(l.RuleSetVersion):
		return reject(CodeMalformedRuleBundle, "/rule_bundle/rule_set_version")
	case !cjson.ValidVersion(l.DataflowVersion):
		return reject(CodeMalformedRuleBundle, "/rule_bundle/dataflow_version")
	}
	for i, a := range l.QueryAtoms {
		if a.IsZero() || s.declared.has(a.canon) {
			return reject(CodeMalformedRuleBundle, "/rule_bundle/query_atoms/"+strconv.Itoa(i))
		}
		s.declared.add(a.canon)
	}
	var all []fact // the facts in one allocation, or in the projector
	if len(l.Facts) <= len(s.factBuf) && !s.plain {
		all = s.factBuf[:len(l.Facts):len(l.Facts)]
	} else {
		all = make([]fact, len(l.Facts))
	}
	s.all = all
	for i, f := range l.Facts {
		// The path is written only for a rejection.
		path := func() string { return "/l_result/next_materialization/fact_states/" + strconv.Itoa(i) }
		if f.Atom.IsZero() {
			return reject(CodeMalformedLResult, path()+"/atom")
		}
		pos, ok1 := sortedIDSet(f.Positive)
		neg, ok2 := sortedIDSet(f.Negative)
		if !ok1 || !ok2 {
			return reject(CodeMalformedLResult, path())
		}
		if s.facts.has(f.Atom.canon) {
			return reject(CodeInvariantViolation, path()).invariant("unique_fact_state_atom", "")
		}
		all[i] = fact{positive: pos, negative: neg, state: stateOf(pos, neg)}
		s.facts.add(f.Atom.canon) // at position i: every fact before it was added
	}
	for _, a := range l.QueryAtoms {
		if !s.facts.has(a.canon) {
			if s.missing == nil {
				s.missing = make(map[string]bool)
			}
			s.missing[a.canon] = true
		}
	}
	return nil
}

func (s *projector) checkBinding() *Rejection {
	b, l, r := s.b, s.l, s.r
	if b.RuleSetVersion != l.RuleSetVersion {
		return reject(CodeVersionMismatch, "/binding_profile/rule_set_version").expect(l.RuleSetVersion, b.RuleSetVersion)
	}
	if b.DataflowVersion != l.DataflowVersion || b.DataflowVersion != r.DataflowVersion() {
		return reject(CodeVersionMismatch, "/binding_profile/dataflow_version").expect(l.DataflowVersion, b.DataflowVersion)
	}
	for _, f := range []struct{ name, id string }{{"proposal_source_id", b.ProposalSourceID}, {"verdict_source_id", b.VerdictSourceID}} {
		if !cjson.ValidID(f.id) {
			return reject(CodeMalformedBindingProfile, "/binding_profile/"+f.name)
		}
		if !r.DeclaresSource(f.id) {
			rej := reject(CodeProfileMismatch, "/binding_profile/"+f.name)
			rej.Context.SourceID, rej.Context.Invariant = f.id, "source_declared_by_r_profile"
			return rej
		}
	}
	if b.MaxQueries < 1 || b.MaxQueries > MaxQueriesCeiling ||
		b.MaxFactRequirementsPerQuery < 1 || b.MaxFactRequirementsPerQuery > MaxFactRequirementsCeiling {
		return reject(CodeMalformedBindingProfile, "/binding_profile/limits")
	}
	if s.verified {
		return nil
	}
	if want := b.Sealed().ProfileDigest; b.ProfileDigest != want {
		return reject(CodeProfileMismatch, "/binding_profile/profile_digest").expect(want, b.ProfileDigest)
	}
	return nil
}

// checkBatch validates the batch bindings and every query. Queries are
// first checked in the caller's order; if one fails, they are checked again
// in the reference's diagnostic order so that the reported query is the
// same whatever order the caller used.
// It returns the queries in canonical order and the batch digest.
func (s *projector) checkBatch(q *QueryBatch) ([]*parsedQuery, string, *Rejection) {
	for _, f := range []struct{ name, got, want string }{
		{"binding_profile_digest", q.BindingProfileDigest, s.b.ProfileDigest},
		{"l_fixpoint_digest", q.LFixpointDigest, s.l.FixpointDigest},
		{"rule_bundle_digest", q.RuleBundleDigest, s.l.RuleBundleDigest},
		{"r_profile_digest", q.RProfileDigest, s.r.Digest()},
	} {
		if f.got != f.want {
			return nil, "", reject(CodeDigestMismatch, "/query_batch/"+f.name).expect(f.want, f.got)
		}
	}
	if n := int64(len(q.Queries)); n > s.b.MaxQueries {
		return nil, "", reject(CodeLimitExceeded, "/query_batch/queries").limit(s.b.MaxQueries, n)
	}
	queries, rej := s.checkQueries(q.Queries, nil)
	if rej != nil {
		_, rej = s.checkQueries(q.Queries, diagnosticOrder(q.Queries))
		return nil, "", rej
	}
	if s.undigested && s.sealing && len(queries) == 1 {
		return queries, "", nil // one query is in order
	}
	s.batchLater = false
	if len(queries) == 1 {
		if s.sealing && !s.plain {
			// Sealed, the digest is only the projection's member and its
			// preimage's, and a rejection is Project's: it is derived
			// with the projection's digest, the two one string.
			s.batchLater = true
			return queries, "", nil
		}
		// One query is in order; its canonical form is written into the
		// batch preimage directly.
		want := batchDigests.DigestWritten(func(b []byte) []byte { return appendOneQueryBatch(b, q, queries[0]) })
		if !s.sealing && q.QueryBatchDigest != want {
			return nil, "", reject(CodeDigestMismatch, "/query_batch/query_batch_digest").expect(want, q.QueryBatchDigest)
		}
		return queries, want, nil
	}
	canon := make([][]byte, len(queries))
	for i, pq := range queries {
		canon[i] = pq.canonical()
	}
	idx := make([]int, len(queries))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(canon[a], canon[b]) })
	ordered := make([]*parsedQuery, len(idx))
	orderedCanon := make([][]byte, len(idx))
	for i, j := range idx {
		ordered[i], orderedCanon[i] = queries[j], canon[j]
	}
	if s.undigested && s.sealing {
		return ordered, "", nil
	}
	want := batchDigest(q, orderedCanon)
	if !s.sealing && q.QueryBatchDigest != want {
		return nil, "", reject(CodeDigestMismatch, "/query_batch/query_batch_digest").expect(want, q.QueryBatchDigest)
	}
	return ordered, want, nil
}

// checkQueries checks queries in the given order (nil: as given). With a
// diagnostic order, requirements are also visited in diagnostic order.
func (s *projector) checkQueries(qs []Query, order []int) ([]*parsedQuery, *Rejection) {
	seen := make(map[string]bool, len(qs))
	// A batch of one query, checked once in the order given, keeps its
	// list and its parsed query in the projector.
	var out []*parsedQuery
	var into *parsedQuery
	if len(qs) == 1 && order == nil && !s.plain {
		out, into = s.queryBuf[:0], &s.oneQuery
	} else {
		out = make([]*parsedQuery, 0, len(qs))
	}
	for pos := range qs {
		i := pos
		if order != nil {
			i = order[pos]
		}
		// The query's path, written only for a rejection.
		qpath := func() string { return "/query_batch/queries/" + strconv.Itoa(pos) }
		pq, rej := s.checkQuery(&qs[i], qpath, seen, order != nil, into)
		if rej != nil {
			return nil, rej
		}
		out = append(out, pq)
	}
	return out, nil
}

// A query that passes is written into into (nil: a parsedQuery of its
// own).
func (s *projector) checkQuery(q *Query, qpath func() string, seen map[string]bool, diagnostic bool, into *parsedQuery) (*parsedQuery, *Rejection) {
	v, rej := frontier.NewProposalValue(q.Proposal)
	if rej != nil {
		return nil, reject(CodeMalformedQueryBatch, qpath()+"/proposal"+rej.Path)
	}
	p, _ := v.SharedProposal() // read only
	id := p.ProposalID
	if seen[id] {
		r := reject(CodeDuplicateProposal, qpath()+"/proposal/proposal_id")
		r.Context.ProposalID = id
		return nil, r
	}
	seen[id] = true
	if p.Versions.RuleSet != s.b.RuleSetVersion {
		r := reject(CodeVersionMismatch, qpath()+"/proposal/versions/rule_set").expect(s.b.RuleSetVersion, p.Versions.RuleSet)
		r.Context.ProposalID = id
		return nil, r
	}
	if p.Versions.Dataflow != s.b.DataflowVersion {
		r := reject(CodeVersionMismatch, qpath()+"/proposal/versions/dataflow").expect(s.b.DataflowVersion, p.Versions.Dataflow)
		r.Context.ProposalID = id
		return nil, r
	}
	if p.Versions.Canonicalization != Canonicalization {
		return nil, reject(CodeUnsupportedCanonicalization, qpath()+"/proposal/versions/canonicalization")
	}
	if n := int64(len(q.FactRequirements)); n > s.b.MaxFactRequirementsPerQuery {
		r := reject(CodeLimitExceeded, qpath()+"/fact_requirements").limit(s.b.MaxFactRequirementsPerQuery, n)
		r.Context.ProposalID = id
		return nil, r
	}
	reqs := q.FactRequirements
	if diagnostic {
		reqs = slices.Clone(reqs)
		slices.SortStableFunc(reqs, func(a, b FactRequirement) int { return diagCompare(requirementTree(&a), requirementTree(&b)) })
	}
	ids := make(map[string]bool, len(reqs))
	duplicate := false
	for k := range reqs {
		req := &reqs[k]
		// The requirement's path, written only for a rejection.
		rpath := func() string { return qpath() + "/fact_requirements/" + strconv.Itoa(k) }
		if !cjson.ValidID(req.PreconditionID) {
			return nil, reject(CodeMalformedQueryBatch, rpath())
		}
		if req.Literal.Polarity != Positive && req.Literal.Polarity != Negative {
			return nil, reject(CodeMalformedQueryBatch, rpath()+"/literal/polarity")
		}
		if req.Literal.Atom.IsZero() {
			return nil, reject(CodeMalformedQueryBatch, rpath()+"/literal/atom")
		}
		if !s.declared.has(req.Literal.Atom.canon) {
			r := reject(CodeQueryAtomNotDeclared, rpath()+"/literal/atom")
			r.Context.ProposalID, r.Context.PreconditionID = id, req.PreconditionID
			return nil, r
		}
		if ids[req.PreconditionID] {
			duplicate = true
		}
		ids[req.PreconditionID] = true
	}
	if duplicate {
		return nil, reject(CodePreconditionBindingMismatch, qpath()+"/fact_requirements").invariant("unique_fact_precondition_id", id)
	}
	fr := q.FrontierPreconditionIDs
	if _, ok := sortedIDSet(fr); !ok || len(fr) > MaxFactRequirementsCeiling {
		return nil, reject(CodeMalformedQueryBatch, qpath()+"/frontier_precondition_ids")
	}
	for _, f := range fr {
		if ids[f] {
			return nil, reject(CodePreconditionBindingMismatch, qpath()).invariant("disjoint_precondition_bindings", id)
		}
	}
	if len(ids)+len(fr) != len(p.Preconditions) {
		return nil, reject(CodePreconditionBindingMismatch, qpath()).invariant("exact_precondition_partition", id)
	}
	for _, pre := range p.Preconditions {
		if !ids[pre] && !slices.Contains(fr, pre) {
			return nil, reject(CodePreconditionBindingMismatch, qpath()).invariant("exact_precondition_partition", id)
		}
	}
	pq := normalizeValue(q, v, into)
	if !s.sealing && q.QueryDigest != pq.digest {
		r := reject(CodeDigestMismatch, qpath()+"/query_digest").expect(pq.digest, q.QueryDigest)
		r.Context.ProposalID = id
		return nil, r
	}
	return pq, nil
}

// projection evaluates every validated query and assembles the result.
func (s *projector) projection(q *QueryBatch, batch string, queries []*parsedQuery) (*Projection, *Rejection) {
	// One query — each proposal's projection in a tick — takes its
	// projection, verdict, deltas and command from one allocation; the
	// lists are capped at their lengths, so an append copies them.
	var out *Projection
	var deltas []frontier.ValueDelta
	var room *projectionRoom
	if len(queries) == 1 {
		room = new(projectionRoom)
		out, deltas = &room.p, room.deltas[:0:len(room.deltas)]
		out.Verdicts = room.verdicts[:0:len(room.verdicts)]
	} else {
		out, deltas = new(Projection), make([]frontier.ValueDelta, 0, 2*len(queries))
	}
	out.LogicalTime = s.l.LogicalTime
	out.BindingProfileDigest = s.b.ProfileDigest
	out.LFixpointDigest = s.l.FixpointDigest
	out.LMaterializationDigest = s.l.MaterializationDigest
	out.QueryBatchDigest = batch
	out.RProfileDigest = s.r.Digest()
	for _, pq := range queries {
		verdict, rej := s.evaluate(pq)
		if rej != nil {
			return nil, rej
		}
		out.Verdicts = append(out.Verdicts, verdict)
		pd, r1 := frontier.NewValueDelta(s.b.ProposalSourceID, s.l.LogicalTime, 1, s.b.DataflowVersion, pq.proposal)
		vd, r2 := frontier.NewValueDelta(s.b.VerdictSourceID, s.l.LogicalTime, 1, s.b.DataflowVersion, verdict)
		if r1 != nil || r2 != nil {
			return nil, reject(CodeInvariantViolation, "/command/deltas").invariant("value_delta_construction", pq.proposalID)
		}
		deltas = append(deltas, pd, vd)
	}
	// Order verdicts by canonical bytes, encoding each once.
	type keyed struct {
		canon []byte
		v     frontier.Value
	}
	if len(out.Verdicts) > 1 { // one verdict is in order
		ks := make([]keyed, len(out.Verdicts))
		for i, v := range out.Verdicts {
			ks[i] = keyed{v.AppendCanonical(nil), v}
		}
		slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.canon, b.canon) })
		for i := range ks {
			out.Verdicts[i] = ks[i].v
		}
	}
	if n := int64(len(deltas)); n > s.r.Limits().MaxDeltasPerCommand {
		return nil, reject(CodeLimitExceeded, "/command/deltas").limit(s.r.Limits().MaxDeltasPerCommand, n)
	}
	if len(deltas) > 0 {
		// The room's command, or one of its own: made only where it is
		// used (&frontier.ApplyDeltaBatch{} made first was an allocation
		// for every projection, the room's command then taking its place).
		var cmd *frontier.ApplyDeltaBatch
		if room != nil {
			cmd = &room.cmd
		} else {
			cmd = new(frontier.ApplyDeltaBatch)
		}
		cmd.ProfileDigest, cmd.DataflowVersion, cmd.Deltas = s.r.Digest(), s.b.DataflowVersion, deltas
		out.Command = cmd
	}
	switch {
	case s.undigested:
	case s.batchLater:
		// The batch digest is written into the projection's preimage
		// from its bytes; both digests are then one string, each cut
		// from it.
		var digests [2 * digestLen]byte
		batch := digests[:digestLen]
		putDigest(batch, batchDigests.SumWritten(func(b []byte) []byte { return appendOneQueryBatch(b, q, queries[0]) }))
		putDigest(digests[digestLen:], projectionDigests.SumWritten(func(b []byte) []byte { return out.appendPreimageBatch(b, batch) }))
		both := string(digests[:])
		out.QueryBatchDigest, out.Digest = both[:digestLen], both[digestLen:]
	default:
		out.Digest = projectionDigests.DigestWritten(out.appendPreimage)
	}
	return out, nil
}

// projectionRoom is a one-query projection with its verdict, its two
// deltas (the proposal's and the verdict's) and its command.
type projectionRoom struct {
	p        Projection
	verdicts [1]frontier.Value
	deltas   [2]frontier.ValueDelta
	cmd      frontier.ApplyDeltaBatch
}

// fact returns the fact state of the atom with canonical bytes canon, or
// nil.
func (s *projector) fact(canon string) *fact {
	if i := s.facts.find(canon); i >= 0 {
		return &s.all[i]
	}
	return nil
}

// atomIndex maps atoms' canonical bytes to the order they were added in. A
// few are found by comparing each (a workflow tick's materialization holds
// one or two), more through a map; either way nothing is allocated until
// it holds more than atomIndexScan.
type atomIndex struct {
	keys []string
	buf  [atomIndexScan]string
	m    map[string]int
}

const atomIndexScan = 8

// arenaBufSize is the evidence arena a projector holds: two rows'.
const arenaBufSize = 1024

// find returns the position canon was added at, or -1.
func (x *atomIndex) find(canon string) int {
	if x.m != nil {
		if i, ok := x.m[canon]; ok {
			return i
		}
		return -1
	}
	for i, k := range x.keys {
		if k == canon {
			return i
		}
	}
	return -1
}

func (x *atomIndex) has(canon string) bool { return x.find(canon) >= 0 }

// add adds canon, which is not yet in x, at the next position.
func (x *atomIndex) add(canon string) {
	switch {
	case x.m != nil:
		x.m[canon] = len(x.m)
	case len(x.keys) < atomIndexScan:
		if x.keys == nil {
			x.keys = x.buf[:0]
		}
		x.keys = append(x.keys, canon)
	default:
		x.m = make(map[string]int, 2*atomIndexScan)
		for i, k := range x.keys {
			x.m[k] = i
		}
		x.m[canon] = len(x.keys)
		x.keys = nil
	}
}

// evaluate applies the four-valued truth table to one query.
func (s *projector) evaluate(pq *parsedQuery) (frontier.Value, *Rejection) {
	if s.arena == nil {
		// One evidence row is some 300 bytes plus its ids and literal.
		if n := 512 * len(pq.reqs); n <= len(s.arenaBuf) && !s.plain {
			s.arena = s.arenaBuf[:0]
		} else {
			s.arena = make([]byte, 0, n)
		}
		s.spans, s.rows, s.supports = s.spanBuf[:0], s.rowBuf[:0], s.supBuf[:0]
	}
	s.arena, s.spans = s.arena[:0], s.spans[:0]
	supports := s.supports[:0]
	allSatisfied, anyConflict := true, false
	for _, req := range pq.reqs {
		f := s.fact(req.Literal.Atom.canon)
		if f == nil {
			r := reject(CodeFactStateNotFound, "/query_batch/queries/fact_requirements/literal/atom")
			r.Context.ProposalID, r.Context.PreconditionID = pq.proposalID, req.PreconditionID
			return frontier.Value{}, r
		}
		if !f.keyed {
			req.Literal.Atom.factKeyInto(&f.key)
			f.keyed = true
		}
		var satisfied bool
		var evidence []string
		switch {
		case f.state == Both:
			anyConflict = true
			evidence = mergeSorted(f.positive, f.negative)
		case f.state == Neither:
		case req.Literal.Polarity == Positive:
			satisfied = f.state == TrueOnly
			evidence = f.negative
			if satisfied {
				evidence = f.positive
			}
		default:
			satisfied = f.state == FalseOnly
			evidence = f.positive
			if satisfied {
				evidence = f.negative
			}
		}
		allSatisfied = allSatisfied && satisfied
		supports = append(supports, evidence...)
		start := len(s.arena)
		row := append(s.arena, `{"evidence_derivation_ids":`...)
		row = appendPlainIDs(row, evidence)
		row = append(row, `,"fact_key":`...)
		// A digest is plain: quoted as it is.
		row = append(append(append(row, '"'), f.key[:]...), '"')
		row = append(row, `,"kind":"LRRequirementEvidence","literal":`...)
		row = req.Literal.appendCanonical(row)
		row = append(row, `,"precondition_id":`...)
		row = cjson.AppendChecked(row, req.PreconditionID)
		row = append(row, `,"satisfied":`...)
		row = strconv.AppendBool(row, satisfied)
		row = append(row, `,"truth_state":`...)
		row = cjson.AppendChecked(row, string(f.state))
		s.arena = append(row, '}')
		s.spans = append(s.spans, [2]int{start, len(s.arena)})
	}
	rows := s.rows[:0]
	for _, sp := range s.spans {
		rows = append(rows, s.arena[sp[0]:sp[1]])
	}
	s.rows = rows
	slices.SortFunc(rows, bytes.Compare)
	slices.Sort(supports)
	supports = slices.Compact(supports)
	s.supports = supports
	status := "ineligible"
	switch {
	case anyConflict:
		status = "conflicted"
	case allSatisfied:
		status = "eligible"
	}
	suffix := verdictDigests.HexDigestWritten(func(b []byte) []byte { return s.appendVerdictPreimage(b, pq, rows, supports, status) })
	// The verdict's and cause's ids share one string.
	ids := verdictPrefix + suffix + causePrefix + suffix
	v, rej := frontier.NewVerdictValue(frontier.EligibilityVerdict{
		VerdictID:            ids[:len(verdictPrefix)+len(suffix)],
		ProposalID:           pq.proposalID,
		Status:               status,
		SupportDerivationIDs: supports,
		CauseID:              ids[len(verdictPrefix)+len(suffix):],
		RuleSetVersion:       s.b.RuleSetVersion,
	})
	if rej != nil {
		return frontier.Value{}, reject(CodeInvariantViolation, "/verdicts").invariant("verdict_construction", pq.proposalID)
	}
	return v, nil
}

// The prefixes of a verdict's id and its cause's id.
const (
	verdictPrefix = "verdict:lr:"
	causePrefix   = "cause:lr:"
)

// appendVerdictPreimage appends the LRVerdictPreimage of a query's
// evaluation.
func (s *projector) appendVerdictPreimage(b []byte, pq *parsedQuery, rows [][]byte, supports []string, status string) []byte {
	b = append(b, `{"binding_profile_digest":`...)
	b = cjson.AppendChecked(b, s.b.ProfileDigest)
	b = append(b, `,"contract_version":`...)
	b = cjson.AppendChecked(b, ContractVersion)
	b = append(b, `,"kind":"LRVerdictPreimage","l_fixpoint_digest":`...)
	b = cjson.AppendChecked(b, s.l.FixpointDigest)
	b = append(b, `,"l_materialization_digest":`...)
	b = cjson.AppendChecked(b, s.l.MaterializationDigest)
	b = append(b, `,"ordered_requirement_evidence":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(b, `],"ordered_support_derivation_ids":`...)
	b = appendPlainIDs(b, supports)
	b = append(b, `,"proposal_value_digest":`...)
	b = cjson.AppendChecked(b, pq.proposal.Digest())
	b = append(b, `,"query_digest":`...)
	b = cjson.AppendChecked(b, pq.digest)
	b = append(b, `,"rule_bundle_digest":`...)
	b = cjson.AppendChecked(b, s.l.RuleBundleDigest)
	b = append(b, `,"rule_set_version":`...)
	b = cjson.AppendChecked(b, s.b.RuleSetVersion)
	b = append(b, `,"status":`...)
	b = cjson.AppendChecked(b, status)
	return append(b, '}')
}

// Strings this package writes with cjson.AppendChecked, which skips the
// scan for bytes to escape, are digests, ids, version labels and truth
// state or status words the projection checked or derived (the
// materialization's and binding's digests and versions, each precondition
// id, each support id, the fact keys, which are digests). Every seam test
// runs with cjson.MustBePlain as the check, which panics if a string that
// needs escaping reaches it.

// appendPlainIDs is appendIDs for ids cjson.AppendChecked may write.
func appendPlainIDs(b []byte, ids []string) []byte { return cjson.AppendCheckedList(b, ids) }

// mergeSorted returns the sorted union of two sorted id lists.
func mergeSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedIDSet returns ids sorted, or false if one is not an id or two are
// equal. Ids already in strictly increasing order are returned as given
// (the projection only reads them); others are sorted in a copy.
func sortedIDSet(ids []string) ([]string, bool) {
	inOrder := true
	for i, s := range ids {
		if !cjson.ValidID(s) {
			return nil, false
		}
		if i > 0 && ids[i-1] >= s {
			inOrder = false
		}
	}
	if inOrder {
		return ids, true
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, false
		}
	}
	return out, true
}
