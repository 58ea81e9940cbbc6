package tripwire

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/control"
)

// checkConservation: every accepted input yields exactly one turn — its
// EVENT_ACCEPTED record, then exactly one decision — in the same tick; the
// accepted sequence continues the cursor without gaps; and every inbox
// input the tick consumed was accepted exactly once, and nothing else was.
func checkConservation(s *Set, b *Boundary, f *finder) {
	if b.Phase != PhaseCommit {
		if !s.m.Final(b.Before.State) {
			checkClosedAwaiting(b, b.OpenBefore, b.AwaitingBefore, "/open_before", nil, f)
		}
		return
	}
	const (
		idle     = iota // no input in flight
		accepted        // an input was accepted, its EVENT_ACCEPTED is due
		deciding        // EVENT_ACCEPTED seen, its decision is due
	)
	phase, cursor, open := idle, b.CursorBefore, -1
	var inputs []int
	for i, e := range b.Events {
		where := at{"/events", i}
		switch {
		case e.Kind == EventAccepted && e.Input != nil:
			if phase != idle {
				f.trip(ptr("/events", open), fmt.Sprintf("input at event %d got no decision before the next input", open), evidenceDigest("input", b.Events[open].Input.Digest))
			}
			if e.Input.Seq != cursor+1 {
				f.tripAt(where, "/input/seq", fmt.Sprintf("input accepted as number %d after %d", e.Input.Seq, cursor), evidenceDigest("input", e.Input.Digest))
			}
			cursor = e.Input.Seq
			phase, open = accepted, i
			inputs = append(inputs, i)
		case e.Kind == EventControl && e.Record != nil && e.Record.Accepted:
			ev := e.Record.Event
			switch {
			case ev == "EVENT_ACCEPTED":
				if phase != accepted {
					f.tripAt(where, "", "EVENT_ACCEPTED without an accepted input before it", e.Digest)
				}
				phase = deciding
			case slices.Contains(s.decisions, ev):
				if phase != deciding {
					f.tripAt(where, "", fmt.Sprintf("decision %s without a turn of its own: no input is waiting for one", ev), e.Digest)
				}
				phase = idle
			case phase != idle && !s.interrupt[ev]:
				f.tripAt(where, "", fmt.Sprintf("%s interleaved into a turn before its decision", ev), e.Digest)
			}
		}
	}
	if phase != idle {
		f.trip(ptr("/events", open), fmt.Sprintf("input at event %d is committed without its decision", open), evidenceDigest("input", b.Events[open].Input.Digest))
	}
	if b.CursorAfter != cursor {
		f.trip("/cursor_after", fmt.Sprintf("the checkpoint counts %d accepted inputs; the tick's inputs lead to %d", b.CursorAfter, cursor),
			evidenceDigest("cursor_after", b.CursorAfter), evidenceDigest("cursor", cursor))
	}
	// Inbox inputs consumed and inputs accepted pair up one to one.
	used := make([]bool, len(inputs))
	for ci, in := range b.Consumed {
		if in.Kind != "input" {
			continue
		}
		found := false
		for k, i := range inputs {
			if !used[k] && b.Events[i].Input.Kind == "input" && b.Events[i].Input.Digest == in.Digest {
				used[k], found = true, true
				break
			}
		}
		if !found {
			f.trip(ptr("/consumed", ci), fmt.Sprintf("inbox input %s was consumed but never accepted: it vanished", in.ID), evidenceDigest("inbound", in.Digest))
		}
	}
	for k, i := range inputs {
		if in := b.Events[i].Input; in.Kind == "input" && !used[k] {
			f.trip(ptr("/events", i), fmt.Sprintf("input %d was accepted without consuming an inbox entry", in.Seq), evidenceDigest("input", in.Digest))
		}
	}
	// A receipt is accepted as an input at most once.
	seen := map[string]int{}
	for _, i := range inputs {
		in := b.Events[i].Input
		if in.Kind != "receipt" {
			continue
		}
		if j, dup := seen[in.Digest]; dup {
			f.trip(ptr("/events", i), fmt.Sprintf("receipt accepted twice (events %d and %d): one witness, two turns", j, i), evidenceDigest("receipt", in.Digest))
		}
		seen[in.Digest] = i
	}
	// Every receipt reaches the workflow while the run lives: committed
	// receipts are accepted in the tick or wait in the queue, none leave the
	// queue unaccepted, and nothing is accepted as a receipt that was never
	// committed. A run that ends takes no more turns; its receipts stay in
	// the ledger.
	live := !s.m.Final(b.After.State)
	waitsAfter := func(d string) bool {
		return slices.ContainsFunc(b.AwaitingAfter, func(a Awaiting) bool { return a.Digest == d })
	}
	waitedBefore := func(d string) bool {
		return slices.ContainsFunc(b.AwaitingBefore, func(a Awaiting) bool { return a.Digest == d })
	}
	committed := func(d string) bool {
		return slices.ContainsFunc(b.Receipts, func(r Receipt) bool { return r.Digest == d })
	}
	for i, r := range b.Receipts {
		if _, ok := seen[r.Digest]; live && !ok && !waitsAfter(r.Digest) {
			f.trip(ptr("/receipts", i), fmt.Sprintf("receipt for %s is committed but neither accepted nor waiting to be: the workflow will never see it", r.IntentID), r.Digest)
		}
	}
	for i, a := range b.AwaitingBefore {
		if _, ok := seen[a.Digest]; live && !ok && !waitsAfter(a.Digest) {
			f.trip(ptr("/awaiting_before", i), fmt.Sprintf("receipt for %s left the queue without being accepted", a.IntentID), evidenceDigest("receipt", a.Digest))
		}
	}
	for _, i := range inputs {
		if in := b.Events[i].Input; in.Kind == "receipt" && !waitedBefore(in.Digest) && !committed(in.Digest) {
			f.trip(ptr("/events", i), "a receipt was accepted that no tick committed", evidenceDigest("receipt", in.Digest))
		}
	}
	for i, a := range b.AwaitingAfter {
		if !waitedBefore(a.Digest) && !committed(a.Digest) {
			f.trip(ptr("/awaiting_after", i), fmt.Sprintf("receipt for %s waits to be accepted but no tick committed it", a.IntentID), evidenceDigest("receipt", a.Digest))
		}
	}
	if live {
		checkClosedAwaiting(b, b.OpenAfter, b.AwaitingAfter, "/open_after", seen, f)
	}
}

