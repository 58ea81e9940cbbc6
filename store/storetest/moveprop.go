package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// ImportRunsAnyRun holds store.RunImporter to ValidateWholeRun as a
// property: a run drawn from the runs of ImportRuns, under a fresh id and
// keys, with random edits (bodies of any bytes, texts of any characters,
// times and generations of any value, outbox and attempt statuses, inbox
// positions with gaps, some that break the run) is either refused as
// invalid input with nothing written, when ValidateWholeRun refuses it,
// or imported and read back exactly as it was given. A store that takes
// what the validation passes never fails a move with an error of its own
// schema.
func ImportRunsAnyRun(t *testing.T, from, to Opener) {
	c, src, dst, imp := storesToMove(t, from, to)
	EndedWithEverything(t, src, c, "any-ended")
	waitingMidEffect(t, src, c, "any-live")
	bases := []store.WholeRun{readWhole(t, src, "any-ended"), readWhole(t, src, "any-live")}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		w := renamed(bases[rapid.IntRange(0, len(bases)-1).Draw(rt, "base")], fmt.Sprintf("any-%d", n))
		own(&w, fmt.Sprintf("-%d", n))
		for range rapid.IntRange(0, 4).Draw(rt, "edits") {
			anyEdit(rt, &w)
		}
		verr := store.ValidateWholeRun("import run", w)
		ok, err := imp.ImportRun(ctx, w)
		if verr != nil {
			if store.CodeOf(err) != store.CodeInvalidInput {
				rt.Fatalf("ValidateWholeRun refuses (%v), ImportRun = %v, %v", verr, ok, err)
			}
			if _, err := dst.Run(ctx, w.Record.Run.ID); store.CodeOf(err) != store.CodeNotFound {
				rt.Fatalf("a refused run was written: %v", err)
			}
			return
		}
		if err != nil || !ok {
			rt.Fatalf("a valid run was not imported: %v, %v", ok, err)
		}
		a, rerr := readWholeErr(dst, w.Record.Run.ID)
		if rerr != nil {
			rt.Fatalf("the imported run does not read back: %v", rerr)
		}
		if got, want := NilEmpty(a), movedAs(w); !reflect.DeepEqual(got, want) {
			rt.Fatalf("the run reads back otherwise:\n got %s\nwant %s", wholeText(got), wholeText(want))
		}
	})
}

// anyText is a string of any characters, "" included.
func anyText(rt *rapid.T, label string) string {
	return rapid.OneOf(rapid.Just(""), rapid.String(), rapid.SampledFrom([]string{"ü", "a'b", "x\x00y", "sha256:ABC", "%_"})).Draw(rt, label)
}

// anyBody is a body of one byte or more: JSON or not.
func anyBody(rt *rapid.T, label string) []byte {
	return rapid.OneOf(rapid.SliceOfN(rapid.Byte(), 1, 64), rapid.Just([]byte(`{"a":1}`)), rapid.Just([]byte{0})).Draw(rt, label)
}

func anyTime(rt *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 2).Draw(rt, label) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, rapid.Int64Range(1, 1<<62).Draw(rt, label+" ns")).UTC()
	}
	return time.Date(2026, 1, 2, 3, 4, 5, rapid.IntRange(0, 999999999).Draw(rt, label+" ns"), time.UTC)
}

// rechain makes w's events chain again after an edit of their bodies or
// number, and the header's head follow them.
func rechain(w *store.WholeRun) {
	hash := store.GenesisHash
	for i := range w.Record.Events {
		e := &w.Record.Events[i]
		e.Digest = store.BodyDigest(e.Body)
		e.PrevHash, e.ChainHash = hash, store.ChainHash(hash, e.Seq, e.Digest)
		hash = e.ChainHash
	}
	w.Record.Run.Head, w.Record.Run.HeadHash = int64(len(w.Record.Events)), hash
}

