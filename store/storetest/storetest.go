// Package storetest is the conformance suite every store.Store must pass.
// One suite, run against each backend, so that the promises the runner
// relies on (fencing, atomic ticks, one-time approvals, append-only
// evidence) hold the same way on every database.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// Clock is a settable clock the suite hands to the store under test.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now reads the clock.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Opener opens a fresh, empty store that reads the given clock.
type Opener func(t *testing.T, clock func() time.Time) store.Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, c *Clock)
	}{
		{"RunsCreateAndPage", testRuns},
		{"LeaseFencing", testLeaseFencing},
		{"CommitChainsEvents", testCommitChain},
		{"HeadMismatch", testHeadMismatch},
		{"AtomicTickOnApprovalFailure", testAtomicApproval},
		{"ApprovalOneTimeAndExpiry", testApprovalLifecycle},
		{"ConcurringApprovals", testConcurringApprovals},
		{"IdempotencyKeys", testIdempotency},
		{"AttemptsAndReceipts", testAttempts},
		{"QuarantineRefusesWrites", testQuarantine},
		{"ReleaseLiftsOnlyAPark", testRelease},
		{"EndedRunRefusesCommits", testEnded},
		{"InvalidTicksWriteNothing", testInvalidTicks},
		{"ConcurrentWritersOneWinner", testConcurrentWriters},
		{"Inbox", testInbox},
		{"SubmitInTick", testSubmitInTick},
		{"SubmitInTickRacesSubmit", testSubmitInTickRacesSubmit},
		{"ExpectInboxEmpty", testExpectInboxEmpty},
		{"BeginInTick", testBeginInTick},
		{"LargeTick", testLargeTick},
		{"Ready", testReady},
		{"CreateRunWithInput", testCreateRunWithInput},
		{"ConcurrentRunsFencedAlone", testConcurrentRunsFencedAlone},
		{"RunDefinitionDigest", testRunDefinitionDigest},
		{"MayLag", testMayLag},
		{"CreateRunLeased", testCreateRunLeased},
		{"CreateRunCommit", testCreateRunCommit},
		{"Settle", testSettle},
		{"DueTimes", testDueTimes},
		{"OpenOutbox", testOpenOutbox},
		{"Census", testCensus},
		{"MatchRuns", testMatchRuns},
		{"SubmitWithGrant", testSubmitWithGrant},
		{"SubmitSeen", testSubmitSeen},
		{"Prune", testPrune},
		{"Prunable", testPrunable},
		{"Duties", testDuties},
		{"MoveOut", testMoveOut},
		{"Notices", testNotices},
		{"QuarantineNotices", testQuarantineNotices},
		{"NoticeReleaseWakes", testNoticeReleaseWakes},
		{"TellRun", testTellRun},
		{"SharedLimits", testSharedLimits},
		{"DeliveryParking", testDeliveryParking},
		{"SchedulePausing", testSchedulePausing},
		{"ScheduleHeads", testScheduleHeads},
		{"RunLabels", testRunLabels},
		{"FollowUps", testFollowUps},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock()
			s := open(t, c.Now)
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s, c)
		})
	}
}

var ctx = context.Background()

func mustCode(t *testing.T, err error, code store.Code) {
	t.Helper()
	if got := store.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %s", err, got, code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newRun(t *testing.T, s store.Store, id string) {
	t.Helper()
	must(t, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}))
}

// Ev builds an event with a correct digest.
func Ev(kind, body string) store.Event {
	return store.Event{Kind: kind, Body: []byte(body), Digest: store.BodyDigest([]byte(body))}
}

// In builds an intent with a correct digest.
func In(id, key, content string) store.Intent {
	body := []byte(fmt.Sprintf(`{"intent_id":%q,"content":%q}`, id, content))
	return store.Intent{ID: id, EffectType: "refund", IdempotencyKey: key, ContentDigest: store.BodyDigest([]byte(content)), Body: body, Digest: store.BodyDigest(body)}
}

