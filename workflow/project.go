package workflow

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/seam"
)

// project binds one proposal's preconditions through the eligibility
// table and runs the seam over the L materialization at R epoch time et.
func (t *tick) project(mat *logic.Materialization, p protocol.EffectProposal, a action, et int64) (frontier.Command, string) {
	w := t.w
	var reqs []seam.FactRequirement
	var frontierIDs []string
	var atoms []seam.Atom
	var facts []seam.FactState
	var room *projectRoom
	for _, pre := range p.Preconditions {
		e, bound := w.elig[pre]
		if !bound {
			frontierIDs = append(frontierIDs, pre)
			continue
		}
		if reqs == nil {
			// Room for every precondition at the first bound one (the
			// lists stay nil when none is bound, as the seam reads them).
			room = newProjectRoom(len(p.Preconditions))
			reqs, atoms, facts = room.lists(len(p.Preconditions))
		}
		args := room.args(len(e.args))
		for i, tmpl := range e.args {
			args[i] = render(tmpl, a)
		}
		atom, err := seam.AtomOfFact(e.relation, args)
		if err != nil {
			return nil, fmt.Sprintf("precondition %s: %v", pre, err)
		}
		reqs = append(reqs, seam.FactRequirement{PreconditionID: pre, Literal: seam.Literal{Polarity: e.polarity, Atom: atom}})
		t.explainEligibility(mat, p.ProposalID, pre, e, args)
		if slices.Contains(atoms, atom) { // an atom is its canonical bytes
			continue
		}
		atoms = append(atoms, atom)
		pos, neg := w.supportIDsIn(mat, e.relation, args, room.values(len(args)), room)
		facts = append(facts, seam.FactState{Atom: atom, Positive: pos, Negative: neg})
	}
	slices.Sort(frontierIDs)
	fix, matDigest, err := w.lDigests(facts, t.st.Supports, et)
	if err != nil {
		return nil, "seam: " + err.Error()
	}
	l := seam.Materialization{LogicalTime: et, FixpointDigest: fix, MaterializationDigest: matDigest, RuleBundleDigest: w.ruleDigest,
		RuleSetVersion: w.versions.RuleSet, DataflowVersion: w.versions.Dataflow, QueryAtoms: atoms, Facts: facts}
	q := seam.QueryBatch{BindingProfileDigest: w.binding.ProfileDigest, LFixpointDigest: fix, RuleBundleDigest: w.ruleDigest,
		RProfileDigest: w.rProfile.Digest(), Queries: room.query()}
	q.Queries[0] = seam.Query{Proposal: p, FactRequirements: reqs, FrontierPreconditionIDs: frontierIDs}
	// An untraced tick reads neither the projection's digest nor its
	// query batch's (both are only noted in the trace), so neither is
	// derived.
	seal := seam.SealAndProjectVerified
	if t.untraced {
		seal = seam.SealAndProjectVerifiedUndigested
	}
	proj, rej := seal(l, w.rProfile, w.verifiedBinding, q)
	if rej != nil {
		return nil, fmt.Sprintf("the seam refused proposal %s: %s at %s", p.ProposalID, rej.Code, rej.Path)
	}
	rec := &verdictRec{proposalID: p.ProposalID, projectionDigest: proj.Digest, frontier: frontierIDs}
	if len(proj.Verdicts) == 1 {
		v, _ := proj.Verdicts[0].SharedVerdict() // read only: the note writes its lists
		rec.verdict, rec.status, rec.supports = true, v.Status, v.SupportDerivationIDs
	}
	if t.why != nil && len(proj.Verdicts) == 1 {
		v, _ := proj.Verdicts[0].SharedVerdict() // read only: the note writes its lists
		t.why.verdicts[p.ProposalID] = v.Status
	}
	if !t.untraced {
		body, ok := rec.bytes(&t.room)
		t.noteBytes("seam.verdict", body, ok, rec.asMap)
	}
	return *proj.Command, ""
}

// projectRoom holds what projecting a proposal of few bound preconditions
// builds: its requirements, atoms and fact states, and each bound
// precondition's rendered arguments and their values as L reads them, in
// one allocation. Each list is capped at its own room, so one that
// outgrows it moves on its own (TestProjectRoomIsApart).
type projectRoom struct {
	reqs         [projectRoomPreconditions]seam.FactRequirement
	atoms        [projectRoomPreconditions]seam.Atom
	facts        [projectRoomPreconditions]seam.FactState
	argv         [projectRoomArgs]any
	vals         [projectRoomArgs]logic.Value
	nargs, nvals int // how much of argv and vals is handed out
	q            [1]seam.Query
	ids          [projectRoomIDs]string // the preconditions' support ids
	nids         int                    // how much of ids is handed out
}

