package kernel

import (
	"crypto/sha256"
	"slices"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// This file writes the kernel's own canonical objects (fact deltas,
// proposals, identity preimages, the transition digest projection) as
// bytes, member by member in canonical key order, instead of building a
// map and encoding it. Every string written here was already checked (an
// id, a version label, a digest, or a value that passed canonCopy), so the
// bytes are what cjson.Encode would return for the same object; the tests
// hold the two to that, byte for byte.

// canonCopy returns a deep copy of v when v lies wholly in the cjson value
// model (map[string]any or protocol.Object, []any, string, int64, int, bool,
// nil) and would encode at the given container depth: every string valid
// UTF-8 in NFC, every key ASCII, nothing too deeply nested. The copy is what
// an encode-then-decode round trip returns (objects as map[string]any, int
// as int64). ok is false otherwise, and the caller takes the round trip
// itself, whose verdict and error are the contract.
//
// reflected says v is reached through reflection (below a struct or a named
// map type such as protocol.Object), where the encoder reads a nil map or
// slice as null rather than as empty, and refuses any value, not only a
// container, at the depth limit. canonCopy follows it there.
func canonCopy(v any, depth int, reflected bool) (any, bool) {
	if v == nil {
		return nil, true
	}
	if reflected && depth >= cjson.MaxDepth {
		return nil, false
	}
	switch t := v.(type) {
	case bool, int64:
		return v, true
	case int:
		return int64(t), true
	case string:
		// v itself: the string is already boxed, and boxing it again
		// allocates.
		return v, cjson.CheckString(t, "") == nil
	case map[string]any:
		if t == nil && reflected {
			return nil, true
		}
		return canonCopyMap(t, depth, reflected)
	case protocol.Object:
		if t == nil {
			return nil, true
		}
		return canonCopyMap(t, depth, true)
	case []any:
		if t == nil && reflected {
			return nil, true
		}
		if depth >= cjson.MaxDepth {
			return nil, false
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, ok := canonCopy(e, depth+1, reflected)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return nil, false
}

// canonCopyMap is canonCopy of a non-nil object.
func canonCopyMap(m map[string]any, depth int, reflected bool) (map[string]any, bool) {
	if depth >= cjson.MaxDepth {
		return nil, false
	}
	out := make(map[string]any, len(m))
	for k, e := range m { //flrh:orderfree a copy; every failure gives the same verdict
		if !asciiKey(k) {
			return nil, false
		}
		c, ok := canonCopy(e, depth+1, reflected)
		if !ok {
			return nil, false
		}
		out[k] = c
	}
	return out, true
}

// canonStable reports whether canonCopy(v, depth, reflected) would
// succeed and return v itself, deeply: every container already the type
// the copy makes (map[string]any, []any, neither nil), every number an
// int64, every string and key canonical. A value for which it is true is
// its own canonical copy; only the copy's isolation from its holder is
// left, which a caller may do without when nothing else changes the value.
func canonStable(v any, depth int, reflected bool) bool {
	if v == nil {
		return true
	}
	if reflected && depth >= cjson.MaxDepth {
		return false
	}
	switch t := v.(type) {
	case bool, int64:
		return true
	case string:
		return cjson.CheckString(t, "") == nil
	case map[string]any:
		return t != nil && canonStableMap(t, depth, reflected)
	case []any:
		if t == nil || depth >= cjson.MaxDepth {
			return false
		}
		for _, e := range t {
			if !canonStable(e, depth+1, reflected) {
				return false
			}
		}
		return true
	}
	return false // int, protocol.Object and other types: the copy changes them
}

// canonStableMap is canonStable of a non-nil object's members, as
// canonCopyMap copies them.
func canonStableMap(m map[string]any, depth int, reflected bool) bool {
	return everyMember(m, depth, reflected, canonStable)
}

// everyMember reports whether an object below cjson.MaxDepth has only
// plain ASCII keys and members that each pass ok one level deeper.
func everyMember(m map[string]any, depth int, reflected bool, ok func(any, int, bool) bool) bool {
	if depth >= cjson.MaxDepth {
		return false
	}
	for k, e := range m { //flrh:orderfree every failure gives the same verdict
		if !asciiKey(k) || !ok(e, depth+1, reflected) {
			return false
		}
	}
	return true
}

func asciiKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] >= 0x80 {
			return false
		}
	}
	return true
}

// rootSetFree reports whether encoding m at the root sorts no array as a
// set: its "kind" member, if any, names no kind with set-like members.
func rootSetFree(m map[string]any) bool {
	k, ok := m["kind"].(string)
	return !ok || len(cjson.SetLikePaths(k)) == 0
}