// checkClosedAwaiting: an effect the checkpoint still lists as closed has
// its receipt waiting to be accepted (or, in a commit, accepted by it).
func checkClosedAwaiting(b *Boundary, open []Effect, awaiting []Awaiting, where string, accepted map[string]int, f *finder) {
	for i, e := range open {
		if e.Stage != StageClosed || slices.ContainsFunc(awaiting, func(a Awaiting) bool { return a.IntentID == e.IntentID }) {
			continue
		}
		if slices.ContainsFunc(b.Receipts, func(r Receipt) bool {
			_, ok := accepted[r.Digest]
			return ok && r.IntentID == e.IntentID
		}) {
			continue
		}
		f.trip(ptr(where, i), fmt.Sprintf("effect %s is closed but its receipt waits for no acceptance: the workflow will never see it", e.IntentID), evidenceDigest("effect", e))
	}
}

// checkLivelock: the round's fingerprint must not return to one the window
// already holds — an oscillation the plateau detector, which compares each
// round only with the one before, cannot see — and a round whose
// fingerprint did not change may not claim gain.
func checkLivelock(s *Set, b *Boundary, f *finder) {
	p := b.Progress
	if p == nil {
		return
	}
	// The rule comes from the loop contract, which validates it; a rule
	// that did not pass that way is refused here rather than trusted.
	if r := p.Rule; r.WindowRounds < 1 || r.WindowRounds > control.MaxWindowRounds || r.Epsilon < 0 || r.Threshold < 0 ||
		r.Weights.ClosedObligations < 0 || r.Weights.ResolvedConflicts < 0 || r.Weights.VerifiedReceipts < 0 {
		f.trip("/progress/rule", fmt.Sprintf("the no-progress rule is not one a loop contract allows: %+v", r), evidenceDigest("rule", r))
		return
	}
	if _, _, err := p.Rule.Observe(p.Window, p.Round); err != nil {
		f.trip("/progress/round", fmt.Sprintf("the round cannot be judged: %v", err), evidenceDigest("round", p.Round))
		return
	}
	rounds := p.Window.Rounds
	n := len(rounds)
	fp := p.Round.Fingerprint
	// Skip the plateau this round continues (the plateau detector's
	// business); a match before a differing round is an oscillation.
	i := n - 1
	for i >= 0 && rounds[i].Fingerprint == fp {
		i--
	}
	for j := i - 1; j >= 0; j-- {
		if rounds[j].Fingerprint == fp {
			f.trip("/progress/round/fingerprint", fmt.Sprintf("the state returned to the fingerprint of %d rounds ago; the rounds between changed nothing that lasted", n-j),
				fp)
			return
		}
	}
	if n > 0 && rounds[n-1].Fingerprint == p.Round.Fingerprint {
		claimed, _ := p.Rule.Weighted(p.Round.Gain)
		if claimed > 0 && claimed >= p.Rule.Epsilon {
			f.trip("/progress/round/gain", fmt.Sprintf("the round claims weighted gain %d but its fingerprint did not change", claimed),
				p.Round.Fingerprint, evidenceDigest("gain", p.Round.Gain))
		}
	}
}