func grant(t *testing.T, s store.Store, id, run, nonce string, expires time.Time) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"approval_id":%q,"nonce":%q}`, id, nonce))
	must(t, s.GrantApproval(ctx, store.Approval{ID: id, RunID: run, RequestDigest: store.BodyDigest([]byte("req")), Nonce: nonce,
		Body: body, Digest: store.BodyDigest(body), ExpiresAt: expires}))
}

func testRuns(t *testing.T, s store.Store, _ *Clock) {
	for i := 0; i < 5; i++ {
		newRun(t, s, fmt.Sprintf("run-%d", i))
	}
	mustCode(t, s.CreateRun(ctx, store.Run{ID: "run-0", WorkflowID: "wf", State: "CREATED"}), store.CodeExists)
	mustCode(t, s.CreateRun(ctx, store.Run{ID: "", WorkflowID: "wf", State: "CREATED"}), store.CodeInvalidInput)
	page1, err := s.Runs(ctx, "", 3)
	must(t, err)
	page2, err := s.Runs(ctx, page1[len(page1)-1].ID, 3)
	must(t, err)
	var ids []string
	for _, r := range append(page1, page2...) {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[run-0 run-1 run-2 run-3 run-4]" {
		t.Fatalf("paging gave %v", ids)
	}
	r, err := s.Run(ctx, "run-3")
	must(t, err)
	if r.Head != 0 || r.HeadHash != store.GenesisHash || r.State != "CREATED" {
		t.Fatalf("fresh run = %+v", r)
	}
	_, err = s.Run(ctx, "nope")
	mustCode(t, err, store.CodeNotFound)
}

func testLeaseFencing(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	a, err := s.AcquireLease(ctx, "r", "runner-a", 10*time.Second)
	must(t, err)
	if a.Generation != 1 {
		t.Fatalf("first generation = %d", a.Generation)
	}
	_, err = s.AcquireLease(ctx, "r", "runner-b", 10*time.Second)
	mustCode(t, err, store.CodeLeaseHeld)
	must(t, s.Commit(ctx, a, store.Tick{ExpectHead: 0, Events: []store.Event{Ev("E", `{"n":1}`)}}))

	// runner-a stalls past its lease; runner-b takes over.
	c.Advance(11 * time.Second)
	mustCode(t, s.Commit(ctx, a, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("E", `{"n":2}`)}}), store.CodeFenced)
	b, err := s.AcquireLease(ctx, "r", "runner-b", 10*time.Second)
	must(t, err)
	if b.Generation != 2 {
		t.Fatalf("takeover generation = %d", b.Generation)
	}
	// The stale writer can do nothing at all, even though time is now
	// within what it believes its lease to be.
	a.ExpiresAt = c.Now().Add(time.Hour)
	mustCode(t, s.Commit(ctx, a, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("E", `{"n":2}`)}}), store.CodeFenced)
	_, err = s.RenewLease(ctx, a, time.Minute)
	mustCode(t, err, store.CodeFenced)
	mustCode(t, s.ReleaseLease(ctx, a), store.CodeFenced)
	_, err = s.BeginAttempt(ctx, a, "any")
	mustCode(t, err, store.CodeFenced)
	must(t, s.Commit(ctx, b, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("E", `{"n":2}`)}}))

	// Renewal keeps a lease alive; release lets another in at once with a
	// higher generation.
	c.Advance(8 * time.Second)
	b, err = s.RenewLease(ctx, b, 10*time.Second)
	must(t, err)
	c.Advance(8 * time.Second)
	must(t, s.Commit(ctx, b, store.Tick{ExpectHead: 2, Events: []store.Event{Ev("E", `{"n":3}`)}}))
	must(t, s.ReleaseLease(ctx, b))
	a2, err := s.AcquireLease(ctx, "r", "runner-a", time.Second)
	must(t, err)
	if a2.Generation != 3 {
		t.Fatalf("generation after release = %d", a2.Generation)
	}
	// The same owner re-acquiring (a restarted process) also fences its
	// earlier incarnation.
	a3, err := s.AcquireLease(ctx, "r", "runner-a", time.Second)
	must(t, err)
	mustCode(t, s.Commit(ctx, a2, store.Tick{ExpectHead: 3}), store.CodeFenced)
	must(t, s.Commit(ctx, a3, store.Tick{ExpectHead: 3}))
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	for i, e := range evs {
		want := []int64{1, 2, 2}[i]
		if e.Generation != want {
			t.Fatalf("event %d written by generation %d, want %d", e.Seq, e.Generation, want)
		}
	}
}

func testCommitChain(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, err := s.AcquireLease(ctx, "r", "w", time.Minute)
	must(t, err)
	cp := []byte(`{"state":"PLAN"}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "PLAN",
		Events:     []store.Event{Ev("A", `{"a":1}`), Ev("B", `{"b":2}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, BuildDigest: "build", Body: cp, Digest: store.BodyDigest(cp)},
		Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}))
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{Ev("C", `{"c":3}`)},
		Trace: []store.TraceRecord{{Kind: "tick", Body: []byte(`{"n":2}`)}}}))
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	prev := store.GenesisHash
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			t.Fatalf("event %d breaks the chain: %+v", i, e)
		}
		prev = e.ChainHash
	}
	r, err := s.Run(ctx, "r")
	must(t, err)
	if r.Head != 3 || r.HeadHash != prev || r.State != "PLAN" {
		t.Fatalf("run header %+v", r)
	}
	tail, err := s.Events(ctx, "r", 2)
	must(t, err)
	if len(tail) != 1 || tail[0].Kind != "C" {
		t.Fatalf("events after 2 = %+v", tail)
	}
	got, err := s.Checkpoint(ctx, "r")
	must(t, err)
	if got.Seq != 2 || string(got.Body) != string(cp) || got.BuildDigest != "build" {
		t.Fatalf("checkpoint %+v", got)
	}
	tr, err := s.Trace(ctx, "r")
	must(t, err)
	if len(tr) != 2 || string(tr[1].Body) != `{"n":2}` {
		t.Fatalf("trace %+v", tr)
	}
}

func testHeadMismatch(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Minute)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{Ev("A", `{}`)}}))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{Ev("A", `{}`)}}), store.CodeHeadMismatch)
}

// snapshot summarises everything a failed commit must leave untouched.
func snapshot(t *testing.T, s store.Store, run string) string {
	t.Helper()
	r, err := s.Run(ctx, run)
	must(t, err)
	evs, _ := s.Events(ctx, run, 0)
	ins, _ := s.Intents(ctx, run)
	rcs, _ := s.Receipts(ctx, run)
	tr, _ := s.Trace(ctx, run)
	cp, _ := s.Checkpoint(ctx, run)
	return fmt.Sprintf("head=%d hash=%s state=%s outcome=%s events=%d intents=%v receipts=%d trace=%d cp=%d",
		r.Head, r.HeadHash, r.State, r.Outcome, len(evs), ins, len(rcs), len(tr), cp.Seq)
}

func testAtomicApproval(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	grant(t, s, "ap1", "r", "nonce-1", c.Now().Add(time.Minute))
	before := snapshot(t, s, "r")
	in := In("i1", "key-1", "refund 10 to alice")
	in.ApprovalID = "ap1"
	cp := []byte(`{"s":1}`)
	tick := store.Tick{ExpectHead: 0, State: "EXECUTE", Events: []store.Event{Ev("AUTH", `{}`)}, Intents: []store.Intent{in},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
		Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`{}`)}},
		Approvals: []store.ApprovalUse{{ApprovalID: "ap1", IntentID: "i1", Check: func(a store.Approval, now time.Time) error {
			return errors.New("action digest differs from the approved one")
		}}}}
	mustCode(t, s.Commit(ctx, l, tick), store.CodeApprovalRejected)
	if after := snapshot(t, s, "r"); after != before {
		t.Fatalf("a refused commit wrote something:\nbefore %s\nafter  %s", before, after)
	}
	a, _ := s.Approval(ctx, "ap1")
	if a.Status != store.ApprovalGranted {
		t.Fatalf("refused commit consumed the approval: %s", a.Status)
	}
	// The check sees the stored grant and the transaction's clock.
	var sawNow time.Time
	var sawNonce string
	tick.Approvals[0].Check = func(a store.Approval, now time.Time) error { sawNow, sawNonce = now, a.Nonce; return nil }
	must(t, s.Commit(ctx, l, tick))
	if !sawNow.Equal(c.Now()) || sawNonce != "nonce-1" {
		t.Fatalf("check saw now=%v nonce=%q", sawNow, sawNonce)
	}
	a, _ = s.Approval(ctx, "ap1")
	if a.Status != store.ApprovalConsumed || a.ConsumedBy != "i1" {
		t.Fatalf("approval after commit: %+v", a)
	}
}

func testApprovalLifecycle(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	newRun(t, s, "other")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	exp := c.Now().Add(time.Minute)
	grant(t, s, "ap1", "r", "n1", exp)
	grant(t, s, "ap2", "r", "n2", exp)
	grant(t, s, "ap3", "other", "n3", exp)
	body := []byte(`{}`)
	err := s.GrantApproval(ctx, store.Approval{ID: "dup", RunID: "r", RequestDigest: "x", Nonce: "n1", Body: body, Digest: store.BodyDigest(body), ExpiresAt: exp})
	mustCode(t, err, store.CodeExists) // a nonce is one-time across the store

	use := func(ap, intent, key string, head int64) error {
		in := In(intent, key, "c-"+intent)
		in.ApprovalID = ap
		return s.Commit(ctx, l, store.Tick{ExpectHead: head, Intents: []store.Intent{in}, Approvals: []store.ApprovalUse{{ApprovalID: ap, IntentID: intent}}})
	}
	must(t, use("ap1", "i1", "k1", 0))
	mustCode(t, use("ap1", "i2", "k2", 0), store.CodeApprovalUnavailable) // consumed
	must(t, s.RevokeApproval(ctx, "ap2"))
	mustCode(t, use("ap2", "i2", "k2", 0), store.CodeApprovalUnavailable) // revoked
	mustCode(t, s.RevokeApproval(ctx, "ap1"), store.CodeApprovalUnavailable)
	mustCode(t, use("ap3", "i2", "k2", 0), store.CodeApprovalRejected) // another run's grant
	mustCode(t, use("missing", "i2", "k2", 0), store.CodeApprovalUnavailable)

	// Expiry is exclusive: usable one nanosecond before, not at the instant.
	grant(t, s, "ap4", "r", "n4", c.Now().Add(time.Second))
	c.Advance(time.Second)
	mustCode(t, use("ap4", "i2", "k2", 0), store.CodeApprovalRejected)
	grant(t, s, "ap5", "r", "n5", c.Now().Add(time.Second))
	c.Advance(time.Second - time.Nanosecond)
	must(t, use("ap5", "i2", "k2", 0))
}

func testIdempotency(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i1", "k", "pay 5")}}))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i2", "k", "pay 500")}}), store.CodeIdempotencyConflict)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i3", "k", "pay 5")}}), store.CodeExists)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i1", "k-other", "pay 5")}}), store.CodeExists)
	ins, _ := s.Intents(ctx, "r")
	if len(ins) != 1 || ins[0].Outbox != store.OutboxPending {
		t.Fatalf("intents %+v", ins)
	}
}

func testAttempts(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i1", "k1", "x")}}))
	rc := []byte(`{"outcome":"confirmed_success"}`)
	receipt := store.Receipt{IntentID: "i1", Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}

	at, err := s.BeginAttempt(ctx, l, "i1")
	must(t, err)
	if at.N != 1 || at.Status != store.AttemptStarted {
		t.Fatalf("attempt %+v", at)
	}
	// An in-flight intent cannot be attempted again: its outcome may be
	// out in the world.
	_, err = s.BeginAttempt(ctx, l, "i1")
	mustCode(t, err, store.CodeInvalidTransition)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Results: []store.AttemptResult{{IntentID: "i1", N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry, Route: "transient"}}}))
	at, err = s.BeginAttempt(ctx, l, "i1")
	must(t, err)
	if at.N != 2 {
		t.Fatalf("second attempt n=%d", at.N)
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Results: []store.AttemptResult{{IntentID: "i1", N: 2, Status: store.AttemptUnknown, Outbox: store.OutboxReconcile}}}))
	_, err = s.BeginAttempt(ctx, l, "i1")
	mustCode(t, err, store.CodeInvalidTransition) // unknown: reconcile, never retry blindly
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0,
		Results:  []store.AttemptResult{{IntentID: "i1", N: 2, Status: store.AttemptReconciledApplied, Outbox: store.OutboxDone}},
		Receipts: []store.Receipt{receipt}}))
	ats, _ := s.Attempts(ctx, "i1")
	if len(ats) != 2 || ats[0].Status != store.AttemptFailedTransient || ats[1].Status != store.AttemptReconciledApplied {
		t.Fatalf("attempts %+v", ats)
	}
	ins, _ := s.Intents(ctx, "r")
	if ins[0].Outbox != store.OutboxDone || ins[0].Attempts != 2 {
		t.Fatalf("intent %+v", ins[0])
	}
	rcs, _ := s.Receipts(ctx, "r")
	if len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" {
		t.Fatalf("receipts %+v", rcs)
	}
	// A second receipt for the same intent is refused: receipts are evidence.
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Receipts: []store.Receipt{receipt}}), store.CodeExists)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Receipts: []store.Receipt{{IntentID: "nope", Outcome: "x", Body: rc, Digest: store.BodyDigest(rc)}}}), store.CodeInvalidTransition)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Results: []store.AttemptResult{{IntentID: "i1", N: 9, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}}), store.CodeInvalidTransition)
	_, err = s.BeginAttempt(ctx, l, "nope")
	mustCode(t, err, store.CodeNotFound)
}

func testQuarantine(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Quarantine(ctx, "r", "checkpoint digest mismatch"))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0}), store.CodeQuarantined)
	_, err := s.AcquireLease(ctx, "r", "w2", time.Hour)
	mustCode(t, err, store.CodeQuarantined)
	r, _ := s.Run(ctx, "r")
	if r.Quarantine != "checkpoint digest mismatch" {
		t.Fatalf("quarantine reason %q", r.Quarantine)
	}
	mustCode(t, s.Quarantine(ctx, "nope", "x"), store.CodeNotFound)
	mustCode(t, s.Quarantine(ctx, "r", ""), store.CodeInvalidInput)
}

func testRelease(t *testing.T, s store.Store, _ *Clock) {
	const park = store.ParkPrefix + "DEGRADED_SAFE_MODE: wedge"
	rel := store.Release{RunID: "p", Park: park, By: "ana", Role: "operator", Capability: "mrp.leave_safe_mode", Reason: "cause fixed"}
	newRun(t, s, "p")
	l, _ := s.AcquireLease(ctx, "p", "w", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Trace: []store.TraceRecord{{Kind: "tripwire", Body: []byte(`{"t":1}`)}}}))
	mustCode(t, s.Release(ctx, rel), store.CodeInvalidTransition) // not parked yet
	must(t, s.Quarantine(ctx, "p", park))

	// Bad input and a stale park write nothing.
	for _, bad := range []store.Release{{RunID: "p", Park: park, Capability: "c", Reason: "r"}, {RunID: "p", Park: park, By: "b", Reason: "r"},
		{RunID: "p", Park: park, By: "b", Capability: "c"}, {RunID: "p", By: "b", Capability: "c", Reason: "r"}} {
		mustCode(t, s.Release(ctx, bad), store.CodeInvalidInput)
	}
	other := rel
	other.Park = store.ParkPrefix + "HUMAN_RECONCILIATION: fencing"
	mustCode(t, s.Release(ctx, other), store.CodeHeadMismatch)
	missing := rel
	missing.RunID = "nope"
	mustCode(t, s.Release(ctx, missing), store.CodeNotFound)
	if tr, _ := s.Trace(ctx, "p"); len(tr) != 1 {
		t.Fatalf("refused releases wrote %d trace records", len(tr)-1)
	}

	must(t, s.Release(ctx, rel))
	r, _ := s.Run(ctx, "p")
	if r.Quarantine != "" || r.Lease.Owner != "" {
		t.Fatalf("released run: quarantine %q, lease %q", r.Quarantine, r.Lease.Owner)
	}
	live, _ := s.Live(ctx)
	if !slices.Contains(live, "p") {
		t.Fatalf("released run not live: %v", live)
	}
	tr, err := s.Trace(ctx, "p")
	must(t, err)
	if len(tr) != 2 || tr[1].Kind != store.ReleaseKind {
		t.Fatalf("trace after release: %+v", tr)
	}
	for _, want := range []string{`"by":"ana"`, `"capability":"mrp.leave_safe_mode"`, `"reason":"cause fixed"`, `"park":"tripwire DEGRADED_SAFE_MODE: wedge"`, `"at":"`} {
		if !strings.Contains(string(tr[1].Body), want) {
			t.Fatalf("release record %s lacks %s", tr[1].Body, want)
		}
	}
	mustCode(t, s.Release(ctx, rel), store.CodeInvalidTransition) // once only

	// The released run takes a lease and commits again, after the record.
	l2, err := s.AcquireLease(ctx, "p", "w2", time.Hour)
	must(t, err)
	if l2.Generation <= l.Generation {
		t.Fatalf("generation %d after %d", l2.Generation, l.Generation)
	}
	must(t, s.Commit(ctx, l2, store.Tick{ExpectHead: 0, Trace: []store.TraceRecord{{Kind: "note", Body: []byte(`{}`)}}}))
	if tr, _ := s.Trace(ctx, "p"); len(tr) != 3 || tr[2].Kind != "note" {
		t.Fatalf("trace after a commit that follows the release: %+v", tr)
	}

	// A quarantine that is not a park stays.
	newRun(t, s, "c")
	must(t, s.Quarantine(ctx, "c", "checkpoint digest mismatch"))
	mustCode(t, s.Release(ctx, store.Release{RunID: "c", Park: "checkpoint digest mismatch", By: "ana", Capability: "mrp.leave_safe_mode", Reason: "r"}), store.CodeInvalidTransition)
	if r, _ := s.Run(ctx, "c"); r.Quarantine != "checkpoint digest mismatch" {
		t.Fatalf("corrupt run released: %q", r.Quarantine)
	}
}

