package control

import (
	"slices"
	"strconv"

	"flrh.dev/flrh/cjson"
)

// StepInputs is what a stored control record says its step met: the
// event's type, actor, capability and id, the evidence digests it carried,
// and the guard inputs it was judged on.
type StepInputs struct {
	Event       string
	ActorRole   string
	Capability  string
	EventID     string
	Evidence    map[string]string
	GuardInputs map[string]bool
}

// Recheck is Step for a verifier that holds the record a step wrote. It
// reports whether stored is, byte for byte, the canonical record of an
// ordinary transition Step accepts from c (its Context replaced by
// in.GuardInputs) on the event in names, and then the configuration Step
// leads to. digest must be the sha256 digest of stored ("sha256:" and
// lowercase hex): a record equal to the recomputed one has that digest, so
// it is the next configuration's Head without hashing the record again.
//
// Recheck makes the decisions Step makes, without building the effects,
// the rejection or the copies Step returns. It answers false for whatever
// it does not vouch for (a refused step, a global interrupt, a record that
// differs anywhere); a verifier then steps the record with Step, whose
// result and wording stand. buf is scratch space kept for callers of an
// earlier form of Recheck, which wrote the record there; it is returned
// as it came.
func (m *Machine) Recheck(c Configuration, in StepInputs, stored []byte, digest string, buf []byte) (Configuration, bool, []byte) {
	next, ok := m.recheck(c, in, stored)
	if !ok {
		return Configuration{}, false, buf
	}
	next.Head = digest
	return next, true, buf
}

// recheck is Recheck without the head. It reads stored in place against
// the record Step writes, whose parts that depend only on the transition
// were written when the table loaded (recheckForm), and makes Step's
// decisions in the order cheapest first: every one of them only says no,
// so their order does not change the answer.
func (m *Machine) recheck(c Configuration, in StepInputs, stored []byte) (Configuration, bool) {
	c, ti, ok := m.recheckFrom(c, in.Event)
	if !ok {
		return Configuration{}, false
	}
	t, f := &m.transitions[ti], &m.forms[ti]
	// The guard inputs are the configuration's context: every field must
	// be declared, and the guard's own fields true. The guard's fields are
	// declared and distinct, so when the inputs hold no more fields than
	// the guard reads, they are exactly those.
	gi, known := in.GuardInputs, 0
	if t.Guard != "" {
		for _, field := range f.allTrue {
			if !gi[field] {
				return Configuration{}, false
			}
		}
		known = len(f.allTrue)
	}
	if len(gi) > known {
		for k := range gi { //flrh:orderfree a conjunction: every field must be declared
			if !m.contextSet[k] {
				return Configuration{}, false
			}
		}
	}
	// The event schema and authority.
	if !cjson.ValidID(in.EventID) || !m.Authorized(in.Event, in.ActorRole, in.Capability) {
		return Configuration{}, false
	}
	next, ok := m.recheckNext(c, in.Event, f)
	if !ok {
		return Configuration{}, false
	}

	// The record, read in place. Every string it holds is a name of the
	// table, an identifier or a digest validated above, none of which
	// cjson escapes: each is its bytes between quotes.
	x := recordReader{b: stored, ok: true}
	x.lit(`{"accepted":true,"actor_role":`)
	x.str(in.ActorRole)
	x.lit(`,"capability":`)
	x.str(in.Capability)
	x.lit(f.mid)
	x.str(in.EventID)
	// Step records the required evidence the event carries as digests,
	// names in byte order; with strict evidence it refuses the event if
	// one is missing.
	open := false
	for i, name := range f.evidence {
		d, ok := in.Evidence[name]
		if !ok || !cjson.ValidDigest(d) {
			if m.strictEvidence {
				return Configuration{}, false
			}
			continue
		}
		if !open {
			x.lit(`,"evidence":{`)
			open = true
		} else {
			x.lit(",")
		}
		x.lit(f.evidenceKeys[i])
		x.str(d)
	}
	if open {
		x.lit("}")
	}
	if !m.recheckTail(&x, c, next, f) {
		return Configuration{}, false
	}
	return next, true
}