// The preconditions and arguments a projectRoom has room for: as many as
// the seam keeps in a query of its own (smallReqs); and the support ids,
// as many as a refund proposal's two preconditions name (eight cost the
// room a larger size class for nothing). With the query, some 1 KB.
const (
	projectRoomPreconditions = 2
	projectRoomArgs          = 4
	projectRoomIDs           = 4
)

// newProjectRoom is a room for a proposal of n preconditions, nil when
// they are more than it holds (every list is then made on its own).
func newProjectRoom(n int) *projectRoom {
	if n > projectRoomPreconditions {
		return nil
	}
	return new(projectRoom)
}

// lists are the requirement, atom and fact-state lists, empty with room
// for n.
func (r *projectRoom) lists(n int) ([]seam.FactRequirement, []seam.Atom, []seam.FactState) {
	if r == nil {
		return make([]seam.FactRequirement, 0, n), make([]seam.Atom, 0, n), make([]seam.FactState, 0, n)
	}
	return r.reqs[:0:n], r.atoms[:0:n], r.facts[:0:n]
}

// query is the batch's list of one query, zero: the room's own.
func (r *projectRoom) query() []seam.Query {
	if r == nil {
		return make([]seam.Query, 1)
	}
	return r.q[:1:1]
}

// args is room for n rendered arguments.
func (r *projectRoom) args(n int) []any {
	if r == nil {
		return make([]any, n)
	}
	return carve(r.argv[:], &r.nargs, n)
}

// values is room for n argument values.
func (r *projectRoom) values(n int) []logic.Value {
	if r == nil {
		return make([]logic.Value, n)
	}
	return carve(r.vals[:], &r.nvals, n)
}

// idList is room for n support ids, empty strings.
func (r *projectRoom) idList(n int) []string {
	if r == nil {
		return make([]string, n)
	}
	return carve(r.ids[:], &r.nids, n)
}

// carve is the n elements of buf after the *used already handed out, capped
// so that an append copies rather than write over the next room, or a new
// slice when buf has fewer than n left.
func carve[T any](buf []T, used *int, n int) []T {
	if *used+n > len(buf) {
		return make([]T, n)
	}
	s := buf[*used : *used+n : *used+n]
	*used += n
	return s
}

// lDigests are the digests of the L fixpoint and materialization the seam
// binds: the facts the tick's preconditions consult at epoch time et, and
// the live supports. Their preimages are written here as cjson writes
// them; a string outside the string rule leaves them to lDigestsOf, which
// reports it.
func (w *Workflow) lDigests(facts []seam.FactState, supports []support, et int64) (fix, mat string, err error) {
	// Both preimages are only digested: written into cjson's recycled
	// buffer. Both digests are written into one array and made one
	// string, each cut from it.
	ok := true
	var both [2 * lDigestLen]byte
	fixD, matD := (*[lDigestLen]byte)(both[:lDigestLen]), (*[lDigestLen]byte)(both[lDigestLen:])
	putDigest(fixD, cjson.SumWritten(func(b []byte) []byte {
		b = append(b, `{"facts":[`...)
		for i, f := range facts {
			if i > 0 {
				b = append(b, ',')
			}
			// An atom's canonical bytes are its encoding in any place: it
			// is an object without a kind, so no array in it is a set.
			b = append(b, `{"atom":`...)
			b = f.Atom.AppendCanonical(b)
			b = append(b, `,"negative":`...)
			b, ok = appendIDs(b, f.Negative, ok)
			b = append(b, `,"positive":`...)
			b, ok = appendIDs(b, f.Positive, ok)
			b = append(b, '}')
		}
		b = append(b, `],"kind":"flrh.workflow.l-fixpoint","logical_time":`...)
		b = cjson.AppendInt(b, et)
		b = append(b, `,"rule_bundle":`...)
		b, ok = appendStr(b, w.ruleDigest, ok)
		return append(b, '}')
	}))
	if !ok {
		return w.lDigestsOf(facts, supports, et)
	}
	putDigest(matD, cjson.SumWritten(func(b []byte) []byte {
		b = append(b, `{"fixpoint":"`...) // a digest needs no escape
		b = append(b, fixD[:]...)
		b = append(b, '"')
		b = append(b, `,"kind":"flrh.workflow.l-materialization","supports":[`...)
		for i, s := range supports {
			if i > 0 {
				b = append(b, ',')
			}
			b, ok = appendStr(b, s.ID, ok)
		}
		return append(b, "]}"...)
	}))
	if !ok {
		return w.lDigestsOf(facts, supports, et)
	}
	d := string(both[:])
	return d[:lDigestLen], d[lDigestLen:], nil
}