const (
	preimageHead = `{"contract_version":"` + ContractVersion + `","domain":`
	preimageKind = `,"kind":"` + identityPreimageKind + `","value":`
)

// identityOf is identity for a value already in canonical bytes: the
// preimage object is written around them. domain must be canonical text.
// c is as for identityWritten.
func identityOf(c *cjson.Prefix, ss *stepStrings, prefix, domain string, value []byte) string {
	return identityWritten(c, ss, prefix, domain, func(b []byte) []byte { return append(b, value...) })
}

// identityWritten is identityOf for the value appendValue writes: the
// value is written into the preimage itself and never kept. With a
// cjson.Prefix, preimages opening with the same blocks are digested from
// its kept state (the same sum). The id is carved from ss (nil: a string
// of its own).
func identityWritten(c *cjson.Prefix, ss *stepStrings, prefix, domain string, appendValue func([]byte) []byte) string {
	write := func(b []byte) []byte {
		b = append(b, preimageHead...)
		b = cjson.AppendString(b, domain)
		b = append(b, preimageKind...)
		b = appendValue(b)
		return append(b, '}')
	}
	var sum [sha256.Size]byte
	if c != nil {
		sum = c.SumWritten(write)
	} else {
		sum = cjson.SumWritten(write)
	}
	var buf [96]byte // the kernel's prefixes are short; a longer one takes the heap
	out := buf[:0]
	out = append(out, prefix...)
	out = append(out, ':')
	var hx [2 * sha256.Size]byte
	cjson.HexSum(&hx, &sum)
	out = append(out, hx[:]...)
	return ss.of(out)
}

// digest is cjson.Digest in one allocation: "sha256:" and the lowercase
// hex SHA-256 of canonical bytes.
func digest(canonical []byte) string { return digestIn(nil, canonical) }

// digestIn is digest carved from ss.
func digestIn(ss *stepStrings, canonical []byte) string {
	return sumDigest(ss, sha256.Sum256(canonical))
}

// sumDigest is "sha256:" and the lowercase hex of sum, carved from ss.
func sumDigest(ss *stepStrings, sum [sha256.Size]byte) string {
	var out [digestLen]byte
	copy(out[:], "sha256:")
	cjson.HexSum((*[2 * sha256.Size]byte)(out[7:]), &sum)
	return ss.of(out[:])
}

// digestLen is the length of a digest, "sha256:" and 64 hex digits.
const digestLen = len("sha256:") + 2*sha256.Size

// stepStrings carves a step's ids and digests from one allocation, sized
// for all of them before the first is written: its facts' derivation ids,
// its proposals' ids and dedup keys, the prior snapshot's digest when the
// step takes it, the next snapshot's and the transition's. Each was a
// string of its own. A string carved from it keeps the others' bytes
// alive with its own (some 300 bytes a step); none is ever written again.
// A nil stepStrings gives each string its own allocation.
type stepStrings struct {
	sb strings.Builder
}

// of returns p as a string.
func (ss *stepStrings) of(p []byte) string {
	if ss == nil {
		return string(p)
	}
	n := ss.sb.Len()
	ss.sb.Write(p)
	return ss.sb.String()[n:]
}

// stepStringsSize is what stepStrings holds for a step of facts facts and
// proposals proposals, with the prior snapshot's digest when prior is set
// and the next snapshot's and the transition's when digests is.
func stepStringsSize(facts, proposals int, prior, digests bool) int {
	n := facts*derivationIDLen + proposals*(proposalIDLen+dedupKeyLen)
	if digests {
		n += 2 * digestLen
		if prior {
			n += digestLen
		}
	}
	return n
}

func appendMember(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = cjson.AppendString(b, key)
	return append(b, ':')
}

// appendFactValue writes a fact delta in canonical form without its
// derivation_id member (the identity's value), its tuple and provenance
// encoded in place; head is the offset where that member sits in the
// whole delta (after dataflow_version). ok is false when a part does not
// encode (b is then unusable).
func appendFactValue(b []byte, e *Event, diff int64, tuple, prov map[string]any) (_ []byte, head int, ok bool) {
	b = append(b, `{"causation_id":`...)
	b = cjson.AppendChecked(b, e.ID)
	b = append(b, `,"dataflow_version":`...)
	b = cjson.AppendChecked(b, e.Versions.Dataflow)
	head = len(b)
	b = append(b, `,"diff":`...)
	b = cjson.AppendInt(b, diff)
	b = append(b, `,"kind":"`+protocol.KindFactDelta+`","logical_time":`...)
	b = cjson.AppendInt(b, e.LogicalTime)
	b = append(b, `,"provenance_delta":`...)
	b, err := cjson.AppendMarshal(b, prov)
	if err != nil {
		return b, 0, false
	}
	b = append(b, `,"rule_set_version":`...)
	b = cjson.AppendChecked(b, e.Versions.RuleSet)
	b = append(b, `,"tuple":`...)
	if b, err = cjson.AppendMarshal(b, tuple); err != nil {
		return b, 0, false
	}
	return append(b, '}'), head, true
}