// recheckFrom makes the decisions recheck makes of the configuration c
// and the event's type alone: the transition the event takes from c's
// state (ti), not a global interrupt, and c as checkConfiguration judges
// it. It returns c as Step reads it (the initial state for an empty
// configuration, an empty pending list for nil).
func (m *Machine) recheckFrom(c Configuration, event string) (Configuration, int, bool) {
	if c.State == "" && c.Seq == 0 && len(c.Pending) == 0 {
		c.State = m.initial
	}
	if c.Pending == nil {
		c.Pending = []string{}
	}
	ti, ok := m.byEdge[edge{c.State, event}]
	if !ok {
		return Configuration{}, 0, false
	}
	if m.forms[ti].interrupt {
		return Configuration{}, 0, false // Step handles a global interrupt itself
	}
	// The configuration, as checkConfiguration judges it. Its state is
	// declared and not final: a transition leaves it, and the table's
	// transitions leave declared, non-final states only.
	if c.Table != "" && c.Table != m.digest || c.Seq < 0 || c.Head != "" && !cjson.ValidDigest(c.Head) {
		return Configuration{}, 0, false
	}
	for i, p := range c.Pending {
		if _, ok := m.interruptOf[p]; !ok || i > 0 && c.Pending[i-1] >= p {
			return Configuration{}, 0, false
		}
	}
	if len(c.Pending) > 0 && !m.deferredIn[c.State] {
		return Configuration{}, 0, false
	}
	return c, ti, true
}

// recheckNext is the configuration Step leads to from c (as recheckFrom
// returns it) on the event, by the transition whose form is f, without
// its head; false where Step refuses the event for the pending
// interrupts.
func (m *Machine) recheckNext(c Configuration, event string, f *recheckForm) (Configuration, bool) {
	if event == m.resumeEvent && len(c.Pending) > 0 {
		return Configuration{}, false
	}
	next := Configuration{Table: m.digest, State: f.to, Pending: slices.Clone(c.Pending), Seq: c.Seq + 1}
	if f.honors != "" {
		if !slices.Contains(c.Pending, f.honors) {
			return Configuration{}, false
		}
		next.Pending = slices.DeleteFunc(next.Pending, func(p string) bool { return p == f.honors })
	}
	return next, true
}

// recheckTail reads the rest of the record in x, from the evidence
// required to its end: what the transition's form f, the configuration c
// the step left and next say it holds, and nothing after.
func (m *Machine) recheckTail(x *recordReader, c, next Configuration, f *recheckForm) bool {
	x.lit(f.after)
	if next.Pending == nil {
		x.lit("null")
	} else {
		x.lit("[")
		for i, p := range next.Pending {
			if i > 0 {
				x.lit(",")
			}
			x.str(p)
		}
		x.lit("]")
	}
	if c.Head != "" {
		x.lit(`,"prev":`)
		x.str(c.Head)
	}
	x.lit(`,"seq":`)
	var seq [20]byte
	x.lit(string(strconv.AppendInt(seq[:0], next.Seq, 10)))
	x.lit(f.end)
	return x.ok && x.i == len(x.b)
}

// RecheckStored is Recheck for a verifier that has not read the step's
// inputs from stored: it reads the event, actor role, capability and
// event id out of the record while it compares it, and returns the first
// three with the configuration. It vouches for a record only where Recheck, given
// the inputs any JSON reader reads from stored, vouches for it and leads
// to the same configuration: stored is then exactly the record Recheck
// compares with, every string in it plain (printable ASCII with nothing
// to escape). It answers false for anything else, Recheck's refusals
// among it, and for records it does not read: a name the table does not
// declare, a string cjson would escape. The caller then reads the record
// and asks Recheck or Step, whose answers stand.
//
// The names returned are the table's own strings, and nothing is
// allocated. The event id, the evidence and the guard inputs are not
// returned (StepInputs leaves them empty): in a record RecheckStored
// vouches for the event id is a valid identifier, the evidence is what
// the record shows, the guard inputs the guard's own fields, true.
func (m *Machine) RecheckStored(c Configuration, stored []byte, digest string) (Configuration, StepInputs, bool) {
	next, in, ok := m.recheckStored(c, stored)
	if !ok {
		return Configuration{}, StepInputs{}, false
	}
	next.Head = digest
	return next, in, true
}

