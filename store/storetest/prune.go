package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// prunedRecord is everything a store returns of a run, read through the
// Store's and the Pruner's methods: what Prune must remove whole, or
// leave exactly as it was.
type prunedRecord struct {
	Run        store.Run
	Events     []store.Event
	Checkpoint store.Checkpoint
	Intents    []store.Intent
	Attempts   map[string][]store.Attempt
	Receipts   []store.Receipt
	Grants     []store.Approval
	Inbox      []store.Inbound
	Trace      []store.TraceRecord
}

func readPruned(t *testing.T, s store.Store, p store.Pruner, run string) prunedRecord {
	t.Helper()
	var r prunedRecord
	var err error
	r.Run, err = s.Run(ctx, run)
	must(t, err)
	r.Events, err = s.Events(ctx, run, 0)
	must(t, err)
	switch cp, err := s.Checkpoint(ctx, run); store.CodeOf(err) {
	case store.CodeNotFound:
	default:
		must(t, err)
		r.Checkpoint = cp
	}
	r.Intents, err = s.Intents(ctx, run)
	must(t, err)
	r.Attempts = map[string][]store.Attempt{}
	for _, in := range r.Intents {
		ats, err := s.Attempts(ctx, in.ID)
		must(t, err)
		r.Attempts[in.ID] = ats
	}
	r.Receipts, err = s.Receipts(ctx, run)
	must(t, err)
	r.Grants, err = p.Grants(ctx, run)
	must(t, err)
	r.Inbox, err = s.Inbox(ctx, run, false)
	must(t, err)
	r.Trace, err = s.Trace(ctx, run)
	must(t, err)
	return r
}

// counts is what r holds, as Pruning.Kept counts it.
func (r prunedRecord) counts() store.RecordCounts {
	c := store.RecordCounts{Events: int64(len(r.Events)), Intents: int64(len(r.Intents)), Receipts: int64(len(r.Receipts)),
		Grants: int64(len(r.Grants)), Inbox: int64(len(r.Inbox)), Trace: int64(len(r.Trace))}
	for _, ats := range r.Attempts {
		c.Attempts += int64(len(ats))
	}
	return c
}

// EndedWithEverything makes run an ended run holding a record of every
// kind: inbox entries (one consumed, one left unread), two ticks of
// events with trace and a checkpoint, two intents (one consuming a grant)
// with attempts and receipts, a grant never consumed and one revoked.
func EndedWithEverything(t *testing.T, s store.Store, c *Clock, run string) {
	t.Helper()
	first := Inb(run, run+"-start", "INPUT", `{"amount":10}`)
	must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED", Labels: map[string]string{"order": run, "team": "refunds"}}, first))
	grant(t, s, run+"-g1", run, run+"-n1", c.Now().Add(time.Hour))
	grant(t, s, run+"-g2", run, run+"-n2", c.Now().Add(time.Hour))
	grant(t, s, run+"-g3", run, run+"-n3", c.Now().Add(time.Hour))
	must(t, s.RevokeApproval(ctx, run+"-g3"))
	l, err := s.AcquireLease(ctx, run, "w", time.Hour)
	must(t, err)
	in1, in2 := In(run+"-i1", run+"-k1", "refund 10"), In(run+"-i2", run+"-k2", "email")
	in1.ApprovalID = run + "-g1"
	cp := []byte(`{"s":1}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Consume: []string{first.ID},
		Events:     []store.Event{Ev("INPUT", `{"amount":10}`), Ev("AUTH", `{"ok":true}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
		Intents:    []store.Intent{in1, in2},
		Approvals:  []store.ApprovalUse{{ApprovalID: in1.ApprovalID, IntentID: in1.ID, Check: func(store.Approval, time.Time) error { return nil }}},
		Trace:      []store.TraceRecord{{Kind: "decision", Body: []byte(`{"d":1}`)}, {Kind: "gate", Body: []byte(`{"g":2}`)}}}))
	for _, in := range []store.Intent{in1, in2} {
		_, err := s.BeginAttempt(ctx, l, in.ID)
		must(t, err)
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Results: []store.AttemptResult{{IntentID: in2.ID, N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry}}}))
	_, err = s.BeginAttempt(ctx, l, in2.ID)
	must(t, err)
	var results []store.AttemptResult
	var receipts []store.Receipt
	for _, a := range []struct {
		id string
		n  int64
	}{{in1.ID, 1}, {in2.ID, 2}} {
		rc := []byte(fmt.Sprintf(`{"intent":%q,"outcome":"confirmed_success"}`, a.id))
		results = append(results, store.AttemptResult{IntentID: a.id, N: a.n, Status: store.AttemptSucceeded, Outbox: store.OutboxDone})
		receipts = append(receipts, store.Receipt{IntentID: a.id, Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)})
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Results: results, Receipts: receipts}))
	must(t, s.Submit(ctx, Inb(run, run+"-late", "INPUT", `{"late":true}`)))
	cp2 := []byte(`{"s":2}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, State: "SUCCEEDED", Outcome: "success", Events: []store.Event{Ev("END", `{}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp2, Digest: store.BodyDigest(cp2)},
		Trace:      []store.TraceRecord{{Kind: "end", Body: []byte(`{}`)}}}))
	must(t, s.ReleaseLease(ctx, l))
}