// anyEdit makes one random edit of w: most keep it valid (what any store
// may hold), some break it.
func anyEdit(rt *rapid.T, w *store.WholeRun) {
	r := &w.Record
	pick := func(n int, label string) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
	switch rapid.IntRange(0, 20).Draw(rt, "edit") {
	case 0: // an event's body and kind, the chain made again
		if len(r.Events) > 0 {
			i := pick(len(r.Events), "event")
			r.Events[i].Body, r.Events[i].Kind = anyBody(rt, "event body"), anyText(rt, "event kind")
			rechain(w)
		}
	case 1: // another event at the end
		r.Events = append(r.Events, store.Event{Seq: int64(len(r.Events)) + 1, Kind: anyText(rt, "kind"), Body: anyBody(rt, "body"),
			Generation: rapid.Int64Range(0, r.Run.Lease.Generation).Draw(rt, "generation"), RecordedAt: anyTime(rt, "recorded")})
		rechain(w)
	case 2: // events' generations and times
		for i := range r.Events {
			r.Events[i].Generation = rapid.Int64Range(-1, r.Run.Lease.Generation+1).Draw(rt, "generation")
			r.Events[i].RecordedAt = anyTime(rt, "recorded")
		}
	case 3: // the header's texts and times
		r.Run.State, r.Run.Outcome = anyText(rt, "state"), anyText(rt, "outcome")
		r.Run.WorkflowVersion, r.Run.WorkflowDigest, r.Run.Quarantine = anyText(rt, "version"), anyText(rt, "digest"), anyText(rt, "quarantine")
		r.Run.CreatedAt, r.Run.UpdatedAt, r.Run.DueAt = anyTime(rt, "created"), anyTime(rt, "updated"), anyTime(rt, "due")
	case 4: // the lease's generation
		r.Run.Lease.Generation = rapid.Int64Range(0, 1<<40).Draw(rt, "lease generation")
	case 5: // the checkpoint
		if rapid.Bool().Draw(rt, "drop checkpoint") {
			r.Checkpoint, r.HasCheckpoint = store.Checkpoint{}, false
		} else {
			body := anyBody(rt, "checkpoint body")
			r.Checkpoint = store.Checkpoint{Seq: rapid.Int64Range(0, r.Run.Head+1).Draw(rt, "checkpoint seq"), FormatVersion: rapid.Int64().Draw(rt, "format"),
				BuildDigest: anyText(rt, "build"), Body: body, Digest: store.BodyDigest(body)}
			r.HasCheckpoint = true
		}
	case 6: // an intent's outbox, route and body
		if len(r.Intents) > 0 {
			in := &r.Intents[pick(len(r.Intents), "intent")]
			in.Outbox = rapid.SampledFrom([]store.OutboxStatus{store.OutboxPending, store.OutboxInFlight, store.OutboxRetry, store.OutboxReconcile, store.OutboxHuman, store.OutboxDone, "sent"}).Draw(rt, "outbox")
			in.Route, in.Attempts = anyText(rt, "route"), rapid.Int64Range(-1, 9).Draw(rt, "attempts")
			in.Body = anyBody(rt, "intent body")
			in.Digest = store.BodyDigest(in.Body)
			in.EffectType, in.ContentDigest = anyText(rt, "effect"), anyText(rt, "content digest")
		}
	case 7: // an attempt's status, detail and times
		if len(r.Attempts) > 0 {
			a := &r.Attempts[pick(len(r.Attempts), "attempt")]
			a.Status = rapid.SampledFrom([]store.AttemptStatus{store.AttemptStarted, store.AttemptSucceeded, store.AttemptFailedTransient,
				store.AttemptFailedPermanent, store.AttemptUnknown, store.AttemptReconciledApplied, store.AttemptReconciledNotApplied, "lost"}).Draw(rt, "status")
			a.Detail, a.StartedAt, a.FinishedAt = anyText(rt, "detail"), anyTime(rt, "started"), anyTime(rt, "finished")
			a.Generation = rapid.Int64Range(-1, r.Run.Lease.Generation+1).Draw(rt, "attempt generation")
		}
	case 8: // a receipt's outcome and body
		if len(r.Receipts) > 0 {
			rc := &r.Receipts[pick(len(r.Receipts), "receipt")]
			rc.Outcome, rc.Body = anyText(rt, "outcome"), anyBody(rt, "receipt body")
			rc.Digest = store.BodyDigest(rc.Body)
		}
	case 9: // a receipt dropped (its intent still done)
		if len(r.Receipts) > 0 {
			i := pick(len(r.Receipts), "receipt")
			r.Receipts = append(r.Receipts[:i:i], r.Receipts[i+1:]...)
		}
	case 10: // a grant's texts, expiry and status
		if len(w.Grants) > 0 {
			g := &w.Grants[pick(len(w.Grants), "grant")]
			g.Body = anyBody(rt, "grant body")
			g.Digest, g.RequestDigest, g.ExpiresAt = store.BodyDigest(g.Body), anyText(rt, "request"), anyTime(rt, "expires")
			g.Status = rapid.SampledFrom([]store.ApprovalStatus{store.ApprovalGranted, store.ApprovalConsumed, store.ApprovalRevoked, "lost"}).Draw(rt, "grant status")
			syncApprovals(w)
		}
	case 11: // inbox positions with gaps, and what was consumed
		seq := int64(0)
		for i := range w.Inbox {
			seq += rapid.Int64Range(0, 3).Draw(rt, "gap")
			w.Inbox[i].Seq, w.Inbox[i].Consumed = seq, rapid.Bool().Draw(rt, "consumed")
		}
	case 12: // an inbox entry's texts
		if len(w.Inbox) > 0 {
			in := &w.Inbox[pick(len(w.Inbox), "entry")]
			in.Kind, in.ActorRole, in.Actor, in.Capability = anyText(rt, "kind"), anyText(rt, "role"), anyText(rt, "actor"), anyText(rt, "capability")
			in.Body = anyBody(rt, "entry body")
			in.Digest = store.BodyDigest(in.Body)
		}
	case 13: // the trace
		w.Trace = nil
		for range rapid.IntRange(0, 5).Draw(rt, "trace records") {
			w.Trace = append(w.Trace, store.TraceRecord{Kind: anyText(rt, "trace kind"), Body: rapid.SliceOfN(rapid.Byte(), 0, 32).Draw(rt, "trace body")})
		}
	case 14: // an intent follows another event
		if len(r.Intents) > 0 {
			r.Intents[pick(len(r.Intents), "intent")].Seq = rapid.Int64Range(-1, r.Run.Head+1).Draw(rt, "intent seq")
		}
	case 15: // an attempt dropped
		if len(r.Attempts) > 0 {
			i := pick(len(r.Attempts), "attempt")
			r.Attempts = append(r.Attempts[:i:i], r.Attempts[i+1:]...)
		}
	case 16: // an event's digest or chain broken
		if len(r.Events) > 0 {
			e := &r.Events[pick(len(r.Events), "event")]
			e.ChainHash = anyText(rt, "chain")
		}
	case 17: // the run's workflow
		r.Run.WorkflowID = anyText(rt, "workflow")
	case 18: // an intent's route alone
		if len(r.Intents) > 0 {
			r.Intents[pick(len(r.Intents), "intent")].Route = anyText(rt, "route")
		}
	case 19: // an attempt's detail alone
		if len(r.Attempts) > 0 {
			r.Attempts[pick(len(r.Attempts), "attempt")].Detail = anyText(rt, "detail")
		}
	case 20: // an inbox entry consumed or not
		if len(w.Inbox) > 0 {
			in := &w.Inbox[pick(len(w.Inbox), "entry")]
			in.Consumed = !in.Consumed
		}
	}
}

// syncApprovals sets the grants w's intents name from w.Grants, as a
// store reads them back.
func syncApprovals(w *store.WholeRun) {
	w.Record.Approvals = nil
	for _, g := range w.Grants {
		for _, in := range w.Record.Intents {
			if in.ApprovalID == g.ID {
				w.Record.Approvals = append(w.Record.Approvals, g)
			}
		}
	}
}