func (m *Machine) recheckStored(c Configuration, stored []byte) (Configuration, StepInputs, bool) {
	var in StepInputs
	x := recordReader{b: stored, ok: true}
	x.lit(`{"accepted":true,"actor_role":`)
	role := x.plain()
	x.lit(`,"capability":`)
	capability := x.plain()
	// The effects depend on the transition, which the event names: they
	// are passed over to find the event, then read with the rest of the
	// transition's form from mid.
	mid := x.i
	x.lit(`,"effects":`)
	x.list()
	x.lit(`,"event":`)
	in.Event = x.name(m)
	if !x.ok {
		return Configuration{}, StepInputs{}, false
	}
	c, ti, ok := m.recheckFrom(c, in.Event)
	if !ok {
		return Configuration{}, StepInputs{}, false
	}
	f := &m.forms[ti]
	// The actor role and capability are a pair the event's authority
	// lists (Authorized), found by their bytes among the few it lists,
	// which gives the table's own names: where each name was looked up
	// in the table's names, and the pair in the event's authority, by
	// hashing them.
	pair, ok := f.authorized(role, capability)
	if !ok {
		return Configuration{}, StepInputs{}, false
	}
	in.ActorRole, in.Capability = pair.Role, pair.Capability
	x.i = mid
	x.lit(f.mid)
	id := x.plain()
	if !x.ok {
		return Configuration{}, StepInputs{}, false
	}
	// The guard inputs a record of this transition shows are the guard's
	// own fields, each true (f.after, read below): they satisfy the guard,
	// and are no more fields than it reads. The event id is checked where
	// it stands (the string does not outlive the call: one of up to 32
	// bytes is not made on the heap).
	if !cjson.ValidID(string(id)) {
		return Configuration{}, StepInputs{}, false
	}
	next, ok := m.recheckNext(c, in.Event, f)
	if !ok {
		return Configuration{}, StepInputs{}, false
	}
	// The evidence the record shows: names of the transition's, in byte
	// order, each a valid digest; with strict evidence every one of them.
	// Step writes no evidence member when there is none to show.
	shown := 0
	if x.has(`,"evidence":{`) {
		x.i += len(`,"evidence":{`)
		for _, key := range f.evidenceKeys {
			sep := ""
			if shown > 0 {
				sep = ","
			}
			if x.has(sep) && x.hasAfter(len(sep), key) {
				x.i += len(sep) + len(key)
				if !cjson.ValidDigestBytes(x.plain()) {
					return Configuration{}, StepInputs{}, false
				}
				shown++
			} else if m.strictEvidence {
				return Configuration{}, StepInputs{}, false
			}
		}
		if shown == 0 {
			return Configuration{}, StepInputs{}, false
		}
		x.lit("}")
	}
	if shown == 0 && m.strictEvidence && len(f.evidence) > 0 {
		return Configuration{}, StepInputs{}, false
	}
	if !m.recheckTail(&x, c, next, f) {
		return Configuration{}, StepInputs{}, false
	}
	return next, in, true
}

// recordReader compares a stored record with the pieces of the expected
// one, in order.
type recordReader struct {
	b  []byte
	i  int
	ok bool
}

// lit reads the bytes s.
func (x *recordReader) lit(s string) {
	if x.ok && len(x.b)-x.i >= len(s) && string(x.b[x.i:x.i+len(s)]) == s {
		x.i += len(s)
		return
	}
	x.ok = false
}

// str reads s as cjson writes a string that needs no escape.
func (x *recordReader) str(s string) {
	if x.ok && len(x.b)-x.i >= len(s)+2 && x.b[x.i] == '"' && string(x.b[x.i+1:x.i+1+len(s)]) == s && x.b[x.i+1+len(s)] == '"' {
		x.i += len(s) + 2
		return
	}
	x.ok = false
}

// has reports whether the bytes s are next.
func (x *recordReader) has(s string) bool { return x.hasAfter(0, s) }

// hasAfter reports whether the bytes s are next but n.
func (x *recordReader) hasAfter(n int, s string) bool {
	i := x.i + n
	return x.ok && len(x.b)-i >= len(s) && string(x.b[i:i+len(s)]) == s
}

// plain reads a string that cjson writes as its bytes between quotes
// (printable ASCII, no quote or backslash) and returns its bytes.
func (x *recordReader) plain() []byte {
	if !x.ok || x.i >= len(x.b) || x.b[x.i] != '"' {
		x.ok = false
		return nil
	}
	if j := cjson.PlainEnd(x.b, x.i+1); j < len(x.b) && x.b[j] == '"' {
		v := x.b[x.i+1 : j]
		x.i = j + 1
		return v
	}
	x.ok = false
	return nil
}