// testPrune holds Prune to its contract: an ended run's record goes whole
// and its header stays; anything else is refused and changes nothing.
func testPrune(t *testing.T, s store.Store, c *Clock) {
	p, ok := store.PrunerOf(s)
	if !ok {
		t.Skip("this store does not prune")
	}
	EndedWithEverything(t, s, c, "pr-a")
	EndedWithEverything(t, s, c, "pr-b")
	newRun(t, s, "pr-live")
	l, err := s.AcquireLease(ctx, "pr-live", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("WAIT", `{}`)}}))

	a, b, live := readPruned(t, s, p, "pr-a"), readPruned(t, s, p, "pr-b"), readPruned(t, s, p, "pr-live")
	want := store.RecordCounts{Events: 3, Intents: 2, Attempts: 3, Receipts: 2, Grants: 3, Inbox: 2, Trace: 3}
	if got := a.counts(); got != want {
		t.Fatalf("the ended run holds %+v, want %+v", got, want)
	}
	archive := store.BodyDigest([]byte("the archive"))
	ok1 := store.Pruning{RunID: "pr-a", HeadHash: a.Run.HeadHash, Archive: archive, Kept: want}
	unchanged := func(what string) {
		t.Helper()
		for _, r := range []prunedRecord{a, b, live} {
			if got := readPruned(t, s, p, r.Run.ID); !reflect.DeepEqual(got, r) {
				t.Fatalf("%s changed run %s:\nbefore %+v\nafter  %+v", what, r.Run.ID, r, got)
			}
		}
		if _, err := p.Pruning(ctx, "pr-a"); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("%s: Pruning of a run not pruned: %v, want NOT_FOUND", what, err)
		}
	}
	unchanged("reading")

	with := func(edit func(*store.Pruning)) store.Pruning { return edited(ok1, edit) }
	for _, tc := range []struct {
		name string
		p    store.Pruning
		code store.Code
	}{
		{"no run id", with(func(q *store.Pruning) { q.RunID = "" }), store.CodeInvalidInput},
		{"a head hash of another shape", with(func(q *store.Pruning) { q.HeadHash = "abc" }), store.CodeInvalidInput},
		{"an archive digest of another shape", with(func(q *store.Pruning) { q.Archive = "sha256:XYZ" }), store.CodeInvalidInput},
		{"a negative count", with(func(q *store.Pruning) { q.Kept.Trace = -1 }), store.CodeInvalidInput},
		{"no such run", with(func(q *store.Pruning) { q.RunID = "pr-nope" }), store.CodeNotFound},
		{"a live run", store.Pruning{RunID: "pr-live", HeadHash: live.Run.HeadHash, Kept: live.counts()}, store.CodeInvalidTransition},
		{"another head hash", with(func(q *store.Pruning) { q.HeadHash = store.GenesisHash }), store.CodeHeadMismatch},
		{"an event more", with(func(q *store.Pruning) { q.Kept.Events++ }), store.CodeHeadMismatch},
		{"an intent fewer", with(func(q *store.Pruning) { q.Kept.Intents-- }), store.CodeHeadMismatch},
		{"an attempt more", with(func(q *store.Pruning) { q.Kept.Attempts++ }), store.CodeHeadMismatch},
		{"a receipt fewer", with(func(q *store.Pruning) { q.Kept.Receipts-- }), store.CodeHeadMismatch},
		{"a grant fewer", with(func(q *store.Pruning) { q.Kept.Grants-- }), store.CodeHeadMismatch},
		{"an inbox entry more", with(func(q *store.Pruning) { q.Kept.Inbox++ }), store.CodeHeadMismatch},
		{"a trace record fewer", with(func(q *store.Pruning) { q.Kept.Trace-- }), store.CodeHeadMismatch},
	} {
		if err := p.Prune(ctx, tc.p); store.CodeOf(err) != tc.code {
			t.Fatalf("%s: Prune = %v, want code %s", tc.name, err, tc.code)
		}
		unchanged(tc.name)
	}

	c.Advance(time.Minute)
	must(t, p.Prune(ctx, ok1))
	got, err := p.Pruning(ctx, "pr-a")
	must(t, err)
	if wantP := with(func(q *store.Pruning) { q.At = c.Now() }); !reflect.DeepEqual(got, wantP) {
		t.Fatalf("Pruning = %+v, want %+v", got, wantP)
	}
	after := readPruned(t, s, p, "pr-a")
	if !reflect.DeepEqual(after.Run, a.Run) {
		t.Fatalf("the header changed:\nbefore %+v\nafter  %+v", a.Run, after.Run)
	}
	if n := after.counts(); n != (store.RecordCounts{}) || after.Checkpoint.Digest != "" {
		t.Fatalf("a pruned run still holds %+v (checkpoint %q)", n, after.Checkpoint.Digest)
	}
	for _, id := range []string{"pr-a-g1", "pr-a-g2", "pr-a-g3"} {
		if _, err := s.Approval(ctx, id); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("grant %s of a pruned run: %v, want NOT_FOUND", id, err)
		}
	}
	for _, id := range []string{"pr-a-i1", "pr-a-i2"} {
		if ats, err := s.Attempts(ctx, id); err != nil || len(ats) != 0 {
			t.Fatalf("attempts of %s after pruning: %v, %v", id, ats, err)
		}
	}
	for _, r := range []prunedRecord{b, live} {
		if got := readPruned(t, s, p, r.Run.ID); !reflect.DeepEqual(got, r) {
			t.Fatalf("pruning pr-a changed run %s", r.Run.ID)
		}
	}
	// The header keeps the id: the run cannot be started again, and it is
	// listed and counted as the ended run it is.
	mustCode(t, s.CreateRun(ctx, store.Run{ID: "pr-a", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}), store.CodeExists)
	runs, err := s.Runs(ctx, "", 10)
	must(t, err)
	if len(runs) != 3 || runs[0].ID != "pr-a" || runs[0].Outcome != "success" {
		t.Fatalf("runs after pruning: %+v", runs)
	}
	// The census taken by paging (a store that prunes but takes no census)
	// counts the pruned runs as the store's.
	noCensus := struct {
		store.Store
		store.Pruner
	}{s, p}
	if pc, err := store.TakeCensus(ctx, noCensus, store.CensusQuery{ExpiredBy: c.Now()}); err != nil || pc.Pruned != 1 || pc.Ended != 2 {
		t.Fatalf("census by paging after pruning: %+v, %v", pc, err)
	}
	if ct, ok := store.CensusTakerOf(s); ok {
		cs, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: c.Now()})
		must(t, err)
		if cs.Runs != 3 || cs.Ended != 2 || cs.Live != 1 || cs.Pruned != 1 {
			t.Fatalf("census after pruning: %+v", cs)
		}
	}
	// Its intents' keys stay taken, each bound to its content.
	newRun(t, s, "pr-again")
	la, err := s.AcquireLease(ctx, "pr-again", "w", time.Hour)
	must(t, err)
	mustCode(t, s.Commit(ctx, la, store.Tick{Intents: []store.Intent{In("pr-again-i1", "pr-a-k1", "refund 10")}}), store.CodeExists)
	mustCode(t, s.Commit(ctx, la, store.Tick{Intents: []store.Intent{In("pr-again-i2", "pr-a-k2", "refund 99")}}), store.CodeIdempotencyConflict)
	must(t, s.Commit(ctx, la, store.Tick{Intents: []store.Intent{In("pr-again-i3", "pr-again-k3", "refund 10")}}))
	// Once is all: the run was pruned.
	mustCode(t, p.Prune(ctx, ok1), store.CodeInvalidTransition)
	mustCode(t, p.Prune(ctx, store.Pruning{RunID: "pr-a", HeadHash: a.Run.HeadHash}), store.CodeInvalidTransition)
	mustCode(t, s.Submit(ctx, Inb("pr-a", "after", "INPUT", `{}`)), store.CodeInvalidTransition)
	// A discarded record (no archive) is pruned the same way.
	must(t, p.Prune(ctx, store.Pruning{RunID: "pr-b", HeadHash: b.Run.HeadHash, Kept: b.counts()}))
	if got, err := p.Pruning(ctx, "pr-b"); err != nil || got.Archive != "" || got.Kept != b.counts() {
		t.Fatalf("Pruning of a discarded record: %+v, %v", got, err)
	}

	// Two prunings of one run at once: one removes it, the other is told
	// it was pruned already; nothing is half done.
	EndedWithEverything(t, s, c, "pr-race")
	race := readPruned(t, s, p, "pr-race")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- p.Prune(ctx, store.Pruning{RunID: "pr-race", HeadHash: race.Run.HeadHash, Kept: race.counts()})
		}()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || store.CodeOf(e1)+store.CodeOf(e2) != store.CodeInvalidTransition {
		t.Fatalf("two prunings at once: %v and %v; want one to succeed and one INVALID_TRANSITION", e1, e2)
	}
	if after := readPruned(t, s, p, "pr-race"); after.counts() != (store.RecordCounts{}) {
		t.Fatalf("after two prunings at once the run holds %+v", after.counts())
	}

	// An ended run with an effect not done, or quarantined, is refused,
	// where the store lets such a run be.
	newRun(t, s, "pr-open")
	l, err = s.AcquireLease(ctx, "pr-open", "w", time.Hour)
	must(t, err)
	if err := s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "FAILED", Outcome: "failure", Events: []store.Event{Ev("END", `{}`)},
		Intents: []store.Intent{In("pr-open-i", "pr-open-k", "x")}}); err == nil {
		open := readPruned(t, s, p, "pr-open")
		ok := store.Pruning{RunID: "pr-open", HeadHash: open.Run.HeadHash, Kept: open.counts(), Open: 1}
		for _, tc := range []struct {
			name string
			p    store.Pruning
			code store.Code
		}{
			{"its open effect not kept", edited(ok, func(q *store.Pruning) { q.Open = 0 }), store.CodeInvalidTransition},
			{"a negative number of open effects", edited(ok, func(q *store.Pruning) { q.Open = -1 }), store.CodeInvalidInput},
			{"more open effects than intents", edited(ok, func(q *store.Pruning) { q.Open = 2 }), store.CodeInvalidInput},
			{"an intent more, both open", edited(ok, func(q *store.Pruning) { q.Open, q.Kept.Intents = 2, 2 }), store.CodeHeadMismatch},
		} {
			mustCode(t, p.Prune(ctx, tc.p), tc.code)
			if got := readPruned(t, s, p, "pr-open"); !reflect.DeepEqual(got, open) {
				t.Fatalf("a refused pruning (%s) changed the run with an open effect", tc.name)
			}
		}
		// Kept open as the caller says, its effect goes with the record,
		// counted in the pruning, and its key stays taken.
		must(t, p.Prune(ctx, ok))
		got, err := p.Pruning(ctx, "pr-open")
		must(t, err)
		if got.Open != 1 || got.Kept != open.counts() {
			t.Fatalf("Pruning of a run taken with an effect open: %+v", got)
		}
		if after := readPruned(t, s, p, "pr-open"); after.counts() != (store.RecordCounts{}) {
			t.Fatalf("a run pruned with an effect open still holds %+v", after.counts())
		}
		newRun(t, s, "pr-open-again")
		la, err := s.AcquireLease(ctx, "pr-open-again", "w", time.Hour)
		must(t, err)
		mustCode(t, s.Commit(ctx, la, store.Tick{Intents: []store.Intent{In("pr-open-again-i", "pr-open-k", "x")}}), store.CodeExists)
	}
	// A run whose effects are all closed is refused when the caller says
	// it kept one open: its record is not the one the caller kept.
	EndedWithEverything(t, s, c, "pr-closed")
	closed := readPruned(t, s, p, "pr-closed")
	mustCode(t, p.Prune(ctx, store.Pruning{RunID: "pr-closed", HeadHash: closed.Run.HeadHash, Kept: closed.counts(), Open: 1}), store.CodeHeadMismatch)
	if got := readPruned(t, s, p, "pr-closed"); !reflect.DeepEqual(got, closed) {
		t.Fatal("a refused pruning changed a run with every effect closed")
	}
	newRun(t, s, "pr-quarantined")
	l, err = s.AcquireLease(ctx, "pr-quarantined", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "SUCCEEDED", Outcome: "success", Events: []store.Event{Ev("END", `{}`)}}))
	if s.Quarantine(ctx, "pr-quarantined", "checkpoint digest mismatch") == nil {
		q := readPruned(t, s, p, "pr-quarantined")
		mustCode(t, p.Prune(ctx, store.Pruning{RunID: "pr-quarantined", HeadHash: q.Run.HeadHash, Kept: q.counts()}), store.CodeInvalidTransition)
	}
}