func testEnded(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "SUCCEEDED", Outcome: "success", Events: []store.Event{Ev("END", `{}`)}}))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("MORE", `{}`)}}), store.CodeInvalidTransition)
}

func testInvalidTicks(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	before := snapshot(t, s, "r")
	bad := Ev("A", `{}`)
	bad.Digest = store.BodyDigest([]byte(`{"x":1}`))
	in := In("i1", "k", "c")
	in.ApprovalID = "ap"
	for name, tick := range map[string]store.Tick{
		"event digest":        {Events: []store.Event{bad}},
		"event without kind":  {Events: []store.Event{{Body: []byte(`{}`), Digest: store.BodyDigest([]byte(`{}`))}}},
		"intent without key":  {Intents: []store.Intent{{ID: "i", EffectType: "x", Body: []byte(`{}`), Digest: store.BodyDigest([]byte(`{}`))}}},
		"unconsumed approval": {Intents: []store.Intent{in}},
		"stray approval use":  {Approvals: []store.ApprovalUse{{ApprovalID: "ap", IntentID: "i9"}}},
		"unfinished result":   {Results: []store.AttemptResult{{IntentID: "i", N: 1, Status: store.AttemptStarted, Outbox: store.OutboxRetry}}},
		"negative head":       {ExpectHead: -1},
	} {
		mustCode(t, s.Commit(ctx, l, tick), store.CodeInvalidInput)
		if after := snapshot(t, s, "r"); after != before {
			t.Fatalf("%s: refused tick wrote something", name)
		}
	}
}