// lDigestLen is the length of a digest as cjson spells it: "sha256:" and
// the sum's hex digits.
const lDigestLen = len("sha256:") + 2*sha256.Size

// putDigest writes a sum as cjson.Digest spells it.
func putDigest(dst *[lDigestLen]byte, sum [sha256.Size]byte) {
	copy(dst[:], "sha256:")
	cjson.HexSum((*[2 * sha256.Size]byte)(dst[len("sha256:"):]), &sum)
}

// appendStr appends a string; ok turns false if it breaks the string rule.
func appendStr(b []byte, s string, ok bool) ([]byte, bool) {
	b, good := appendChecked(b, s)
	return b, ok && good
}

// appendChecked appends s's canonical encoding (cjson.AppendString's
// bytes) and reports whether s keeps the string rule
// (cjson.CheckString): a string AppendQuoted found all ASCII is valid
// UTF-8 and in NFC, so only another is checked, in a second pass.
func appendChecked(b []byte, s string) ([]byte, bool) {
	b, ascii := cjson.AppendQuoted(b, s)
	return b, ascii || cjson.CheckString(s, "") == nil
}

// appendIDs appends a list of strings, as appendStr does each.
func appendIDs(b []byte, ids []string, ok bool) ([]byte, bool) {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b, ok = appendStr(b, id, ok)
	}
	return append(b, ']'), ok
}

