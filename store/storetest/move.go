package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
)

// ImportRuns holds store.RunImporter to its contract, moving runs from a
// store from opens to one to opens (two stores of one backend, or one of
// each): every kind of run (ended with everything, waiting with an effect
// in flight, a grant and input pending, parked, just created) reads back
// in the new store as it was, bar its lease, and goes on there; importing
// again writes nothing; malformed or conflicting runs are refused and
// write nothing.
func ImportRuns(t *testing.T, from, to Opener) {
	c, src, dst, imp := storesToMove(t, from, to)

	EndedWithEverything(t, src, c, "mv-ended")
	liveLease := waitingMidEffect(t, src, c, "mv-live")
	must(t, src.CreateRun(ctx, store.Run{ID: "mv-new", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, Inb("mv-new", "mv-new-start", "INPUT", `{"amount":3}`)))
	newRun(t, src, "mv-parked")
	l, err := src.AcquireLease(ctx, "mv-parked", "w", time.Hour)
	must(t, err)
	must(t, src.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Events: []store.Event{Ev("A", `{}`)}}))
	must(t, src.Quarantine(ctx, "mv-parked", "tripwire: budget overrun"))
	quorumRun(t, src, c, "mv-quorum")
	c.Advance(time.Minute)

	runs := []string{"mv-ended", "mv-live", "mv-new", "mv-parked", "mv-quorum"}
	whole := map[string]store.WholeRun{}
	for _, id := range runs {
		a, err := archive.Read(ctx, src, id)
		must(t, err)
		whole[id] = a.Whole()
	}
	if w := whole["mv-live"]; w.Record.Run.Lease.Generation != liveLease.Generation || w.Record.Run.Lease.Owner == "" {
		t.Fatalf("the live run was read with lease %+v, want generation %d held", w.Record.Run.Lease, liveLease.Generation)
	}

	// Malformed runs are refused before anything is written.
	for name, edit := range map[string]func(*store.WholeRun){
		"no id":             func(w *store.WholeRun) { w.Record.Run.ID = "" },
		"head past events":  func(w *store.WholeRun) { w.Record.Run.Head++ },
		"broken chain":      func(w *store.WholeRun) { w.Record.Events[1].PrevHash = store.GenesisHash },
		"event body edited": func(w *store.WholeRun) { w.Record.Events[0].Body = []byte(`{"amount":11}`) },
		"head hash of another run": func(w *store.WholeRun) {
			w.Record.Run.HeadHash = whole["mv-parked"].Record.Run.HeadHash
		},
		"generation beyond the lease's": func(w *store.WholeRun) { w.Record.Events[0].Generation = w.Record.Run.Lease.Generation + 1 },
		"checkpoint past the head":      func(w *store.WholeRun) { w.Record.Checkpoint.Seq = w.Record.Run.Head + 1 },
		"intent of another run":         func(w *store.WholeRun) { w.Record.Intents[0].RunID = "mv-new" },
		"intent key twice": func(w *store.WholeRun) {
			w.Record.Intents[1].IdempotencyKey = w.Record.Intents[0].IdempotencyKey
		},
		"outbox status unknown":     func(w *store.WholeRun) { w.Record.Intents[0].Outbox = "sent" },
		"attempt of no intent":      func(w *store.WholeRun) { w.Record.Attempts[0].IntentID = "elsewhere" },
		"attempt numbers skip":      func(w *store.WholeRun) { w.Record.Attempts[0].N = 2 },
		"receipt of an open intent": func(w *store.WholeRun) { w.Record.Intents[0].Outbox = store.OutboxReconcile },
		"grant of another run":      func(w *store.WholeRun) { w.Grants[0].RunID = "mv-new" },
		"grant consumed by nothing": func(w *store.WholeRun) { w.Grants[0].ConsumedBy = "nobody" },
		"nonce twice":               func(w *store.WholeRun) { w.Grants[1].Nonce = w.Grants[0].Nonce },
		"inbox out of order":        func(w *store.WholeRun) { w.Inbox[0].Seq, w.Inbox[1].Seq = w.Inbox[1].Seq, w.Inbox[0].Seq },
		"inbox body edited":         func(w *store.WholeRun) { w.Inbox[0].Body = []byte(`{"amount":99}`) },
		"trace record without kind": func(w *store.WholeRun) { w.Trace[0].Kind = "" },
	} {
		w := copyWhole(whole["mv-ended"])
		edit(&w)
		_, err := imp.ImportRun(ctx, w)
		if store.CodeOf(err) != store.CodeInvalidInput {
			t.Errorf("%s: ImportRun = %v, want %s", name, err, store.CodeInvalidInput)
		}
	}
	// A grant consumed alongside another must be of the same request.
	if q := whole["mv-quorum"]; len(q.Grants) != 2 || q.Grants[1].ConsumedBy != q.Record.Intents[0].ID {
		t.Fatalf("the quorum's run was read with grants %+v", q.Grants)
	}
	for name, edit := range map[string]func(*store.WholeRun){
		"concurring grant of another request": func(w *store.WholeRun) { w.Grants[1].RequestDigest = store.BodyDigest([]byte("other")) },
		"concurring grant of no intent":       func(w *store.WholeRun) { w.Grants[1].ConsumedBy = "nobody" },
		"intent naming no grant": func(w *store.WholeRun) {
			w.Record.Intents[0].ApprovalID, w.Grants[0].Status, w.Grants[0].ConsumedBy = "", store.ApprovalGranted, ""
		},
	} {
		w := copyWhole(whole["mv-quorum"])
		edit(&w)
		if _, err := imp.ImportRun(ctx, w); store.CodeOf(err) != store.CodeInvalidInput {
			t.Errorf("%s: ImportRun = %v, want %s", name, err, store.CodeInvalidInput)
		}
	}
	if got := listedRuns(t, dst); len(got) != 0 {
		t.Fatalf("refused imports left runs %v", got)
	}

	for _, id := range runs {
		ok, err := imp.ImportRun(ctx, whole[id])
		if err != nil || !ok {
			t.Fatalf("import %s: %v, %v", id, ok, err)
		}
	}
	for _, id := range runs {
		got := readWhole(t, dst, id)
		if want := movedAs(whole[id]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s reads back otherwise:\n got %s\nwant %s", id, wholeText(got), wholeText(want))
		}
		if ok, err := imp.ImportRun(ctx, whole[id]); ok || err != nil {
			t.Errorf("importing %s again = %v, %v; want false, nil", id, ok, err)
		}
		if again := readWhole(t, dst, id); !reflect.DeepEqual(again, got) {
			t.Errorf("importing %s again changed it", id)
		}
	}
	if got, want := listedRuns(t, dst), runs; !reflect.DeepEqual(got, want) {
		t.Errorf("the store lists %v, want %v in the order imported", got, want)
	}
	// An imported run is found by its labels, as one created here is.
	if m, ok := store.As[store.RunMatcher](dst); ok {
		found, _, err := m.MatchRuns(ctx, "", 10, 0, store.RunFilter{Labels: map[string]string{"order": "mv-ended", "team": "refunds"}})
		must(t, err)
		if len(found) != 1 || found[0].ID != "mv-ended" {
			t.Errorf("the imported run by its labels: %v", ids(found))
		}
	}

	// Conflicts, each refused whole.
	other := copyWhole(whole["mv-parked"])
	other.Record.Run.ID = "mv-ended" // another run under a taken id
	mustCode(t, importErr(imp, other), store.CodeExists)
	for name, tc := range map[string]struct {
		edit func(*store.WholeRun)
		code store.Code
	}{
		"key with the same content": {func(w *store.WholeRun) {}, store.CodeExists},
		"key with other content":    {func(w *store.WholeRun) { w.Record.Intents[0].ContentDigest = store.BodyDigest([]byte("other")) }, store.CodeIdempotencyConflict},
		"intent id taken": {func(w *store.WholeRun) {
			for i := range w.Record.Intents {
				w.Record.Intents[i].IdempotencyKey += "-fresh"
			}
		}, store.CodeExists},
		"grant id taken, keys fresh": {func(w *store.WholeRun) { ownKeys(w, "-copy") }, store.CodeExists},
		"nonce taken, rest fresh":    {func(w *store.WholeRun) { ownKeys(w, "-copy"); ownGrants(w, "-copy", false) }, store.CodeExists},
	} {
		w := renamed(whole["mv-ended"], "mv-copy")
		tc.edit(&w)
		if err := importErr(imp, w); store.CodeOf(err) != tc.code {
			t.Errorf("%s: ImportRun = %v, want %s", name, err, tc.code)
		}
		if _, err := dst.Run(ctx, "mv-copy"); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("%s: the refused run was written: %v", name, err)
		}
	}
	w := renamed(whole["mv-ended"], "mv-copy")
	own(&w, "-copy")
	if ok, err := imp.ImportRun(ctx, w); !ok || err != nil {
		t.Fatalf("a copy with its own ids: %v, %v", ok, err)
	}

	// The moved runs' keys stay bound in the new store.
	nl, err := dst.AcquireLease(ctx, "mv-live", "next", time.Hour)
	must(t, err)
	if nl.Generation <= liveLease.Generation {
		t.Fatalf("the first lease in the new store is generation %d, not past the old store's %d", nl.Generation, liveLease.Generation)
	}
	ended := whole["mv-ended"].Record.Intents[0]
	reuse := In("mv-live-reuse", ended.IdempotencyKey, "something else")
	mustCode(t, dst.Commit(ctx, nl, store.Tick{ExpectHead: 3, Intents: []store.Intent{reuse}}), store.CodeIdempotencyConflict)

	// A stale writer of the old store is fenced in the new one too.
	mustCode(t, dst.Commit(ctx, liveLease, store.Tick{ExpectHead: 3, Events: []store.Event{Ev("LATE", `{}`)}}), store.CodeFenced)

	// The live run goes on where it stood: its effect in flight ends
	// with a receipt, its pending input is taken, its waiting grant is
	// consumed by a new intent, and it ends.
	live := whole["mv-live"]
	var inFlight string
	for _, in := range live.Record.Intents {
		if in.Outbox == store.OutboxInFlight {
			inFlight = in.ID
		}
	}
	pending := live.Inbox[len(live.Inbox)-1].ID
	rc := []byte(`{"outcome":"confirmed_success"}`)
	next := In("mv-live-i3", "mv-live-k3", "refund 20")
	next.ApprovalID = "mv-live-g2"
	must(t, dst.Commit(ctx, nl, store.Tick{ExpectHead: 3, State: "DONE", Outcome: "success", Consume: []string{pending},
		Events:    []store.Event{Ev("RESULT", `{"ok":true}`), Ev("END", `{}`)},
		Results:   []store.AttemptResult{{IntentID: inFlight, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
		Receipts:  []store.Receipt{{IntentID: inFlight, Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}},
		Intents:   []store.Intent{withRun(next, "mv-live")},
		Approvals: []store.ApprovalUse{{ApprovalID: next.ApprovalID, IntentID: next.ID}}}))
	after := readWhole(t, dst, "mv-live")
	if after.Record.Run.Outcome != "success" || after.Record.Run.Head != 5 || len(after.Record.Receipts) != 2 {
		t.Fatalf("the moved run did not go on: %+v", after.Record.Run)
	}
	if g, err := dst.Approval(ctx, "mv-live-g2"); err != nil || g.Status != store.ApprovalConsumed || g.ConsumedBy != next.ID {
		t.Fatalf("the moved grant: %+v, %v", g, err)
	}
	importNotices(t, c, src, dst, imp)
}

// importNotices holds ImportRun to the run's notices not yet delivered:
// read whole from the store the run leaves (Noticeboard.RunNotices),
// written in the new one as they were (ids, times, attempts, last error,
// routes reached), due at once there; notices that cannot be the run's
// refused, writing nothing.
func importNotices(t *testing.T, c *Clock, src, dst store.Store, imp store.RunImporter) {
	from, ok1 := store.NoticeboardOf(src)
	to, ok2 := store.NoticeboardOf(dst)
	if !ok1 || !ok2 {
		return
	}
	newRun(t, src, "mv-told")
	l, err := src.AcquireLease(ctx, "mv-told", "w", time.Hour)
	must(t, err)
	must(t, src.Commit(ctx, l, store.Tick{Events: []store.Event{Ev("E", `{}`)}, State: "WAIT_APPROVAL",
		Notices: []store.Notice{{Kind: store.NoticeApproval, Body: []byte(`{"kind":"approval_waiting","requests":["q"]}`)}}}))
	c.Advance(time.Second)
	must(t, src.Quarantine(ctx, "mv-told", "checkpoint digest mismatch", store.Notice{Kind: store.NoticeQuarantined, Body: []byte(`{"kind":"run_quarantined"}`)}))
	claimed, err := from.ClaimNotices(ctx, "deliverer", time.Minute, 10)
	must(t, err)
	if len(claimed) != 2 {
		t.Fatalf("claimed %d notices in the store the run leaves", len(claimed))
	}
	must(t, from.NoticeRetry(ctx, claimed[0].ID, "deliverer", "route pager: 503", []string{"chat"}, []store.RouteWait{{Route: "pager", After: time.Hour, Failures: 1}}))
	// The other stays held by its deliverer: it moves all the same.
	want, err := from.RunNotices(ctx, "mv-told")
	must(t, err)
	if len(want) != 2 || want[0].Kind != store.NoticeApproval || want[0].Attempts != 1 || !slices.Equal(want[0].Sent, []string{"chat"}) ||
		want[0].LastError != "route pager: 503" || want[1].Kind != store.NoticeQuarantined || want[1].Attempts != 1 {
		t.Fatalf("the run's notices in the store it leaves: %+v", want)
	}
	w := readWhole(t, src, "mv-told")
	w.Notices = want

	for name, edit := range map[string]func(*store.WholeRun){
		"notice of another run":     func(w *store.WholeRun) { w.Notices[0].RunID = "mv-ended" },
		"notice id of another run":  func(w *store.WholeRun) { w.Notices[0].ID = "mv-ended/1/0/approval_waiting" },
		"notice past the head":      func(w *store.WholeRun) { w.Notices[0].Seq = w.Record.Run.Head + 1 },
		"notice of an unknown kind": func(w *store.WholeRun) { w.Notices[1].Kind = "lunch" },
		"notice twice":              func(w *store.WholeRun) { w.Notices[1].ID = w.Notices[0].ID },
		"notice without a time":     func(w *store.WholeRun) { w.Notices[0].CreatedAt = time.Time{} },
		"notice reaching a,b":       func(w *store.WholeRun) { w.Notices[0].Sent = []string{"a,b"} },
		"notice body not an object": func(w *store.WholeRun) { w.Notices[0].Body = []byte(`[]`) },
	} {
		bad := copyWhole(w)
		edit(&bad)
		if _, err := imp.ImportRun(ctx, bad); store.CodeOf(err) != store.CodeInvalidInput {
			t.Errorf("%s: ImportRun = %v, want %s", name, err, store.CodeInvalidInput)
		}
	}
	if _, err := dst.Run(ctx, "mv-told"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a refused import left the run: %v", err)
	}
	if ns, err := to.RunNotices(ctx, "mv-told"); err != nil || len(ns) != 0 {
		t.Fatalf("a refused import left notices %+v (%v)", ns, err)
	}

	c.Advance(time.Minute)
	imported, err := imp.ImportRun(ctx, w)
	must(t, err)
	if !imported {
		t.Fatal("the run with notices was not imported")
	}
	got, err := to.RunNotices(ctx, "mv-told")
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("%d notices moved, want %d", len(got), len(want))
	}
	for i := range want {
		g, x := got[i], want[i]
		if g.ID != x.ID || g.RunID != x.RunID || g.Seq != x.Seq || g.Kind != x.Kind || string(g.Body) != string(x.Body) ||
			!g.CreatedAt.Equal(x.CreatedAt) || g.Attempts != x.Attempts || g.LastError != x.LastError || !slices.Equal(g.Sent, x.Sent) {
			t.Fatalf("notice %d moved as %+v, want %+v", i, g, x)
		}
	}
	// Due at once in the new store, the one held in the old included.
	due, err := to.ClaimNotices(ctx, "new-deliverer", time.Minute, 10)
	must(t, err)
	if len(due) != 2 || due[0].Attempts != 2 || due[1].Attempts != 2 {
		t.Fatalf("claimed %+v in the new store", due)
	}
	for _, n := range due {
		must(t, to.NoticeDone(ctx, n.ID, "new-deliverer"))
	}
}