func testConcurrentWriters(t *testing.T, s store.Store, _ *Clock) {
	const runs, writers, ticks = 4, 4, 10
	for r := 0; r < runs; r++ {
		newRun(t, s, fmt.Sprintf("r%d", r))
	}
	var wins, losses atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < runs; r++ {
		l, err := s.AcquireLease(ctx, fmt.Sprintf("r%d", r), "w", time.Hour)
		must(t, err)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(l store.Lease, w int) {
				defer wg.Done()
				for i := 0; i < ticks; i++ {
					run, err := s.Run(ctx, l.RunID)
					if err != nil {
						t.Error(err)
						return
					}
					err = s.Commit(ctx, l, store.Tick{ExpectHead: run.Head, Events: []store.Event{Ev("E", fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}})
					switch store.CodeOf(err) {
					case "":
						wins.Add(1)
					case store.CodeHeadMismatch, store.CodeUnavailable:
						losses.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			}(l, w)
		}
	}
	wg.Wait()
	var total int64
	for r := 0; r < runs; r++ {
		run, _ := s.Run(ctx, fmt.Sprintf("r%d", r))
		evs, _ := s.Events(ctx, run.ID, 0)
		prev := store.GenesisHash
		for i, e := range evs {
			if e.Seq != int64(i+1) || e.PrevHash != prev {
				t.Fatalf("run %s: chain broken at %d", run.ID, e.Seq)
			}
			prev = e.ChainHash
		}
		total += run.Head
	}
	if total != wins.Load() {
		t.Fatalf("%d commits succeeded but %d events exist", wins.Load(), total)
	}
	if wins.Load()+losses.Load() != runs*writers*ticks {
		t.Fatalf("lost outcomes: %d + %d", wins.Load(), losses.Load())
	}
}

// Inb builds an inbound event with a correct digest.
func Inb(run, id, kind, body string) store.Inbound {
	return store.Inbound{ID: id, RunID: run, Kind: kind, ActorRole: "human_approver", Actor: "alice", Capability: "approval.grant_exact_hash",
		Body: []byte(body), Digest: store.BodyDigest([]byte(body))}
}

func testInbox(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	newRun(t, s, "done")
	must(t, s.Submit(ctx, Inb("r", "a", "APPROVE", `{"x":1}`)))
	must(t, s.Submit(ctx, Inb("r", "a", "APPROVE", `{"x":1}`))) // idempotent
	mustCode(t, s.Submit(ctx, Inb("r", "a", "APPROVE", `{"x":2}`)), store.CodeExists)
	// The same body from someone else, or under another role, capability
	// or kind, is another act: never taken as this one submitted again.
	for _, edit := range []func(in *store.Inbound){
		func(in *store.Inbound) { in.Actor = "bob" },
		func(in *store.Inbound) { in.ActorRole = "human_reconciler" },
		func(in *store.Inbound) { in.Capability = "approval.deny" },
		func(in *store.Inbound) { in.Kind = "DENY" },
	} {
		other := Inb("r", "a", "APPROVE", `{"x":1}`)
		edit(&other)
		mustCode(t, s.Submit(ctx, other), store.CodeExists)
	}
	must(t, s.Submit(ctx, Inb("r", "b", "CANCEL", `{}`)))
	bad := Inb("r", "c", "X", `{}`)
	bad.Digest = "sha256:00"
	mustCode(t, s.Submit(ctx, bad), store.CodeInvalidInput)
	mustCode(t, s.Submit(ctx, Inb("nope", "a", "X", `{}`)), store.CodeNotFound)
	in, err := s.Inbox(ctx, "r", true)
	must(t, err)
	if len(in) != 2 || in[0].ID != "a" || in[1].ID != "b" || in[0].Actor != "alice" {
		t.Fatalf("inbox %+v", in)
	}
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	mustCode(t, s.Commit(ctx, l, store.Tick{Consume: []string{"zzz"}}), store.CodeInvalidTransition)
	must(t, s.Commit(ctx, l, store.Tick{Consume: []string{"a"}, Events: []store.Event{Ev("APPROVED", `{}`)}}))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Consume: []string{"a"}}), store.CodeInvalidTransition)
	in, _ = s.Inbox(ctx, "r", true)
	if len(in) != 1 || in[0].ID != "b" {
		t.Fatalf("pending after consume %+v", in)
	}
	all, _ := s.Inbox(ctx, "r", false)
	if len(all) != 2 || !all[0].Consumed {
		t.Fatalf("all %+v", all)
	}
	ld, _ := s.AcquireLease(ctx, "done", "w", time.Hour)
	must(t, s.Commit(ctx, ld, store.Tick{Outcome: "success", State: "SUCCEEDED"}))
	mustCode(t, s.Submit(ctx, Inb("done", "a", "X", `{}`)), store.CodeInvalidTransition)
	live, _ := s.Live(ctx)
	if fmt.Sprint(live) != "[r]" {
		t.Fatalf("live %v", live)
	}
}

