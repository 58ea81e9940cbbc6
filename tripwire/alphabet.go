package tripwire

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/control"
)

type alphaSets struct {
	eventKinds, inputKinds, inboxKinds, stages, outbox, attempts, receipts, approvals map[string]bool
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func newAlphaSets(a Alphabet) alphaSets {
	return alphaSets{setOf(a.EventKinds), setOf(a.InputKinds), setOf(a.InboxKinds), setOf(a.Stages),
		setOf(a.OutboxStatuses), setOf(a.AttemptStatuses), setOf(a.ReceiptOutcomes), setOf(a.ApprovalStates)}
}

var reasons = setOf([]string{
	string(control.ReasonSchema), string(control.ReasonAuthority), string(control.ReasonTerminal),
	string(control.ReasonNoTransition), string(control.ReasonGuardFalse), string(control.ReasonNotPending),
	string(control.ReasonPending), string(control.ReasonEvidence), string(control.ReasonConfiguration),
})

// checkAlphabet: every symbol at the boundary is one the FSM table or the
// alphabet declares. Nothing unknown is ever read as a default.
func checkAlphabet(s *Set, b *Boundary, f *finder) {
	sym := func(where, what, v string, known bool) {
		if !known {
			f.trip(where, fmt.Sprintf("unknown %s %q", what, v), evidenceDigest(what, v))
		}
	}
	// symAt builds its pointer only when it trips: the common case costs a
	// map lookup.
	symAt := func(base string, i int, suffix, what, v string, known bool) {
		if !known {
			sym(ptr(base, i)+suffix, what, v, false)
		}
	}
	state := func(where, st string) {
		_, ok := s.m.State(st)
		sym(where, "state", st, ok)
	}
	conf := func(where string, c control.Configuration) {
		if !(c.State == "" && c.Seq == 0) {
			if _, ok := s.m.State(c.State); !ok {
				state(where+"/state", c.State)
			}
		}
		for i, p := range c.Pending {
			symAt(where+"/pending_interrupts", i, "", "interrupt", p, s.interrupt[p])
		}
	}
	conf("/before", b.Before)
	if b.Phase == PhaseCommit {
		conf("/after", b.After)
		if b.Outcome != "" || s.m.Final(b.After.State) {
			want := s.m.Outcome(b.After)
			sym("/outcome", "outcome", b.Outcome, slices.Contains(control.OutcomeCategories, b.Outcome))
			if b.Outcome != want {
				f.trip("/outcome", fmt.Sprintf("the tick records outcome %q; the FSM's state %s means %q", b.Outcome, b.After.State, want),
					evidenceDigest("outcome", b.Outcome), evidenceDigest("state", b.After.State))
			}
		}
	}
	for i, e := range b.Events {
		symAt("/events", i, "/kind", "event kind", e.Kind, s.alphaSets.eventKinds[e.Kind])
		switch e.Kind {
		case EventControl, EventRejected:
			if e.Record == nil {
				f.trip(ptr("/events", i)+"/record", "a control event without its record", evidenceDigest("event", e.Digest))
				continue
			}
			r := e.Record
			symAt("/events", i, "/record/format", "record format", r.Format, r.Format == control.RecordFormat)
			symAt("/events", i, "/record/event", "control event", r.Event, s.events[r.Event])
			_, fromOK := s.m.State(r.From)
			symAt("/events", i, "/record/from", "state", r.From, fromOK)
			_, toOK := s.m.State(r.To)
			symAt("/events", i, "/record/to", "state", r.To, toOK)
			if r.Reason != "" || !r.Accepted {
				symAt("/events", i, "/record/reason", "refusal reason", string(r.Reason), reasons[string(r.Reason)])
			}
		case EventAccepted:
			if e.Input == nil {
				f.trip(ptr("/events", i)+"/input", "an accepted event without its input", evidenceDigest("event", e.Digest))
				continue
			}
			symAt("/events", i, "/input/kind", "input kind", e.Input.Kind, s.alphaSets.inputKinds[e.Input.Kind])
		}
	}
	for i, in := range b.Consumed {
		symAt("/consumed", i, "/kind", "inbox kind", in.Kind, s.alphaSets.inboxKinds[in.Kind])
	}
	for i, in := range b.Waiting {
		symAt("/waiting", i, "/kind", "inbox kind", in.Kind, s.alphaSets.inboxKinds[in.Kind])
	}
	for i, e := range b.OpenBefore {
		symAt("/open_before", i, "/stage", "effect stage", e.Stage, s.alphaSets.stages[e.Stage])
	}
	for i, e := range b.OpenAfter {
		symAt("/open_after", i, "/stage", "effect stage", e.Stage, s.alphaSets.stages[e.Stage])
	}
	for i, r := range b.Results {
		symAt("/results", i, "/status", "attempt status", r.Status, s.alphaSets.attempts[r.Status])
		symAt("/results", i, "/outbox", "outbox status", r.Outbox, s.alphaSets.outbox[r.Outbox])
	}
	for i, r := range b.Receipts {
		symAt("/receipts", i, "/outcome", "receipt outcome", r.Outcome, s.alphaSets.receipts[r.Outcome])
	}
	for i, a := range b.Approvals {
		if a.GrantStatus != "" {
			symAt("/approvals", i, "/grant_status", "approval status", a.GrantStatus, s.alphaSets.approvals[a.GrantStatus])
		}
	}
	if l := b.Ledger; l != nil {
		for i, in := range l.Intents {
			symAt("/ledger/intents", i, "/outbox", "outbox status", in.Outbox, s.alphaSets.outbox[in.Outbox])
		}
		for i, a := range l.Approvals {
			symAt("/ledger/approvals", i, "/status", "approval status", a.Status, s.alphaSets.approvals[a.Status])
		}
	}
}