// storesToMove opens the store runs move from and the one they move to,
// on one clock, closed when t ends, and the latter's RunImporter.
func storesToMove(t *testing.T, from, to Opener) (*Clock, store.Store, store.Store, store.RunImporter) {
	t.Helper()
	c := NewClock()
	src, dst := from(t, c.Now), to(t, c.Now)
	t.Cleanup(func() { src.Close(); dst.Close() })
	imp, ok := store.RunImporterOf(dst)
	if !ok {
		t.Fatal("the store does not import runs")
	}
	return c, src, dst, imp
}

// waitingMidEffect writes a run that stopped mid-way: its first intent
// done with a grant consumed, its second in flight (attempt begun, no
// outcome), a second grant waiting, an input pending; its events written
// by two lease generations at two times, the second lease still held.
func waitingMidEffect(t *testing.T, s store.Store, c *Clock, run string) store.Lease {
	t.Helper()
	first := Inb(run, run+"-start", "INPUT", `{"amount":10}`)
	must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, first))
	grant(t, s, run+"-g1", run, run+"-n1", c.Now().Add(time.Hour))
	l, err := s.AcquireLease(ctx, run, "w", time.Minute)
	must(t, err)
	in1, in2 := withRun(In(run+"-i1", run+"-k1", "refund 10"), run), withRun(In(run+"-i2", run+"-k2", "email"), run)
	in1.ApprovalID = run + "-g1"
	cp := []byte(`{"s":1}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Consume: []string{first.ID},
		Events:     []store.Event{Ev("INPUT", `{"amount":10}`), Ev("AUTH", `{"ok":true}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, BuildDigest: "build", Body: cp, Digest: store.BodyDigest(cp)},
		Intents:    []store.Intent{in1, in2},
		Approvals:  []store.ApprovalUse{{ApprovalID: in1.ApprovalID, IntentID: in1.ID}},
		Begin:      []string{in1.ID},
		Trace:      []store.TraceRecord{{Kind: "decision", Body: []byte(`{"d":1}`)}},
		DueAt:      c.Now().Add(time.Hour)}))
	// The first writer's lease runs out; the next one's events are of
	// its generation, and of another time.
	c.Advance(2 * time.Minute)
	l, err = s.AcquireLease(ctx, run, "w2", time.Hour)
	must(t, err)
	rc := []byte(`{"outcome":"confirmed_success"}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{Ev("EFFECT", `{"done":1}`)},
		Results:  []store.AttemptResult{{IntentID: in1.ID, N: 1, Status: store.AttemptSucceeded, Detail: "200", Outbox: store.OutboxDone, Route: "confirmed"}},
		Receipts: []store.Receipt{{IntentID: in1.ID, Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}},
		Begin:    []string{in2.ID}, Trace: []store.TraceRecord{{Kind: "effect", Body: []byte(`{"e":1}`)}}}))
	grant(t, s, run+"-g2", run, run+"-n2", c.Now().Add(time.Hour))
	must(t, s.Submit(ctx, Inb(run, run+"-more", "INPUT", `{"more":true}`)))
	return l
}

func withRun(in store.Intent, run string) store.Intent { in.RunID = run; return in }

func importErr(imp store.RunImporter, w store.WholeRun) error {
	_, err := imp.ImportRun(ctx, w)
	return err
}

// readWhole reads run id from s as an archive does.
func readWhole(t *testing.T, s store.Store, id string) store.WholeRun {
	t.Helper()
	w, err := readWholeErr(s, id)
	must(t, err)
	return NilEmpty(w)
}

// readWholeErr reads run id from s as an archive does, or says why not.
func readWholeErr(s store.Store, id string) (store.WholeRun, error) {
	a, err := archive.Read(ctx, s, id)
	if err != nil {
		return store.WholeRun{}, err
	}
	return a.Whole(), nil
}

// NilEmpty is w with its empty lists nil, as one store reads them and
// another may not.
func NilEmpty(w store.WholeRun) store.WholeRun {
	w = copyWhole(w)
	r := &w.Record
	r.Events, r.Intents, r.Attempts = nilIfEmpty(r.Events), nilIfEmpty(r.Intents), nilIfEmpty(r.Attempts)
	r.Receipts, r.Approvals, r.Checkpoint.Body = nilIfEmpty(r.Receipts), nilIfEmpty(r.Approvals), nilIfEmpty(r.Checkpoint.Body)
	w.Grants, w.Inbox, w.Trace = nilIfEmpty(w.Grants), nilIfEmpty(w.Inbox), nilIfEmpty(w.Trace)
	return w
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// movedAs is w as the store it moves to reads it back: unleased, with
// its lease's generation.
func movedAs(w store.WholeRun) store.WholeRun {
	w = NilEmpty(w)
	w.Record.Run.Lease = store.Lease{RunID: w.Record.Run.Lease.RunID, Generation: w.Record.Run.Lease.Generation}
	return w
}

// copyWhole copies w's slices, so that an edit of the copy leaves w be
// (bodies are shared: no edit writes into one).
func copyWhole(w store.WholeRun) store.WholeRun {
	c := w
	c.Record.Events = append([]store.Event(nil), w.Record.Events...)
	c.Record.Intents = append([]store.Intent(nil), w.Record.Intents...)
	c.Record.Attempts = append([]store.Attempt(nil), w.Record.Attempts...)
	c.Record.Receipts = append([]store.Receipt(nil), w.Record.Receipts...)
	c.Record.Approvals = append([]store.Approval(nil), w.Record.Approvals...)
	c.Grants = append([]store.Approval(nil), w.Grants...)
	c.Inbox = append([]store.Inbound(nil), w.Inbox...)
	c.Trace = append([]store.TraceRecord(nil), w.Trace...)
	c.Notices = append([]store.Notice(nil), w.Notices...)
	return c
}

// renamed is a copy of w under run id id: the same records, keys, grant
// ids and nonces.
func renamed(w store.WholeRun, id string) store.WholeRun {
	c := copyWhole(w)
	c.Record.Run.ID, c.Record.Run.Lease.RunID = id, id
	for i := range c.Record.Intents {
		c.Record.Intents[i].RunID = id
	}
	for i := range c.Grants {
		c.Grants[i].RunID = id
	}
	for i := range c.Record.Approvals {
		c.Record.Approvals[i].RunID = id
	}
	for i := range c.Inbox {
		c.Inbox[i].RunID = id
	}
	return c
}

// own gives w's intents, grants and nonces ids of their own, ending in
// suffix.
func own(w *store.WholeRun, suffix string) {
	ownKeys(w, suffix)
	ownGrants(w, suffix, true)
}

// ownKeys gives w's intents ids and idempotency keys of their own, ending
// in suffix; their attempts, receipts and the grants they consumed follow.
func ownKeys(w *store.WholeRun, suffix string) {
	ids := map[string]string{}
	for i := range w.Record.Intents {
		in := &w.Record.Intents[i]
		ids[in.ID] = in.ID + suffix
		in.ID, in.IdempotencyKey = in.ID+suffix, in.IdempotencyKey+suffix
	}
	for i := range w.Record.Attempts {
		w.Record.Attempts[i].IntentID = ids[w.Record.Attempts[i].IntentID]
	}
	for i := range w.Record.Receipts {
		w.Record.Receipts[i].IntentID = ids[w.Record.Receipts[i].IntentID]
	}
	for i := range w.Grants {
		if by := w.Grants[i].ConsumedBy; by != "" {
			w.Grants[i].ConsumedBy = ids[by]
		}
	}
}

// ownGrants gives w's grants ids of their own, ending in suffix, and with
// nonces their nonces too; the intents that consumed them follow.
func ownGrants(w *store.WholeRun, suffix string, nonces bool) {
	for i := range w.Grants {
		w.Grants[i].ID += suffix
		if nonces {
			w.Grants[i].Nonce += suffix
		}
	}
	for i := range w.Record.Intents {
		if w.Record.Intents[i].ApprovalID != "" {
			w.Record.Intents[i].ApprovalID += suffix
		}
	}
	syncApprovals(w)
}

func listedRuns(t *testing.T, s store.Store) []string {
	t.Helper()
	runs, err := s.Runs(ctx, "", 100)
	must(t, err)
	return ids(runs)
}

func wholeText(w store.WholeRun) string {
	return fmt.Sprintf("%+v grants=%+v inbox=%+v trace=%+v", w.Record, w.Grants, w.Inbox, w.Trace)
}

// testMoveOut holds store.MoveFencer to its contract: a live run is
// fenced out (no writer commits to it, none takes it up) unless a
// runner's lease on it is live; fencing again changes nothing; the fence
// is lifted back to the quarantine the run had; ended and unknown runs are
// refused.
func testMoveOut(t *testing.T, s store.Store, c *Clock) {
	f, ok := store.MoveFencerOf(s)
	if !ok {
		t.Skip("runs do not move out of this store")
	}
	newRun(t, s, "mo-live")
	old, err := s.AcquireLease(ctx, "mo-live", "w", time.Minute)
	must(t, err)
	must(t, s.Commit(ctx, old, store.Tick{ExpectHead: 0, State: "WAIT", Events: []store.Event{Ev("A", `{}`)}}))
	before := Snapshot(t, s, "mo-live")
	_, err = f.MoveOut(ctx, "mo-live", "there")
	mustCode(t, err, store.CodeLeaseHeld)
	if r, _ := s.Run(ctx, "mo-live"); r.Quarantine != "" || r.Lease.Owner != "w" {
		t.Fatalf("a refused move out changed the run: %+v", r)
	}
	c.Advance(2 * time.Minute) // the runner's lease runs out
	r, err := f.MoveOut(ctx, "mo-live", "there")
	must(t, err)
	if to, prev, moved := store.MovedFrom(r.Quarantine); !moved || to != "there" || prev != "" || r.Lease.Owner != "" {
		t.Fatalf("moved out: %+v", r)
	}
	if got, err := s.Run(ctx, "mo-live"); err != nil || got.Quarantine != r.Quarantine || got.Lease.Owner != "" {
		t.Fatalf("the store reads %+v, %v; MoveOut said %+v", got, err, r)
	}
	mustCode(t, s.Commit(ctx, old, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("LATE", `{}`)}}), store.CodeQuarantined)
	if _, err := s.AcquireLease(ctx, "mo-live", "w2", time.Minute); err == nil {
		t.Fatal("a runner took up a run moved out")
	}
	if live, _ := s.Live(ctx); slices.Contains(live, "mo-live") {
		t.Fatal("a run moved out is listed live")
	}
	// Input for it, and an approval with its grant, are refused, naming
	// where it went: it would never take them here.
	in := Inb("mo-live", "mo-late", "INPUT", `{"late":true}`)
	if err := s.Submit(ctx, in); store.CodeOf(err) != store.CodeInvalidTransition || !strings.Contains(err.Error(), "there") {
		t.Fatalf("input for a run moved out: %v", err)
	}
	mustCode(t, s.Submit(ctx, grantWith("mo-live", "mo-approve", "mo-g", "mo-n", c.Now().Add(time.Hour))), store.CodeInvalidTransition)
	if got, _ := s.Inbox(ctx, "mo-live", false); len(got) != 0 {
		t.Fatalf("refused input was written: %+v", got)
	}
	if _, err := s.Approval(ctx, "mo-g"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a refused approval's grant was written: %v", err)
	}
	c.Advance(time.Second)
	again, err := f.MoveOut(ctx, "mo-live", "elsewhere") // moved to "there" already: as it is
	must(t, err)
	if !reflect.DeepEqual(again, r) {
		t.Fatalf("moving out again changed the run:\n%+v\n%+v", again, r)
	}
	must(t, f.CancelMove(ctx, "mo-live"))
	mustCode(t, f.CancelMove(ctx, "mo-live"), store.CodeInvalidTransition)
	l, err := s.AcquireLease(ctx, "mo-live", "w2", time.Minute)
	must(t, err)
	must(t, s.Submit(ctx, in))
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("B", `{}`)}, Consume: []string{in.ID}}))
	if after := Snapshot(t, s, "mo-live"); after == before {
		t.Fatal("the run did not go on after its move was cancelled")
	}
	must(t, s.ReleaseLease(ctx, l))

	// A quarantined run keeps its reason through a move and back.
	newRun(t, s, "mo-parked")
	must(t, s.Quarantine(ctx, "mo-parked", "tripwire: budget overrun"))
	r, err = f.MoveOut(ctx, "mo-parked", "there")
	must(t, err)
	if _, prev, moved := store.MovedFrom(r.Quarantine); !moved || prev != "tripwire: budget overrun" {
		t.Fatalf("moved out: %q", r.Quarantine)
	}
	must(t, f.CancelMove(ctx, "mo-parked"))
	if r, _ := s.Run(ctx, "mo-parked"); r.Quarantine != "tripwire: budget overrun" {
		t.Fatalf("after the move was cancelled the run is quarantined %q", r.Quarantine)
	}

	EndedWithEverything(t, s, c, "mo-ended")
	_, err = f.MoveOut(ctx, "mo-ended", "there")
	mustCode(t, err, store.CodeInvalidTransition)
	_, err = f.MoveOut(ctx, "mo-none", "there")
	mustCode(t, err, store.CodeNotFound)
	mustCode(t, f.CancelMove(ctx, "mo-none"), store.CodeNotFound)
	mustCode(t, f.CancelMove(ctx, "mo-ended"), store.CodeInvalidTransition)
}