// A tick may submit inbound events and consume them in the same
// transaction: the rows are those Submit and a consuming tick would leave,
// the same dedupe holds, and a refused tick leaves no inbound behind.
func testSubmitInTick(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	a := Inb("r", "a", "input", `{"x":1}`)
	must(t, s.Commit(ctx, l, store.Tick{Submit: []store.Inbound{a}, Consume: []string{"a"}, Events: []store.Event{Ev("ACCEPTED", `{"x":1}`)}}))
	all, err := s.Inbox(ctx, "r", false)
	must(t, err)
	if len(all) != 1 || all[0].ID != "a" || !all[0].Consumed || all[0].Seq != 1 || all[0].Kind != "input" || all[0].Actor != "alice" ||
		all[0].ActorRole != "human_approver" || all[0].Capability != "approval.grant_exact_hash" || string(all[0].Body) != `{"x":1}` || all[0].Digest != a.Digest {
		t.Fatalf("inbox after a submitting tick %+v", all)
	}
	if pending, _ := s.Inbox(ctx, "r", true); len(pending) != 0 {
		t.Fatalf("pending %+v", pending)
	}
	// Submit decides about an id a tick submitted as about its own.
	must(t, s.Submit(ctx, a))
	mustCode(t, s.Submit(ctx, Inb("r", "a", "input", `{"x":2}`)), store.CodeExists)
	// A tick never takes an id the inbox holds, whatever its content, and
	// writes nothing when it refuses.
	before := snapshot(t, s, "r")
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Submit: []store.Inbound{a}, Consume: []string{"a"}, Events: []store.Event{Ev("ACCEPTED", `{}`)}}),
		store.CodeExists)
	must(t, s.Submit(ctx, Inb("r", "b", "input", `{"x":3}`)))
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Submit: []store.Inbound{Inb("r", "b", "input", `{"x":3}`)}, Consume: []string{"b"},
		Events: []store.Event{Ev("ACCEPTED", `{}`)}}), store.CodeExists)
	if after := snapshot(t, s, "r"); after != before {
		t.Fatalf("a refused tick wrote: %s, was %s", after, before)
	}
	// Submitted entries take the next inbox positions; a pending one stays
	// pending unless the tick consumes it.
	c, d := Inb("r", "c", "input", `{"x":4}`), Inb("r", "d", "choice", `{"x":5}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Submit: []store.Inbound{c, d}, Consume: []string{"c", "d"}, Events: []store.Event{Ev("ACCEPTED", `{}`)}}))
	all, _ = s.Inbox(ctx, "r", false)
	if len(all) != 4 || all[1].ID != "b" || all[1].Consumed || all[2].ID != "c" || all[2].Seq != 3 || !all[2].Consumed || all[3].ID != "d" || all[3].Seq != 4 || !all[3].Consumed {
		t.Fatalf("inbox %+v", all)
	}
	// One tick may consume a pending entry and submit another.
	e := Inb("r", "e", "input", `{"x":6}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{e}, Consume: []string{"b", "e"}}))
	if pending, _ := s.Inbox(ctx, "r", true); len(pending) != 0 {
		t.Fatalf("pending %+v", pending)
	}
	// A failure anywhere in the tick leaves its submission out.
	f := Inb("r", "f", "input", `{"x":7}`)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{f}, Consume: []string{"f", "zzz"}}), store.CodeInvalidTransition)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Submit: []store.Inbound{f}, Consume: []string{"f"}}), store.CodeHeadMismatch)
	if all, _ = s.Inbox(ctx, "r", false); len(all) != 5 {
		t.Fatalf("a refused tick left an inbound behind: %+v", all)
	}
	// Malformed submissions are refused before any transaction.
	bad := Inb("r", "g", "input", `{}`)
	bad.Digest = "sha256:00"
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{bad}, Consume: []string{"g"}}), store.CodeInvalidInput)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{f}}), store.CodeInvalidInput)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{f, f}, Consume: []string{"f"}}), store.CodeInvalidInput)
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{Inb("other", "h", "input", `{}`)}, Consume: []string{"h"}}), store.CodeInvalidInput)
	// Fenced like every other write of a tick.
	stale := l
	stale.Generation--
	mustCode(t, s.Commit(ctx, stale, store.Tick{ExpectHead: 2, Submit: []store.Inbound{f}, Consume: []string{"f"}}), store.CodeFenced)
	if all, _ = s.Inbox(ctx, "r", false); len(all) != 5 {
		t.Fatalf("a fenced tick left an inbound behind: %+v", all)
	}
}

