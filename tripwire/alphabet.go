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
	state := func(where, st string) {
		_, ok := s.m.State(st)
		sym(where, "state", st, ok)
	}
	conf := func(where string, c control.Configuration) {
		if !(c.State == "" && c.Seq == 0) {
			state(where+"/state", c.State)
		}
		for i, p := range c.Pending {
			sym(ptr(where+"/pending_interrupts", i), "interrupt", p, s.interrupt[p])
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
		where := ptr("/events", i)
		sym(where+"/kind", "event kind", e.Kind, s.alphaSets.eventKinds[e.Kind])
		switch e.Kind {
		case EventControl, EventRejected:
			if e.Record == nil {
				f.trip(where+"/record", "a control event without its record", evidenceDigest("event", e.Digest))
				continue
			}
			r := e.Record
			sym(where+"/record/format", "record format", r.Format, r.Format == control.RecordFormat)
			sym(where+"/record/event", "control event", r.Event, s.events[r.Event])
			state(where+"/record/from", r.From)
			state(where+"/record/to", r.To)
			if r.Reason != "" || !r.Accepted {
				sym(where+"/record/reason", "refusal reason", string(r.Reason), reasons[string(r.Reason)])
			}
		case EventAccepted:
			if e.Input == nil {
				f.trip(where+"/input", "an accepted event without its input", evidenceDigest("event", e.Digest))
				continue
			}
			sym(where+"/input/kind", "input kind", e.Input.Kind, s.alphaSets.inputKinds[e.Input.Kind])
		}
	}
	for i, in := range b.Consumed {
		sym(ptr("/consumed", i)+"/kind", "inbox kind", in.Kind, s.alphaSets.inboxKinds[in.Kind])
	}
	for i, in := range b.Waiting {
		sym(ptr("/waiting", i)+"/kind", "inbox kind", in.Kind, s.alphaSets.inboxKinds[in.Kind])
	}
	for i, e := range b.OpenBefore {
		sym(ptr("/open_before", i)+"/stage", "effect stage", e.Stage, s.alphaSets.stages[e.Stage])
	}
	for i, e := range b.OpenAfter {
		sym(ptr("/open_after", i)+"/stage", "effect stage", e.Stage, s.alphaSets.stages[e.Stage])
	}
	for i, r := range b.Results {
		sym(ptr("/results", i)+"/status", "attempt status", r.Status, s.alphaSets.attempts[r.Status])
		sym(ptr("/results", i)+"/outbox", "outbox status", r.Outbox, s.alphaSets.outbox[r.Outbox])
	}
	for i, r := range b.Receipts {
		sym(ptr("/receipts", i)+"/outcome", "receipt outcome", r.Outcome, s.alphaSets.receipts[r.Outcome])
	}
	for i, a := range b.Approvals {
		if a.GrantStatus != "" {
			sym(ptr("/approvals", i)+"/grant_status", "approval status", a.GrantStatus, s.alphaSets.approvals[a.GrantStatus])
		}
	}
	if l := b.Ledger; l != nil {
		for i, in := range l.Intents {
			sym(ptr("/ledger/intents", i)+"/outbox", "outbox status", in.Outbox, s.alphaSets.outbox[in.Outbox])
		}
		for i, a := range l.Approvals {
			sym(ptr("/ledger/approvals", i)+"/status", "approval status", a.Status, s.alphaSets.approvals[a.Status])
		}
	}
}