// checkWedge: a run that ends a pass live must rest in a state where
// something outside the runner can move it, must actually be owed that
// something, and must not leave behind an inbox entry it should have taken.
func checkWedge(s *Set, b *Boundary, f *finder) {
	c := b.Before
	if c.State == "" && c.Seq == 0 {
		c.State = s.m.InitialState()
	}
	if _, ok := s.m.State(c.State); !ok || s.m.Final(c.State) {
		return // unknown states are the alphabet wire's; final states wait for nothing
	}
	kinds, rests := s.waits[c.State]
	if !rests {
		f.trip("/before/state", fmt.Sprintf("the pass ended in %s, which only the runner itself moves: the run cannot move and waits for nothing", c.State),
			evidenceDigest("state", c.State), evidenceDigest("awaiting", awaitedEvents(s.m, c)))
		return
	}
	for i, w := range b.Waiting {
		if w.Kind == "cancel" || slices.Contains(kinds, w.Kind) {
			f.trip(ptr("/waiting", i), fmt.Sprintf("the run rests in %s while %s entry %s waits in its inbox: a lost wake", c.State, w.Kind, w.ID),
				evidenceDigest("inbound", w.Digest), evidenceDigest("state", c.State))
		}
	}
	if need, ok := owedIn[c.State]; ok {
		for _, e := range b.OpenBefore {
			if e.Stage == need {
				return
			}
		}
		f.trip("/open_before", fmt.Sprintf("the run waits in %s, but no effect is %s: it waits for something nobody was asked for", c.State, need),
			evidenceDigest("state", c.State), evidenceDigest("open", b.OpenBefore))
	}
}

// owedIn names, for the resting states that wait on a particular effect,
// the stage some open effect must be in for the wait to be real.
var owedIn = map[string]string{
	"WAIT_APPROVAL":        StageAwaitingApproval,
	"HUMAN_RECONCILIATION": StageUnknown,
}

func awaitedEvents(m *control.Machine, c control.Configuration) []string {
	var out []string
	for _, a := range m.Awaiting(c) {
		out = append(out, a.Event)
	}
	return out
}