// Ticks that submit their own inputs and submissions from elsewhere, to
// the same run at the same time, all land: every entry once, at its own
// inbox position, the ticks' consumed and the others pending.
func testSubmitInTickRacesSubmit(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	const n = 12
	errs := make(chan error, 2)
	go func() {
		for i := 0; i < n; i++ {
			in := Inb("r", fmt.Sprintf("tick-%d", i), "input", fmt.Sprintf(`{"t":%d}`, i))
			if err := s.Commit(ctx, l, store.Tick{ExpectHead: int64(i), Submit: []store.Inbound{in}, Consume: []string{in.ID},
				Events: []store.Event{Ev("ACCEPTED", fmt.Sprintf(`{"t":%d}`, i))}}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	go func() {
		for i := 0; i < n; i++ {
			if err := s.Submit(ctx, Inb("r", fmt.Sprintf("api-%d", i), "input", fmt.Sprintf(`{"a":%d}`, i))); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	must(t, <-errs)
	must(t, <-errs)
	all, err := s.Inbox(ctx, "r", false)
	must(t, err)
	if len(all) != 2*n {
		t.Fatalf("%d inbox entries, want %d", len(all), 2*n)
	}
	for i, in := range all {
		if in.Seq != int64(i+1) || in.Consumed != strings.HasPrefix(in.ID, "tick-") {
			t.Fatalf("inbox entry %d: %+v", i+1, in)
		}
	}
}

// A tick that expects the inbox empty after its consumption is refused,
// with nothing written, when an entry it did not consume is pending —
// whether the tick is the first under its lease or follows the store's own
// last commit of the run.
func testExpectInboxEmpty(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Submit(ctx, Inb("r", "a", "input", `{"a":1}`)))
	before := snapshot(t, s, "r")
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectInboxEmpty: true, Events: []store.Event{Ev("E", `{"n":1}`)}}), store.CodeHeadMismatch)
	if after := snapshot(t, s, "r"); after != before {
		t.Fatalf("a refused tick wrote: %s, was %s", after, before)
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectInboxEmpty: true, Consume: []string{"a"}, Events: []store.Event{Ev("E", `{"n":1}`)}}))
	b := Inb("r", "b", "input", `{"b":1}`)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, ExpectInboxEmpty: true, Submit: []store.Inbound{b}, Consume: []string{"b"},
		Events: []store.Event{Ev("E", `{"n":2}`)}}))
	// An entry that arrives between two ticks of the same writer.
	must(t, s.Submit(ctx, Inb("r", "c", "cancel", `{}`)))
	d := Inb("r", "d", "input", `{"d":1}`)
	before = snapshot(t, s, "r")
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, ExpectInboxEmpty: true, Submit: []store.Inbound{d}, Consume: []string{"d"},
		Events: []store.Event{Ev("E", `{"n":3}`)}}), store.CodeHeadMismatch)
	all, _ := s.Inbox(ctx, "r", false)
	if after := snapshot(t, s, "r"); after != before || len(all) != 3 {
		t.Fatalf("a refused tick wrote: %s, was %s; inbox %+v", after, before, all)
	}
	// Without the expectation the same tick commits, the entry left pending.
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Submit: []store.Inbound{d}, Consume: []string{"d"}, Events: []store.Event{Ev("E", `{"n":3}`)}}))
	if pending, _ := s.Inbox(ctx, "r", true); len(pending) != 1 || pending[0].ID != "c" {
		t.Fatalf("pending %+v", pending)
	}
	// Two pending, one consumed: one is left, and the tick is refused;
	// both consumed, it commits.
	must(t, s.Submit(ctx, Inb("r", "e", "input", `{"e":1}`)))
	before = snapshot(t, s, "r")
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, ExpectInboxEmpty: true, Consume: []string{"e"}, Events: []store.Event{Ev("E", `{"n":4}`)}}), store.CodeHeadMismatch)
	if after := snapshot(t, s, "r"); after != before {
		t.Fatalf("a refused tick wrote: %s, was %s", after, before)
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, ExpectInboxEmpty: true, Consume: []string{"e", "c"}, Events: []store.Event{Ev("E", `{"n":4}`)}}))
	if pending, _ := s.Inbox(ctx, "r", true); len(pending) != 0 {
		t.Fatalf("pending %+v", pending)
	}
}

// One transaction may commit an intent and start its first attempt, and a
// later one may finish an attempt and start the next: one fsync per step.
func testBeginInTick(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{Intents: []store.Intent{In("i1", "k1", "x")}, Begin: []string{"i1"}}))
	ats, _ := s.Attempts(ctx, "i1")
	ins, _ := s.Intents(ctx, "r")
	if len(ats) != 1 || ats[0].Status != store.AttemptStarted || ins[0].Outbox != store.OutboxInFlight {
		t.Fatalf("attempts %+v intents %+v", ats, ins)
	}
	// A result for attempt 1 of an intent the same tick creates names an
	// attempt that did not exist before the tick (results are applied
	// before the tick's attempts begin): refused, nothing written.
	mustCode(t, s.Commit(ctx, l, store.Tick{Intents: []store.Intent{In("i0", "k0", "y")}, Begin: []string{"i0"},
		Results: []store.AttemptResult{{IntentID: "i0", N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry}}}), store.CodeInvalidTransition)
	if ins, _ := s.Intents(ctx, "r"); len(ins) != 1 {
		t.Fatalf("a refused tick wrote intents: %+v", ins)
	}
	mustCode(t, s.Commit(ctx, l, store.Tick{Begin: []string{"i1"}}), store.CodeInvalidTransition)
	must(t, s.Commit(ctx, l, store.Tick{
		Results: []store.AttemptResult{{IntentID: "i1", N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry}},
		Begin:   []string{"i1"}}))
	ats, _ = s.Attempts(ctx, "i1")
	if len(ats) != 2 || ats[1].N != 2 || ats[1].Status != store.AttemptStarted {
		t.Fatalf("attempts %+v", ats)
	}
}

// A tick may carry many events; they all land, in order, on the chain.
func testLargeTick(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	evs := make([]store.Event, 1234)
	for i := range evs {
		evs[i] = Ev("E", fmt.Sprintf(`{"i":%d}`, i))
	}
	must(t, s.Commit(ctx, l, store.Tick{Events: evs}))
	got, _ := s.Events(ctx, "r", 0)
	prev := store.GenesisHash
	for i, e := range got {
		if e.Seq != int64(i+1) || string(e.Body) != fmt.Sprintf(`{"i":%d}`, i) || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			t.Fatalf("event %d wrong: %+v", i, e)
		}
		prev = e.ChainHash
	}
	if len(got) != 1234 {
		t.Fatalf("%d events", len(got))
	}
}

// A store that lists ready runs names exactly the live ones with a pending
// inbox entry or a state outside the resting ones.
func testReady(t *testing.T, s store.Store, _ *Clock) {
	rl, ok := s.(store.ReadyLister)
	if !ok {
		t.Skip("this store does not list ready runs")
	}
	newRun(t, s, "resting")
	newRun(t, s, "busy")
	newRun(t, s, "mail")
	newRun(t, s, "ended")
	set := func(id, state, outcome string) {
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		must(t, err)
		run, _ := s.Run(ctx, id)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: run.Head, State: state, Outcome: outcome}))
		must(t, s.ReleaseLease(ctx, l))
	}
	set("resting", "WAIT_APPROVAL", "")
	set("busy", "EXECUTE", "")
	set("mail", "INGEST", "")
	set("ended", "SUCCEEDED", "success")
	must(t, s.Submit(ctx, Inb("mail", "m1", "input", `{}`)))
	ids, err := rl.Ready(ctx, []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}, time.Time{})
	must(t, err)
	if fmt.Sprint(ids) != "[busy mail]" {
		t.Fatalf("ready = %v", ids)
	}
}

