package tripwire

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/control"
)

func owed(stage string) bool { return stage == StageCommitted || stage == StageUnknown }

func findEffect(open []Effect, id string) int {
	return slices.IndexFunc(open, func(e Effect) bool { return e.IntentID == id })
}

// checkLedger: every committed intent has exactly one terminal receipt or
// is still owed (pending in the outbox and open in the checkpoint); none
// vanish, none appear without a commit, none close without a receipt.
func checkLedger(s *Set, b *Boundary, f *finder) {
	if b.Phase == PhaseCommit {
		checkTickLedger(s, b, f)
	}
	if b.Ledger != nil {
		open := b.OpenBefore
		if b.Phase == PhaseCommit {
			open = b.OpenAfter
		}
		checkStoredLedger(s, b, open, f)
	}
}

func checkTickLedger(s *Set, b *Boundary, f *finder) {
	// What the tick may close: effects owed before it, and intents it commits.
	isOwed := func(id string) bool {
		if i := findEffect(b.OpenBefore, id); i >= 0 && owed(b.OpenBefore[i].Stage) {
			return true
		}
		return slices.ContainsFunc(b.Intents, func(in Intent) bool { return in.ID == id })
	}
	receipted := map[string]int{}
	for i, r := range b.Receipts {
		where := at{"/receipts", i}
		if !isOwed(r.IntentID) {
			f.tripAt(where, "", fmt.Sprintf("receipt for %s, which the run did not owe (never committed, or already closed)", r.IntentID), r.Digest)
		}
		if j, dup := receipted[r.IntentID]; dup {
			f.tripAt(where, "", fmt.Sprintf("second receipt for %s (first at receipts/%d)", r.IntentID, j), r.Digest)
		}
		receipted[r.IntentID] = i
	}
	// The last result of each intent says where its outbox stands.
	lastOutbox := map[string]string{}
	for i, r := range b.Results {
		if !isOwed(r.IntentID) {
			f.trip(ptr("/results", i), fmt.Sprintf("attempt result for %s, which the run did not owe", r.IntentID), evidenceDigest("result", r))
		}
		lastOutbox[r.IntentID] = r.Outbox
	}
	for i, r := range b.Receipts {
		if ob, ok := lastOutbox[r.IntentID]; !ok || ob != "done" {
			f.trip(ptr("/receipts", i), fmt.Sprintf("receipt for %s, but its outbox is left %q", r.IntentID, ob), r.Digest)
		}
	}
	for i, r := range b.Results {
		if _, ok := receipted[r.IntentID]; r.Outbox == "done" && !ok && lastOutbox[r.IntentID] == "done" {
			f.trip(ptr("/results", i), fmt.Sprintf("outbox of %s marked done without a receipt", r.IntentID), evidenceDigest("result", r))
		}
	}
	// Nothing owed vanishes: it is closed by a receipt or still owed after.
	check := func(where at, id string) {
		if _, ok := receipted[id]; ok {
			return
		}
		if i := findEffect(b.OpenAfter, id); i >= 0 && owed(b.OpenAfter[i].Stage) {
			return
		}
		f.tripAt(where, "", fmt.Sprintf("intent %s was owed and is neither receipted nor open after the tick: it vanished", id), evidenceDigest("intent", id))
	}
	for i, e := range b.OpenBefore {
		if owed(e.Stage) {
			check(at{"/open_before", i}, e.IntentID)
		}
	}
	for i, in := range b.Intents {
		check(at{"/intents", i}, in.ID)
	}
	// Nothing becomes owed, or closed, without the ledger saying so.
	for i, e := range b.OpenAfter {
		where := at{"/open_after", i}
		before := findEffect(b.OpenBefore, e.IntentID)
		switch {
		case owed(e.Stage) && !isOwed(e.IntentID):
			f.tripAt(where, "", fmt.Sprintf("effect %s is %s in the checkpoint but no intent for it was ever committed: it could be sent without a durable intent", e.IntentID, e.Stage),
				evidenceDigest("effect", e))
		case e.Stage == StageClosed && !(before >= 0 && b.OpenBefore[before].Stage == StageClosed):
			if _, ok := receipted[e.IntentID]; !ok {
				f.tripAt(where, "", fmt.Sprintf("effect %s closed without a receipt", e.IntentID), evidenceDigest("effect", e))
			}
		}
	}
	for i, in := range b.Intents {
		if j := findEffect(b.OpenBefore, in.ID); j >= 0 && owed(b.OpenBefore[j].Stage) {
			f.trip(ptr("/intents", i), fmt.Sprintf("intent %s committed a second time", in.ID), in.Digest)
		}
	}
	if s.m.Final(b.After.State) && s.m.Outcome(b.After) != "unknown_external_outcome" {
		for i, e := range b.OpenAfter {
			if owed(e.Stage) {
				f.trip(ptr("/open_after", i), fmt.Sprintf("the run ends %s while it still owes effect %s", b.After.State, e.IntentID), evidenceDigest("effect", e))
			}
		}
	}
}

func checkStoredLedger(s *Set, b *Boundary, open []Effect, f *finder) {
	openPtr := "/open_before"
	if b.Phase == PhaseCommit {
		openPtr = "/open_after"
	}
	l := b.Ledger
	state := b.Before.State
	if b.Phase == PhaseCommit {
		state = b.After.State
	}
	abandoned := s.m.Final(state) && s.m.Outcome(control.Configuration{State: state}) == "unknown_external_outcome"
	stored := map[string]string{}
	for i, in := range l.Intents {
		where := at{"/ledger/intents", i}
		if _, dup := stored[in.ID]; dup {
			f.tripAt(where, "", fmt.Sprintf("intent %s is stored twice", in.ID), evidenceDigest("intent", in.ID))
		}
		stored[in.ID] = in.Outbox
		switch {
		case in.Receipts > 1:
			f.tripAt(where, "", fmt.Sprintf("intent %s has %d receipts", in.ID, in.Receipts), evidenceDigest("intent", in))
		case in.Outbox == "done" && in.Receipts != 1:
			f.tripAt(where, "", fmt.Sprintf("intent %s is done without a receipt", in.ID), evidenceDigest("intent", in))
		case in.Outbox != "done" && in.Receipts > 0:
			f.tripAt(where, "", fmt.Sprintf("intent %s has a receipt but its outbox is %q", in.ID, in.Outbox), evidenceDigest("intent", in))
		case in.Outbox != "done":
			if j := findEffect(open, in.ID); (j < 0 || !owed(open[j].Stage)) && !abandoned {
				f.tripAt(where, "", fmt.Sprintf("intent %s is %s in the outbox but the run no longer owes it: it vanished", in.ID, in.Outbox), evidenceDigest("intent", in))
			}
		}
	}
	for i, e := range open {
		if !owed(e.Stage) {
			continue
		}
		switch ob, ok := stored[e.IntentID]; {
		case !ok:
			f.trip(ptr(openPtr, i), fmt.Sprintf("effect %s is %s but no intent for it is stored", e.IntentID, e.Stage), evidenceDigest("effect", e))
		case ob == "done":
			f.trip(ptr(openPtr, i), fmt.Sprintf("effect %s is %s in the checkpoint but the ledger closed it", e.IntentID, e.Stage), evidenceDigest("effect", e))
		}
	}
}