// A fact's derivation id is "derivation:" and 64 hex digits; its member,
// at the fact's head, is the member name and the quoted id.
const (
	derivationIDLen  = len("derivation:") + 2*sha256.Size
	proposalIDLen    = len("proposal:") + 2*sha256.Size
	dedupKeyLen      = len("proposal-dedup:") + 2*sha256.Size
	derivationMember = len(`,"derivation_id":""`) + derivationIDLen
)

// A proposal in canonical form (preconditions already sorted) is its head,
// its two identity members and its tail; its identity value is the head
// and the tail alone.

// appendProposalIDs writes the proposal's two identity members, which sit
// between its head and its tail.
func appendProposalIDs(b []byte, id, dedup string) []byte {
	b = append(b, `,"proposal_dedup_key":`...)
	b = cjson.AppendChecked(b, dedup)
	b = append(b, `,"proposal_id":`...)
	return cjson.AppendChecked(b, id)
}

// appendProposalTail writes the proposal's versions and closes it.
func appendProposalTail(b []byte, e *Event, cv *CheckedVersions) []byte {
	b = append(b, `,"versions":`...)
	b = appendVersions(b, &e.Versions, cv)
	return append(b, '}')
}

// appendProposalHead writes the proposal's members before its
// identities: the action digest through the precondition list.
func appendProposalHead(b []byte, e *Event, pr *Proposal, action, dest string, pre []string) []byte {
	b = append(b, `{"action_digest":`...)
	b = cjson.AppendChecked(b, action)
	b = append(b, `,"cause_id":`...)
	b = cjson.AppendChecked(b, e.ID)
	b = append(b, `,"correlation_id":`...)
	b = cjson.AppendChecked(b, e.CorrelationID)
	b = append(b, `,"declared_risk_hint":`...)
	b = cjson.AppendChecked(b, pr.RiskHint)
	b = append(b, `,"destination_digest":`...)
	b = cjson.AppendChecked(b, dest)
	b = append(b, `,"effect_type":`...)
	b = cjson.AppendChecked(b, pr.EffectType)
	b = append(b, `,"goal_id":`...)
	b = cjson.AppendChecked(b, pr.GoalID)
	b = append(b, `,"kind":"`+protocol.KindEffectProposal+`","obligation_id":`...)
	b = cjson.AppendChecked(b, pr.ObligationID)
	b = append(b, `,"preconditions":[`...)
	for i, s := range pre {
		if i > 0 {
			b = append(b, ',')
		}
		b = cjson.AppendChecked(b, s)
	}
	return append(b, ']')
}

// Strings this package writes with cjson.AppendChecked, which skips the
// scan for bytes to escape, are ids, digests, version labels and risk
// hints, each checked when the event was parsed or the fact or proposal
// was built (or derived here as a digest). Every kernel test runs with
// cjson.MustBePlain as the check, which panics if a string that needs
// escaping reaches it.

// appendVersions writes a version envelope whose labels passed
// validVersion (so are ASCII), members in canonical order.
func appendVersions(b []byte, v *protocol.VersionEnvelope, cv *CheckedVersions) []byte {
	if cv.is(v) {
		return append(b, cv.canon...)
	}
	// The member names are constants, written with their punctuation
	// rather than quoted one by one.
	b = append(b, `{"canonicalization":`...)
	b = cjson.AppendString(b, v.Canonicalization)
	b = append(b, `,"composition_profile":`...)
	b = cjson.AppendString(b, v.CompositionProfile)
	b = append(b, `,"dataflow":`...)
	b = cjson.AppendString(b, v.Dataflow)
	b = append(b, `,"event_schema":`...)
	b = cjson.AppendString(b, v.EventSchema)
	b = append(b, `,"gate":`...)
	b = cjson.AppendString(b, v.Gate)
	b = append(b, `,"graph_schema":`...)
	b = cjson.AppendString(b, v.GraphSchema)
	b = append(b, `,"model":`...)
	b = cjson.AppendString(b, v.Model)
	b = append(b, `,"oracle":`...)
	b = cjson.AppendString(b, v.Oracle)
	b = append(b, `,"resolver":`...)
	b = cjson.AppendString(b, v.Resolver)
	b = append(b, `,"rule_set":`...)
	b = cjson.AppendString(b, v.RuleSet)
	b = append(b, `,"state_schema":`...)
	b = cjson.AppendString(b, v.StateSchema)
	b = append(b, `,"tool":`...)
	b = cjson.AppendString(b, v.Tool)
	b = append(b, `,"workflow":`...)
	b = cjson.AppendString(b, v.Workflow)
	return append(b, '}')
}