// lDigestsOf is lDigests through cjson's encoder: the reference its
// preimages are held to, and the path that reports a bad string.
func (w *Workflow) lDigestsOf(facts []seam.FactState, supports []support, et int64) (fix, mat string, err error) {
	var factDocs []any
	for _, f := range facts {
		v, _ := cjson.Decode(f.Atom.CanonicalJSON())
		factDocs = append(factDocs, map[string]any{"atom": v, "positive": anySlice(f.Positive), "negative": anySlice(f.Negative)})
	}
	fix, err = cjson.DigestOf(map[string]any{"kind": "flrh.workflow.l-fixpoint", "logical_time": et, "rule_bundle": w.ruleDigest, "facts": nonNilAny(factDocs)})
	if err != nil {
		return "", "", err
	}
	var ids []any
	for _, s := range supports {
		ids = append(ids, s.ID)
	}
	mat, err = cjson.DigestOf(map[string]any{"kind": "flrh.workflow.l-materialization", "fixpoint": fix, "supports": nonNilAny(ids)})
	if err != nil {
		return "", "", err
	}
	return fix, mat, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilAny(s []any) []any {
	if s == nil {
		return []any{}
	}
	return s
}

// render resolves an eligibility template against a proposal's action
// and destination. An unresolvable reference renders as null, an atom L
// never holds, so the literal stays unproven (fail closed).
func render(tmpl any, a action) any {
	s, ok := tmpl.(string)
	if !ok {
		return tmpl
	}
	ref, isRef := reference(s)
	if !isRef {
		return strings.TrimPrefix(s, "$")
	}
	// The reference's dotted parts, read in place: the first names the
	// object, each after it a member.
	head, rest, more := strings.Cut(ref, ".")
	var cur any = a.Action
	if head == "destination" {
		cur = a.Destination
	}
	for more {
		var p string
		p, rest, more = strings.Cut(rest, ".")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[p]; !ok {
			return nil
		}
	}
	switch cur.(type) {
	case string, int64:
		return cur
	}
	return nil
}

// supportIDs returns the positive and negative support ids of an atom:
// base supports by their derivation ids, rule supports by an id derived
// from the rule instance.
func (w *Workflow) supportIDs(mat *logic.Materialization, rel string, args []any) ([]string, []string) {
	return w.supportIDsIn(mat, rel, args, make([]logic.Value, len(args)), nil)
}

// supportIDsIn is supportIDs with the atom's fact's arguments written into
// vals, of len(args), and the id lists in room's (nil: a list of their
// own).
func (w *Workflow) supportIDsIn(mat *logic.Materialization, rel string, args []any, vals []logic.Value, room *projectRoom) ([]string, []string) {
	schema, _ := w.rules.SharedSchema(rel) // read only
	f := logic.Fact{Rel: rel, Args: vals}
	for i, a := range args {
		v, err := value(a, schema[i])
		if err != nil {
			return []string{}, []string{}
		}
		f.Args[i] = v
	}
	// A rule support's id is the digest of its text, written where it is
	// digested; the text opens with its rule's, digested from the state
	// kept after its leading blocks (w.ruleTexts). Each support is read
	// as L finds it, in L's scratch (logic.EachSupportBoth), and named
	// at once: none is collected (every test of the package holds the
	// ids to those of the supports SupportsBoth collects, through
	// verifySupportIDs).
	c := supportIDCollectors.Get().(*supportIDCollector)
	c.w = w
	posErr, negErr := mat.EachSupportBoth(f, c.each)
	pos, neg := c.lists(posErr, negErr, room)
	c.release()
	if verifySupportIDs != nil {
		verifySupportIDs(w, mat, f, pos, neg)
	}
	return pos, neg
}

// verifySupportIDs, set by tests, is handed the ids supportIDsIn found
// for every fact: it holds them to those of the supports SupportsBoth
// collects (it panics if they differ).
var verifySupportIDs func(w *Workflow, mat *logic.Materialization, f logic.Fact, pos, neg []string)

// supportIDCollector gathers the ids of an atom's supports as L hands
// them over, every positive one before any negative one: a base
// support's ids as they are, a rule support's as a place in ids, its id
// written into hex, all of them made one string at the end. It is pooled
// (supportIDCollectors) with its callback bound once, and nothing it
// returns points into it.
type supportIDCollector struct {
	w     *Workflow
	each  func(neg bool, s *logic.Support) // add, bound once
	ids   []string                         // the ids, a rule support's "" until lists
	rules []int                            // where each rule support's id goes in ids
	hex   []byte                           // the rule supports' digests, as ruleSupportID spells them, one after another
	npos  int                              // how many of ids are the positive side's
}

var supportIDCollectors = sync.Pool{New: func() any {
	c := new(supportIDCollector)
	c.each = c.add
	return c
}}

// release empties c and returns it to supportIDCollectors.
func (c *supportIDCollector) release() {
	clear(c.ids)
	c.w, c.ids, c.rules, c.hex, c.npos = nil, c.ids[:0], c.rules[:0], c.hex[:0], 0
	supportIDCollectors.Put(c)
}

// add is handed each support of the atom, neg saying of which side.
func (c *supportIDCollector) add(neg bool, s *logic.Support) {
	if s.Base {
		c.ids = append(c.ids, s.BaseIDs...)
	} else {
		c.rules = append(c.rules, len(c.ids))
		c.ids = append(c.ids, "")
		c.hex = c.w.appendRuleSupportID(c.hex, s)
	}
	if !neg {
		c.npos = len(c.ids)
	}
}

// lists are the two sides' ids, each sorted and without duplicates (none
// for a side L failed to find, posErr or negErr), in one array, each
// capped at its own: room's (projectRoom.idList), when it has room.
func (c *supportIDCollector) lists(posErr, negErr error, room *projectRoom) (pos, neg []string) {
	if len(c.ids) == 0 {
		return []string{}, []string{}
	}
	all := room.idList(len(c.ids))
	copy(all, c.ids)
	if len(c.rules) > 0 {
		ids := string(c.hex)
		for i, at := range c.rules {
			all[at] = ids[i*ruleSupportIDLen : (i+1)*ruleSupportIDLen]
		}
	}
	side := func(ids []string, err error) []string {
		if err != nil {
			return []string{}
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		return ids[:len(ids):len(ids)]
	}
	return side(all[:c.npos:c.npos], posErr), side(all[c.npos:], negErr)
}

// appendRuleSupportID appends the id of a rule support, the digest of its
// text, as ruleSupportID spells it.
func (w *Workflow) appendRuleSupportID(b []byte, s *logic.Support) []byte {
	write := func(b []byte) []byte { b, _ = s.AppendText(b); return b }
	var sum [sha256.Size]byte
	if s.Rule >= 0 && s.Rule < len(w.ruleTexts) {
		sum = w.ruleTexts[s.Rule].SumWritten(write)
	} else {
		sum = cjson.SumWritten(write)
	}
	b = append(b, ruleSupportPrefix...)
	var hex [2 * sha256.Size]byte
	cjson.HexSum(&hex, &sum)
	return append(b, hex[:]...)
}

// ruleSupportPrefix opens every rule support's id; ruleSupportIDLen is
// the length of one.
const (
	ruleSupportPrefix = logic.DerivedPrefix + "rule:"
	ruleSupportIDLen  = len(ruleSupportPrefix) + 2*sha256.Size
)

// reactRoom is how many commands react holds without an allocation:
// the two advances to the stored watermark, a tick's epochs, and the two
// past it.
const reactRoom = 8

// react runs R: from the stored watermark, apply each projection's
// command (one epoch each) and move both sources past the tick. Every
// epoch publishes within its tick: R starts from a state whose demand
// covers every epoch a tick can open, so the second source's advance
// publishes each batch as it stabilizes. That is the batch a GrantDemand
// after the advances would publish, byte for byte — its identity is its
// epoch, its values and the watermark it stabilized at — one Step (a state
// sealed, a transition digested) fewer per tick. cmds is not empty.
func (t *tick) react(cmds []frontier.Command) ([]sealedBatch, error) {
	w, st := t.w, t.st
	prof := w.rProfile
	d, df := prof.Digest(), prof.DataflowVersion()
	advance := func(all []frontier.Command, mark int64) []frontier.Command {
		if pair := w.advances.pair(d, df, mark); pair != nil {
			return append(all, pair[0], pair[1])
		}
		for _, src := range []string{ProposalSource, VerdictSource} {
			all = append(all, frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: df, SourceID: src, LowWatermark: mark})
		}
		return all
	}
	// R starts each tick from its initial state. Moving both sources to
	// the stored watermark first changes nothing the tick publishes — a
	// batch's identity is its epoch, its values and the watermark it
	// stabilized at, (lt+1)·EpochStride either way — unless it makes R
	// refuse an epoch of this tick as late, which a watermark written by
	// an earlier tick (at most lt·EpochStride) never does. So the catch-up
	// runs only for a watermark past this tick's first epoch, where R's
	// refusal is the answer.
	// The commands are read by R and kept by nothing: for a tick of few
	// epochs (one, a tick's one proposal) they are held on the stack,
	// where a list of len(cmds)+4 was made on the heap every tick.
	var room [reactRoom]frontier.Command
	all := room[:0]
	if n := len(cmds) + 4; n > len(room) {
		all = make([]frontier.Command, 0, n)
	}
	if st.Watermark > t.lt*EpochStride {
		all = advance(all, st.Watermark)
	}
	all = append(all, cmds...)
	st.Watermark = (t.lt + 1) * EpochStride
	all = advance(all, st.Watermark)
	// Only the batches are kept: R's states between the commands are
	// neither sealed nor digested, nor is its transition record taken.
	// No tick's batches take a published digest: H reads it only for its
	// control events and the input digest they bind, which it builds for
	// no tick (authority.Input.NoControlEvents), and for its batch check,
	// which a batch SealBatchDigested sealed skips; no note writes it (the
	// FHR binds tickets, signals and resolutions, not the batch). The
	// tick takes it where the state keeps the batch (withPublished).
	published, at, rej := frontier.PublishUndigested(w.r0, prof, all)
	if rej != nil {
		return nil, fmt.Errorf("workflow: R refused %T: %s at %s", all[at], rej.Code, rej.Path)
	}
	if len(published) != len(cmds) {
		return nil, fmt.Errorf("workflow: R published %d batches for %d epochs", len(published), len(cmds))
	}
	out := make([]sealedBatch, len(published))
	for i, pb := range published {
		out[i] = w.toAuthority(pb)
		if verifySealedBatch != nil {
			if err := verifySealedBatch(w, pb, out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// advanceMemoTicks is how many ticks' advances an advanceMemo holds.
const advanceMemoTicks = 64

// advanceMemo holds, for each of a run's first advanceMemoTicks ticks,
// the two commands that move R's sources past it (react), as the
// interface values R reads: every run's tick of that logical time
// advances to the same watermark, so they are boxed once a workflow,
// where each tick boxed two of its own. Entries are immutable once
// stored; a tick that finds none stores its own (any of two racing
// ticks' is as good).
type advanceMemo [advanceMemoTicks]atomic.Pointer[[2]frontier.Command]

// pair returns the advances of both sources (ProposalSource, then
// VerdictSource) to mark under profile digest d and dataflow version df,
// or nil when mark is not the end of one of the ticks it holds (the
// caller boxes its own).
func (m *advanceMemo) pair(d, df string, mark int64) *[2]frontier.Command {
	i := mark/EpochStride - 1
	if m == nil || mark%EpochStride != 0 || i < 0 || i >= int64(len(m)) {
		return nil
	}
	if p := m[i].Load(); p != nil {
		if a, ok := p[0].(frontier.AdvanceFrontier); ok && a.ProfileDigest == d && a.DataflowVersion == df && a.LowWatermark == mark {
			return p
		}
	}
	p := &[2]frontier.Command{
		frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: df, SourceID: ProposalSource, LowWatermark: mark},
		frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: df, SourceID: VerdictSource, LowWatermark: mark},
	}
	m[i].Store(p)
	return p
}

// sealedBatch is a published batch in H's input form, with what
// authority.SealBatch checked of it (the zero value when it refused).
type sealedBatch struct {
	batch   authority.PublishedBatch
	checked authority.CheckedBatch
}

// toAuthority turns R's published batch into H's input form, sealed and
// checked once, so that H does not digest it again to check it. R took
// both of the batch's digests when it published it, over the preimages
// H's would be (TestToAuthorityIsSealBatch draws batches and holds this
// to SealBatch, which takes them again; every other test of the package
// checks each batch the same way), so they are handed over, not taken a
// second time. A batch SealBatchDigested refuses is sealed as before and
// left to H, whose refusal it is.
func (w *Workflow) toAuthority(pb *frontier.PublishedBatch) sealedBatch {
	b := authorityBatch(pb)
	if sealed, checked, err := authority.SealBatchDigested(b, w.rProfile.Digest(), pb.Digest()); err == nil {
		return sealedBatch{sealed, checked}
	}
	b.PublishedBatchDigest = authority.PublishedBatchDigest(b)
	return sealedBatch{batch: b}
}

// withPublished is b with its published digest, when R left it out (a
// tick's batch), and checked sealed again with it: what the state keeps
// of a batch, and what a grant's re-decision is given, are then the
// batch R would have published with its digest.
func (w *Workflow) withPublished(b authority.PublishedBatch, checked authority.CheckedBatch) (authority.PublishedBatch, authority.CheckedBatch) {
	if b.PublishedBatchDigest != "" {
		return b, checked
	}
	d := authority.PublishedBatchDigest(b)
	if sealed, c, err := authority.SealBatchDigested(b, w.rProfile.Digest(), d); err == nil {
		return sealed, c
	}
	b.PublishedBatchDigest = d
	return b, authority.CheckedBatch{}
}

// authorityBatch is R's published batch in H's input form, unsealed.
func authorityBatch(pb *frontier.PublishedBatch) authority.PublishedBatch {
	// H and the run's state only read a batch's lists, so the batch's id
	// lists share R's batch's arrays and the proposals' and verdicts'
	// lists the sealed values' (checkAuthorityBatch, run by every test of
	// the package through the sealed-batch hook, holds the batch to the
	// copied one).
	b := authority.PublishedBatch{Batch: pb.SharedBatch()}
	np, nv := pb.NumProposals(), pb.NumVerdicts()
	if np == 1 && nv == 1 {
		// A tick's batch, one proposal and its verdict: both lists in one
		// allocation, each capped at its one entry.
		both := new(struct {
			p [1]protocol.EffectProposal
			v [1]protocol.EligibilityVerdict
		})
		b.Proposals, b.Verdicts = both.p[:1:1], both.v[:1:1]
		b.Proposals[0], _ = pb.ProposalAt(0).SharedProposal()
		b.Verdicts[0], _ = pb.VerdictAt(0).SharedVerdict()
		return b
	}
	if n := np; n > 0 {
		b.Proposals = make([]protocol.EffectProposal, n)
		for i := range n {
			b.Proposals[i], _ = pb.ProposalAt(i).SharedProposal()
		}
	}
	if n := nv; n > 0 {
		b.Verdicts = make([]protocol.EligibilityVerdict, n)
		for i := range n {
			b.Verdicts[i], _ = pb.VerdictAt(i).SharedVerdict()
		}
	}
	return b
}

// verifySealedBatch, when set (by tests), checks a batch toAuthority
// sealed against sealing it with SealBatch.
var verifySealedBatch func(w *Workflow, pb *frontier.PublishedBatch, got sealedBatch) error