// edited returns a copy of p changed by edit.
func edited(p store.Pruning, edit func(*store.Pruning)) store.Pruning { edit(&p); return p }

// prunerOnly shows a store's Store and Pruner alone: PrunableRuns pages
// through it.
type prunerOnly struct {
	store.Store
	store.Pruner
}

// The runs prune may take, as the store lists them, are what paging
// through every header and reading each ended run's pruning finds, for
// every bound of time, cursor and limit: ended, not quarantined, written
// before the bound, not pruned yet, in creation order.
func testPrunable(t *testing.T, s store.Store, c *Clock) {
	p, ok := store.PrunerOf(s)
	if !ok {
		t.Skip("this store does not prune")
	}
	t0 := c.Now()
	EndedWithEverything(t, s, c, "pa-1")
	c.Advance(time.Hour)
	EndedWithEverything(t, s, c, "pa-2")
	newRun(t, s, "pa-live")
	EndedWithEverything(t, s, c, "pa-3")
	quarantined := s.Quarantine(ctx, "pa-3", "checkpoint digest mismatch") == nil
	c.Advance(time.Hour)
	EndedWithEverything(t, s, c, "pa-4")
	r2 := readPruned(t, s, p, "pa-2")
	must(t, p.Prune(ctx, store.Pruning{RunID: "pa-2", HeadHash: r2.Run.HeadHash, Kept: r2.counts()}))

	for _, before := range []time.Time{t0, t0.Add(time.Nanosecond), t0.Add(90 * time.Minute), c.Now().Add(time.Hour)} {
		for _, after := range []string{"", "pa-1", "pa-live", "pa-4", "nowhere"} {
			for _, limit := range []int{1, 2, 500} {
				got, err := store.PrunableRuns(ctx, s, before, after, limit)
				must(t, err)
				want, err := store.PrunableRuns(ctx, prunerOnly{s, p}, before, after, limit)
				must(t, err)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("prunable before %s after %q, %d at most: the store lists %+v, paging finds %+v", before, after, limit, got, want)
				}
			}
		}
	}
	var ids []string
	all, err := store.PrunableRuns(ctx, s, c.Now().Add(time.Hour), "", 500)
	must(t, err)
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	want := []string{"pa-1", "pa-3", "pa-4"}
	if quarantined {
		want = []string{"pa-1", "pa-4"}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("prunable runs %v, want %v", ids, want)
	}
	if _, err := store.PrunableRuns(ctx, s, c.Now(), "", 0); store.CodeOf(err) != store.CodeInvalidInput {
		t.Fatalf("a limit of 0: %v", err)
	}
}
