package control

import (
	"bytes"
	"slices"

	"flrh.dev/flrh/cjson"
)

// recheckByRecord is Recheck as it was first written: it builds the
// record Step would write, encodes it and compares the bytes. Recheck is
// held to it.
func (m *Machine) recheckByRecord(c Configuration, in StepInputs, stored []byte, digest string, buf []byte) (Configuration, bool, []byte) {
	rec, next, accepted, built := m.acceptedRecord(c, in)
	if !built || !accepted {
		return Configuration{}, false, buf
	}
	buf = appendRecord(buf[:0], &rec)
	if !bytes.Equal(buf, stored) {
		return Configuration{}, false, buf
	}
	next.Head = digest
	return next, true, buf
}

// acceptedRecord is the record and the next configuration (Head left out)
// of an ordinary transition from c on the event in names, had Step
// accepted it, and whether Step does accept it. built is false when no
// such record can be written (an undeclared event, no transition from
// c's state on it, a global interrupt). The record is written even for a
// step Step refuses, as a forger would write it, so that a test can hold
// Recheck to refusing it.
func (m *Machine) acceptedRecord(c Configuration, in StepInputs) (rec Record, next Configuration, accepted, built bool) {
	if c.State == "" && c.Seq == 0 && len(c.Pending) == 0 {
		c.State = m.initial
	}
	if c.Pending == nil {
		c.Pending = []string{}
	}
	c.Context = in.GuardInputs
	accepted = true
	if _, detail := m.checkConfiguration(c); detail != "" {
		accepted = false
	}
	// The event schema: a declared type, a role and a capability of the
	// schema's forms, a protocol identifier. Every authority pair of the
	// table was checked against those forms when it loaded, so an
	// authorized pair has them.
	if !m.Authorized(in.Event, in.ActorRole, in.Capability) || !cjson.ValidID(in.EventID) {
		accepted = false
	}
	if m.Final(c.State) {
		accepted = false
	}
	if _, ok := m.interruptOf[in.Event]; ok {
		return Record{}, Configuration{}, false, false
	}
	ti, ok := m.byEdge[edge{c.State, in.Event}]
	if !ok {
		return Record{}, Configuration{}, false, false
	}
	t := m.transitions[ti]
	next = Configuration{Table: m.digest, State: t.To, Pending: slices.Clone(c.Pending), Seq: c.Seq + 1}
	if i, honors := m.honoredBy[in.Event]; honors {
		irq := m.interrupts[i].Event
		if !slices.Contains(c.Pending, irq) {
			accepted = false
		}
		next.Pending = slices.DeleteFunc(next.Pending, func(p string) bool { return p == irq })
	}
	if in.Event == m.resumeEvent && len(c.Pending) > 0 {
		accepted = false
	}
	rec = Record{
		Format: RecordFormat, Table: m.digest, Seq: next.Seq, Prev: c.Head, Accepted: true,
		EventID: in.EventID, Event: in.Event, ActorRole: in.ActorRole, Capability: in.Capability,
		From: c.State, To: next.State, Transition: t.ID, EvidenceRequired: t.Evidence,
		Pending: next.Pending, Effects: t.Emit,
	}
	// Step records the guard's fields, each with its context value, and
	// refuses the event if one is false. The stored record's own guard
	// inputs are usually exactly those, and are used as they are.
	if t.Guard != "" {
		g := m.guards[t.Guard]
		gi := in.GuardInputs
		for _, f := range g.AllTrue {
			if !gi[f] {
				accepted = false
			}
		}
		if !accepted || !sameKeys(gi, g.AllTrue) {
			gi = make(map[string]bool, len(g.AllTrue))
			for _, f := range g.AllTrue {
				gi[f] = true
			}
		}
		rec.Guard, rec.GuardInputs = t.Guard, gi
	}
	// Step records the required evidence the event carries as digests
	// (with strict evidence, it refuses the event if one is missing). The
	// stored record's own evidence is usually exactly that.
	ev, valid := in.Evidence, 0
	for _, name := range t.Evidence {
		if d, ok := ev[name]; ok && cjson.ValidDigest(d) {
			valid++
		} else if m.strictEvidence {
			accepted = false
		}
	}
	if valid != len(ev) || !sameKeys(ev, t.Evidence) {
		ev = nil
		for _, name := range t.Evidence {
			if d, ok := in.Evidence[name]; ok && cjson.ValidDigest(d) {
				if ev == nil {
					ev = map[string]string{}
				}
				ev[name] = d
			}
		}
	}
	rec.Evidence = ev
	return rec, next, accepted, true
}

// sameKeys reports whether the keys of m are exactly the names.
func sameKeys[V any](m map[string]V, names []string) bool {
	n := 0
	for _, name := range names {
		if _, ok := m[name]; ok {
			n++
		}
	}
	if n != len(m) {
		return false
	}
	for k := range m { //flrh:orderfree a conjunction: every key must be named
		if !slices.Contains(names, k) {
			return false
		}
	}
	return true
}