// appendDigests writes the array of the digests of canonical encodings.
func appendDigests(b []byte, encodings [][]byte) []byte {
	b = append(b, '[')
	for i, enc := range encodings {
		if i > 0 {
			b = append(b, ',')
		}
		sum := sha256.Sum256(enc)
		var hx [2 * sha256.Size]byte
		cjson.HexSum(&hx, &sum)
		b = append(b, `"sha256:`...)
		b = append(b, hx[:]...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// canonCheck reports what canonCopy's ok would, without copying.
func canonCheck(v any, depth int, reflected bool) bool {
	if v == nil {
		return true
	}
	if reflected && depth >= cjson.MaxDepth {
		return false
	}
	switch t := v.(type) {
	case bool, int64, int:
		return true
	case string:
		return cjson.CheckString(t, "") == nil
	case map[string]any:
		if t == nil && reflected {
			return true
		}
		return canonCheckMap(t, depth, reflected)
	case protocol.Object:
		return t == nil || canonCheckMap(t, depth, true)
	case []any:
		if t == nil && reflected {
			return true
		}
		if depth >= cjson.MaxDepth {
			return false
		}
		for _, e := range t {
			if !canonCheck(e, depth+1, reflected) {
				return false
			}
		}
		return true
	}
	return false
}

func canonCheckMap(m map[string]any, depth int, reflected bool) bool {
	return everyMember(m, depth, reflected, canonCheck)
}

// rootSetFreeValue is rootSetFree for any value: only an object can carry
// a kind.
func rootSetFreeValue(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return rootSetFree(t)
	case protocol.Object:
		return rootSetFree(t)
	}
	return true
}

// snapshotMembersSorted are the kernel's snapshot members in canonical
// order.
var snapshotMembersSorted = [...]string{
	"aggregate_id", "kind", "last_event_id", "last_logical_time", "phase", "revision", "schema_version", "versions",
}

// snapshotMembersKeyed holds each of snapshotMembersSorted as appendMember
// writes it after a first member (a comma, the quoted name, a colon),
// written once: the names are constants.
var snapshotMembersKeyed = func() (out [len(snapshotMembersSorted)]string) {
	for i, k := range snapshotMembersSorted {
		out[i] = string(appendMember(nil, false, k))
	}
	return out
}()

// appendSnapshot appends the canonical bytes of s.Wire() without building
// it: the kernel members are written directly and merged, in key order,
// with the state members, each encoded alone. ok is false outside the fast
// case — a kernel member or version that is not canonical text, a state
// member whose key or value canonCheck refuses (at depth 1, in the wire
// map), or a state object whose kind would make its own encoding sort
// arrays — and the caller then encodes s.Wire(), whose bytes or error are
// the contract. stateChecked says the caller already ran canonCheck's
// checks on the state (canonCopy made it).
// snapshotCap is a capacity for s's canonical bytes, so that
// appendSnapshot rarely grows its buffer: the kernel's members and the
// version envelope in full, with room for a small state. The buffer still
// grows for a larger state.
func snapshotCap(s *Snapshot) int {
	v := &s.Versions
	n := 640 + len(s.AggregateID) + len(v.Workflow) + len(v.StateSchema) + len(v.EventSchema) + len(v.GraphSchema) +
		len(v.RuleSet) + len(v.Dataflow) + len(v.Canonicalization) + len(v.Tool) + len(v.Model) + len(v.Oracle) +
		len(v.Gate) + len(v.Resolver) + len(v.CompositionProfile)
	if s.LastEventID != nil {
		n += len(*s.LastEventID)
	}
	return n
}

func appendSnapshot(b []byte, s *Snapshot, stateChecked bool, cv *CheckedVersions) ([]byte, bool) {
	if cjson.CheckString(s.AggregateID, "") != nil || cjson.CheckString(s.Phase, "") != nil {
		return b, false
	}
	// Version labels checked once (cv) pass the string rule.
	if !cv.is(&s.Versions) {
		for _, str := range [...]string{s.Versions.Workflow, s.Versions.StateSchema,
			s.Versions.EventSchema, s.Versions.GraphSchema, s.Versions.RuleSet, s.Versions.Dataflow,
			s.Versions.Canonicalization, s.Versions.Tool, s.Versions.Model, s.Versions.Oracle, s.Versions.Gate,
			s.Versions.Resolver, s.Versions.CompositionProfile} {
			if cjson.CheckString(str, "") != nil {
				return b, false
			}
		}
	}
	if s.LastEventID != nil && cjson.CheckString(*s.LastEventID, "") != nil {
		return b, false
	}
	var kb [8]string
	keys := kb[:0]
	for k, v := range s.State { //flrh:orderfree the keys are sorted below; every failure gives the same verdict
		if slices.Contains(kernelSnapshotMembers, k) {
			continue // Wire lets the kernel's member win
		}
		if !stateChecked && (!asciiKey(k) || !canonCheck(v, 1, false)) {
			return b, false
		}
		if !rootSetFreeValue(v) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	first, next := true, 0
	state := func(k string) bool {
		b = appendMember(b, first, k)
		first = false
		// Scalars, already checked, are written here; containers are
		// encoded alone (canonCheck made sure they encode as members).
		switch v := s.State[k].(type) {
		case nil:
			b = append(b, "null"...)
		case bool:
			if v {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		case int64:
			b = cjson.AppendInt(b, v)
		case int:
			b = cjson.AppendInt(b, int64(v))
		case string:
			b = cjson.AppendString(b, v)
		default:
			// Encoded in place: AppendMarshal writes what Encode returns.
			var err error
			if b, err = cjson.AppendMarshal(b, v); err != nil {
				return false
			}
		}
		return true
	}
	for i, km := range snapshotMembersSorted {
		for ; next < len(keys) && keys[next] < km; next++ {
			if !state(keys[next]) {
				return b, false
			}
		}
		if first {
			b = appendMember(b, true, km)
		} else {
			b = append(b, snapshotMembersKeyed[i]...)
		}
		first = false
		switch km {
		case "aggregate_id":
			b = cjson.AppendString(b, s.AggregateID)
		case "kind":
			b = append(b, `"`+KindSnapshot+`"`...)
		case "last_event_id":
			if s.LastEventID == nil {
				b = append(b, "null"...)
			} else {
				b = cjson.AppendString(b, *s.LastEventID)
			}
		case "last_logical_time":
			if s.LastLogicalTime == nil {
				b = append(b, "null"...)
			} else {
				b = cjson.AppendInt(b, *s.LastLogicalTime)
			}
		case "phase":
			b = cjson.AppendString(b, s.Phase)
		case "revision":
			b = cjson.AppendInt(b, s.Revision)
		case "schema_version":
			b = append(b, `"`+SnapshotSchemaVersion+`"`...)
		case "versions":
			b = appendVersions(b, &s.Versions, cv)
		}
	}
	for ; next < len(keys); next++ {
		if !state(keys[next]) {
			return b, false
		}
	}
	return append(b, '}'), true
}

// canonRoom lends a step's facts and proposals the buffer their canonical
// bytes are written in. Those bytes are sorted, digested into the
// transition digest and dropped before the step returns (nothing the step
// returns holds them: a fact or proposal is its typed value, the next
// snapshot's bytes have their own buffer), so one pooled buffer serves
// them all, where each was an allocation of its own. take hands out
// disjoint pieces of it, each capped at its length, whose bytes the
// caller writes in full: what an earlier step left there is never read.
type canonRoom struct {
	b []byte
}

// canonRoomSize is a room's buffer: a usual step's fact (some 400 bytes)
// and proposal (some 900) fit several times over; a piece that does not
// fit is allocated.
const canonRoomSize = 4096

var canonRooms = sync.Pool{New: func() any { return &canonRoom{b: make([]byte, 0, canonRoomSize)} }}

// take returns n bytes of r's buffer, or fresh ones when they do not fit
// or r is nil. Their contents are whatever was there: the caller writes
// every one.
func (r *canonRoom) take(n int) []byte {
	if r == nil || cap(r.b)-len(r.b) < n {
		return make([]byte, n)
	}
	at := len(r.b)
	r.b = r.b[:at+n]
	return r.b[at : at+n : at+n]
}

// release gives r back to canonRooms, emptied; the pieces it lent must be
// dead.
func (r *canonRoom) release() {
	r.b = r.b[:0]
	canonRooms.Put(r)
}