// name reads a plain string naming something the table declares, and
// returns the table's own copy of the name.
func (x *recordReader) name(m *Machine) string {
	b := x.plain()
	if !x.ok {
		return ""
	}
	s, ok := m.names[string(b)]
	x.ok = ok
	return s
}

// list passes over null or an array of plain strings.
func (x *recordReader) list() {
	if x.has("null") {
		x.i += len("null")
		return
	}
	x.lit("[")
	if x.has("]") {
		x.i++
		return
	}
	for x.ok {
		x.plain()
		if x.has("]") {
			x.i++
			return
		}
		x.lit(",")
	}
}

// recheckForm is what the record of an accepted step on one transition
// holds whatever the step: its encoded pieces and the names Recheck reads
// by, written once when the table loads.
type recheckForm struct {
	interrupt bool   // the transition's event is a global interrupt
	to        string // the state the transition leads to
	honors    string // the pending interrupt its event honors, if any
	allTrue   []string
	// mid runs from the effects to the event id's key; evidenceKeys are
	// the evidence names, sorted, each quoted with its colon; after runs
	// from evidence_required to the pending interrupts' key, end from the
	// table to the record's close.
	mid          string
	evidence     []string
	evidenceKeys []string
	after        string
	end          string
	// authority is the (role, capability) pairs the transition's event
	// lists, as declared (each name non-empty, as the table's patterns
	// require).
	authority []AuthorityPair
}

// authorized returns the pair of f's authority whose role and capability
// are the bytes role and capability (ok false: none is).
func (f *recheckForm) authorized(role, capability []byte) (AuthorityPair, bool) {
	for _, p := range f.authority {
		if p.Role == string(role) && p.Capability == string(capability) {
			return p, true
		}
	}
	return AuthorityPair{}, false
}

// recheckForms writes the form of every transition, once the table's
// digest is known. The pieces are written as appendRecord writes them.
func (m *Machine) recheckForms() []recheckForm {
	forms := make([]recheckForm, len(m.transitions))
	for i, t := range m.transitions {
		f := &forms[i]
		_, f.interrupt = m.interruptOf[t.Event]
		f.to = t.To
		if k, ok := m.eventIdx[t.Event]; ok {
			f.authority = m.events[k].Authority
		}
		if j, ok := m.honoredBy[t.Event]; ok {
			f.honors = m.interrupts[j].Event
		}
		var b []byte
		b = append(b, `,"effects":`...)
		b = appendList(b, t.Emit)
		b = append(b, `,"event":`...)
		b = cjson.AppendString(b, t.Event)
		b = append(b, `,"event_id":`...)
		f.mid = string(b)
		f.evidence = slices.Sorted(slices.Values(t.Evidence))
		for _, name := range f.evidence {
			f.evidenceKeys = append(f.evidenceKeys, string(append(cjson.AppendString(nil, name), ':')))
		}
		b = b[:0]
		if len(t.Evidence) > 0 {
			b = append(b, `,"evidence_required":`...)
			b = appendList(b, t.Evidence)
		}
		b = append(b, `,"format":`...)
		b = cjson.AppendString(b, RecordFormat)
		b = append(b, `,"from":`...)
		b = cjson.AppendString(b, t.From)
		if t.Guard != "" {
			f.allTrue = m.guards[t.Guard].AllTrue
			b = append(b, `,"guard":`...)
			b = cjson.AppendString(b, t.Guard)
			if len(f.allTrue) > 0 {
				b = append(b, `,"guard_inputs":{`...)
				for j, field := range slices.Sorted(slices.Values(f.allTrue)) {
					if j > 0 {
						b = append(b, ',')
					}
					b = cjson.AppendString(b, field)
					b = append(b, ":true"...)
				}
				b = append(b, '}')
			}
		}
		b = append(b, `,"pending_interrupts":`...)
		f.after = string(b)
		b = b[:0]
		b = append(b, `,"table":`...)
		b = cjson.AppendString(b, m.digest)
		b = append(b, `,"to":`...)
		b = cjson.AppendString(b, t.To)
		if t.ID != "" {
			b = append(b, `,"transition":`...)
			b = cjson.AppendString(b, t.ID)
		}
		f.end = string(append(b, '}'))
	}
	return forms
}

// appendList appends a list of strings as appendRecord writes it: null
// when nil.
func appendList(b []byte, vs []string) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = cjson.AppendString(b, v)
	}
	return append(b, ']')
}