// Writers of many runs commit at once (a store may batch them into shared
// transactions), each followed by a stale holder of the same run: every
// current writer's tick lands whole and is read back at once; every stale
// one is refused with FENCED and leaves nothing.
func testConcurrentRunsFencedAlone(t *testing.T, s store.Store, _ *Clock) {
	const runs, ticks = 8, 6
	current := make([]store.Lease, runs)
	stale := make([]store.Lease, runs)
	for r := range runs {
		id := fmt.Sprintf("r%d", r)
		newRun(t, s, id)
		var err error
		stale[r], err = s.AcquireLease(ctx, id, "old", time.Hour)
		must(t, err)
		must(t, s.ReleaseLease(ctx, stale[r]))
		current[r], err = s.AcquireLease(ctx, id, "w", time.Hour)
		must(t, err)
	}
	tick := func(l store.Lease, who string, i int) store.Tick {
		body := fmt.Sprintf(`{"who":%q,"i":%d}`, who, i)
		cp := []byte(body)
		return store.Tick{ExpectHead: int64(i), Events: []store.Event{Ev("E", body)},
			Intents:    []store.Intent{In(fmt.Sprintf("%s-%s-%d", l.RunID, who, i), fmt.Sprintf("%s-%s-k%d", l.RunID, who, i), body)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "t", Body: cp}}}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for r := range runs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			for i := range ticks {
				if err := s.Commit(ctx, current[r], tick(current[r], "w", i)); err != nil {
					t.Errorf("run r%d tick %d: %v", r, i, err)
					return
				}
				if run, err := s.Run(ctx, current[r].RunID); err != nil || run.Head != int64(i+1) {
					t.Errorf("run r%d after tick %d: head %d, %v", r, i, run.Head, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			for i := range ticks {
				if err := s.Commit(ctx, stale[r], tick(stale[r], "old", i)); store.CodeOf(err) != store.CodeFenced {
					t.Errorf("stale commit on r%d: %v, want FENCED", r, err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for r := range runs {
		id := current[r].RunID
		evs, _ := s.Events(ctx, id, 0)
		ins, _ := s.Intents(ctx, id)
		tr, _ := s.Trace(ctx, id)
		cp, err := s.Checkpoint(ctx, id)
		must(t, err)
		if len(evs) != ticks || len(ins) != ticks || len(tr) != ticks || cp.Seq != ticks {
			t.Fatalf("run %s: %d events, %d intents, %d trace records, checkpoint at %d; want %d of each", id, len(evs), len(ins), len(tr), cp.Seq, ticks)
		}
		prev := store.GenesisHash
		for i, e := range evs {
			if want := fmt.Sprintf(`{"who":"w","i":%d}`, i); string(e.Body) != want || e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
				t.Fatalf("run %s event %d: %s, want %s on an intact chain", id, e.Seq, e.Body, want)
			}
			prev = e.ChainHash
		}
	}
}

// A run created with its first inbound events has them pending, in order,
// from the moment it exists; a malformed one refuses the whole creation.
func testCreateRunWithInput(t *testing.T, s store.Store, _ *Clock) {
	run := store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}
	must(t, s.CreateRun(ctx, run, Inb("r", "input:1", "INPUT", `{"a":1}`), Inb("r", "input:2", "INPUT", `{"b":2}`)))
	in, err := s.Inbox(ctx, "r", true)
	must(t, err)
	if len(in) != 2 || in[0].ID != "input:1" || in[0].Seq != 1 || in[1].ID != "input:2" || in[1].Seq != 2 ||
		string(in[1].Body) != `{"b":2}` || in[0].Consumed || in[0].Actor != "alice" {
		t.Fatalf("inbox of a run created with input: %+v", in)
	}
	if rl, ok := s.(store.ReadyLister); ok {
		ready, err := rl.Ready(ctx, []string{"CREATED"}, time.Time{})
		must(t, err)
		if fmt.Sprint(ready) != "[r]" {
			t.Fatalf("a resting run with pending input: Ready = %v, want [r]", ready)
		}
	}
	// Submitting the same entry again is idempotent; the next one follows.
	must(t, s.Submit(ctx, Inb("r", "input:1", "INPUT", `{"a":1}`)))
	must(t, s.Submit(ctx, Inb("r", "c", "CANCEL", `{}`)))
	if in, _ = s.Inbox(ctx, "r", true); len(in) != 3 || in[2].Seq != 3 {
		t.Fatalf("inbox after a later submission: %+v", in)
	}

	badDigest := Inb("x1", "input:1", "INPUT", `{}`)
	badDigest.Digest = "sha256:00"
	noKind := Inb("x2", "input:1", "", `{}`)
	for _, c := range []struct {
		run   string
		first []store.Inbound
	}{
		{"x1", []store.Inbound{badDigest}},
		{"x2", []store.Inbound{noKind}},
		{"x3", []store.Inbound{Inb("other", "input:1", "INPUT", `{}`)}},
		{"x4", []store.Inbound{Inb("x4", "i", "INPUT", `{}`), Inb("x4", "i", "INPUT", `{"z":0}`)}},
	} {
		mustCode(t, s.CreateRun(ctx, store.Run{ID: c.run, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, c.first...), store.CodeInvalidInput)
		_, err := s.Run(ctx, c.run)
		mustCode(t, err, store.CodeNotFound)
	}
	// A run id taken refuses the creation and leaves its inbox alone.
	mustCode(t, s.CreateRun(ctx, run, Inb("r", "input:9", "INPUT", `{}`)), store.CodeExists)
	if in, _ = s.Inbox(ctx, "r", false); len(in) != 3 {
		t.Fatalf("a refused creation changed the inbox: %+v", in)
	}
}

// A run's definition digest is recorded when the run is created and comes
// back, unchanged by anything written to the run since, with its header
// however it is read; a run created without one reads "". A store that
// claims runs for a runner (DefinitionClaimer) hands out only runs of the
// definitions asked for, and those that record none.
func testRunDefinitionDigest(t *testing.T, s store.Store, c *Clock) {
	defA, defB := store.BodyDigest([]byte("definition a")), store.BodyDigest([]byte("definition b"))
	must(t, s.CreateRun(ctx, store.Run{ID: "a", WorkflowID: "wf", WorkflowVersion: "1", WorkflowDigest: defA, State: "CREATED"},
		Inb("a", "input:1", "INPUT", `{}`)))
	must(t, s.CreateRun(ctx, store.Run{ID: "b", WorkflowID: "wf", WorkflowVersion: "1", WorkflowDigest: defB, State: "CREATED"},
		Inb("b", "input:1", "INPUT", `{}`)))
	must(t, s.CreateRun(ctx, store.Run{ID: "none", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"},
		Inb("none", "input:1", "INPUT", `{}`)))
	want := map[string]string{"a": defA, "b": defB, "none": ""}
	check := func(when string) {
		t.Helper()
		for id, d := range want {
			r, err := s.Run(ctx, id)
			must(t, err)
			if r.WorkflowDigest != d || r.WorkflowID != "wf" || r.WorkflowVersion != "1" {
				t.Fatalf("%s: Run(%s) = %q@%q digest %q, want digest %q", when, id, r.WorkflowID, r.WorkflowVersion, r.WorkflowDigest, d)
			}
		}
		rs, err := s.Runs(ctx, "", 10)
		must(t, err)
		if len(rs) != 3 {
			t.Fatalf("%s: Runs = %d runs", when, len(rs))
		}
		for _, r := range rs {
			if r.WorkflowDigest != want[r.ID] {
				t.Fatalf("%s: Runs has %s with digest %q, want %q", when, r.ID, r.WorkflowDigest, want[r.ID])
			}
		}
	}
	check("created")

	if dc, ok := s.(store.DefinitionClaimer); ok {
		got, err := dc.ClaimReadyOf(ctx, "runner-b", time.Minute, 10, nil, []string{defB}, time.Time{})
		must(t, err)
		ids := []string{}
		for _, l := range got {
			ids = append(ids, l.RunID)
		}
		if fmt.Sprint(ids) != "[b none]" {
			t.Fatalf("claim for definition b took %v, want [b none]", ids)
		}
		for _, l := range got {
			must(t, s.ReleaseLease(ctx, l))
		}
		got, err = dc.ClaimReadyOf(ctx, "runner-x", time.Minute, 10, nil, []string{}, time.Time{})
		must(t, err)
		if len(got) != 1 || got[0].RunID != "none" {
			t.Fatalf("claim for no definition took %v, want only the run that records none", got)
		}
		must(t, s.ReleaseLease(ctx, got[0]))
	}

	// Commits, checkpoints, leases and a quarantine leave it as it was.
	l, err := s.AcquireLease(ctx, "a", "runner-a", time.Minute)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{Ev("E", `{"n":1}`)}, State: "INGEST",
		Checkpoint: &store.Checkpoint{Seq: 1, FormatVersion: 1, BuildDigest: "build", Body: []byte(`{"workflow_digest":"other"}`),
			Digest: store.BodyDigest([]byte(`{"workflow_digest":"other"}`))}, Consume: []string{"input:1"}}))
	must(t, s.ReleaseLease(ctx, l))
	must(t, s.Quarantine(ctx, "b", "parked"))
	c.Advance(time.Hour)
	check("after commits and a quarantine")
}

// A tick whose durability may lag is committed like any other: visible
// to every read at once, fenced, chained, and followed by the next tick
// from its head. A lagging tick that holds what must be durable before
// anything follows from it (an intent, an approval's consumption, an
// attempt's beginning, its own inbound event, a final outcome) is refused
// and writes nothing.
func testMayLag(t *testing.T, s store.Store, _ *Clock) {
	newRun(t, s, "r")
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Events: []store.Event{Ev("A", `{"a":1}`)},
		Intents: []store.Intent{In("i1", "k1", "x")}, Begin: []string{"i1"}}))
	rc := []byte(`{"outcome":"confirmed_success"}`)
	cp := []byte(`{"state":"INGEST"}`)
	lagging := store.Tick{ExpectHead: 1, State: "INGEST", MayLag: true,
		Events:     []store.Event{Ev("B", `{"b":2}`), Ev("C", `{"c":3}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, BuildDigest: "build", Body: cp, Digest: store.BodyDigest(cp)},
		Results:    []store.AttemptResult{{IntentID: "i1", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
		Receipts:   []store.Receipt{{IntentID: "i1", Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}},
		Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{"n":2}`)}}}

	// Refused members, each on a copy of the lagging tick.
	before := snapshot(t, s, "r")
	refused := map[string]func(*store.Tick){
		"intent":  func(k *store.Tick) { k.Intents = []store.Intent{In("i2", "k2", "y")} },
		"begin":   func(k *store.Tick) { k.Begin = []string{"i1"} },
		"outcome": func(k *store.Tick) { k.Outcome = "SUCCEEDED" },
		"submit": func(k *store.Tick) {
			in := Inb("r", "in-1", "input", `{"x":1}`)
			k.Submit, k.Consume = []store.Inbound{in}, []string{in.ID}
		},
		"approval": func(k *store.Tick) {
			in := In("i3", "k3", "z")
			in.ApprovalID = "ap"
			k.Intents, k.Approvals = []store.Intent{in}, []store.ApprovalUse{{ApprovalID: "ap", IntentID: "i3"}}
		},
	}
	for name, add := range refused {
		k := lagging
		add(&k)
		mustCode(t, s.Commit(ctx, l, k), store.CodeInvalidInput)
		if after := snapshot(t, s, "r"); after != before {
			t.Fatalf("lagging tick with %s: refused, but wrote something", name)
		}
	}

	must(t, s.Commit(ctx, l, lagging))
	r, err := s.Run(ctx, "r")
	must(t, err)
	evs, _ := s.Events(ctx, "r", 0)
	rcs, _ := s.Receipts(ctx, "r")
	ins, _ := s.Intents(ctx, "r")
	got, _ := s.Checkpoint(ctx, "r")
	tr, _ := s.Trace(ctx, "r")
	if r.Head != 3 || r.State != "INGEST" || len(evs) != 3 || evs[2].ChainHash != r.HeadHash || len(rcs) != 1 ||
		len(ins) != 1 || ins[0].Outbox != store.OutboxDone || got.Seq != 3 || string(got.Body) != string(cp) || len(tr) != 1 {
		t.Fatalf("after the lagging tick: run %+v, %d events, %d receipts, intents %+v, checkpoint %d, %d trace rows",
			r, len(evs), len(rcs), ins, got.Seq, len(tr))
	}
	// Fenced as any tick: a stale lease is refused.
	stale := l
	stale.Generation--
	k := lagging
	k.ExpectHead, k.Results, k.Receipts = 3, nil, nil
	mustCode(t, s.Commit(ctx, stale, k), store.CodeFenced)
	// The next tick follows it, durable or not.
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{Ev("D", `{"d":4}`)}, MayLag: true}))
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{Ev("E", `{"e":5}`)}}))
	evs, _ = s.Events(ctx, "r", 0)
	prev := store.GenesisHash
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			t.Fatalf("event %d breaks the chain: %+v", i, e)
		}
		prev = e.ChainHash
	}
	if len(evs) != 5 {
		t.Fatalf("%d events after five", len(evs))
	}
}
