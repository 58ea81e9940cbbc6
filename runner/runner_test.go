package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

var ctx = context.Background()

type harness struct {
	t     *testing.T
	store *sqlite.Store
	dest  *destination
	r     *Runner
	path  string
	clock *fakeClock
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flrh.db")
	clock := newFakeClock()
	s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: s, dest: newDestination(), path: path, clock: clock}
	h.r = h.runner(nil)
	t.Cleanup(func() { s.Close() })
	return h
}

func (h *harness) runner(cut func(string)) *Runner {
	return h.runnerWith(h.dest, func(c *Config) { c.Cut = cut })
}

// runnerWith is a runner of h's refunds over adapter, its configuration
// changed by mod (when not nil).
func (h *harness) runnerWith(adapter effect.Adapter, mod func(*Config)) *Runner {
	h.t.Helper()
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", adapter); err != nil {
		h.t.Fatal(err)
	}
	cfg := Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) start(id, input string) {
	h.t.Helper()
	if err := h.r.Start(ctx, id, "refunds", "1", []byte(input)); err != nil {
		h.t.Fatal(err)
	}
	h.idle()
}

func (h *harness) idle() {
	h.t.Helper()
	if err := h.r.RunToIdle(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// recovered advances the runs to idle, as a restarted runner would, and
// holds run id to a recovered one-refund run: succeeded, one mutation at
// the destination for its one logical effect, and one receipt, a
// confirmed success.
func (h *harness) recovered(id string) {
	h.t.Helper()
	h.idle()
	if run := h.run(id); run.State != "SUCCEEDED" {
		h.t.Fatalf("after recovery: %s (%s)", run.State, run.Quarantine)
	}
	if h.dest.count() != 1 {
		h.t.Fatalf("%d mutations for one logical effect", h.dest.count())
	}
	rcs, _ := h.store.Receipts(ctx, id)
	if len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" {
		h.t.Fatalf("receipts %+v", rcs)
	}
}

func (h *harness) run(id string) store.Run {
	h.t.Helper()
	r, err := h.store.Run(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// path returns the run's accepted control transitions, in order.
func (h *harness) transitions(id string) []string {
	h.t.Helper()
	evs, err := h.store.Events(ctx, id, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind != EventControl {
			continue
		}
		var rec control.Record
		if err := decodeInto(e.Body, &rec); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, rec.Event)
	}
	return out
}

func (h *harness) rejected(id string) []control.Record {
	evs, _ := h.store.Events(ctx, id, 0)
	var out []control.Record
	for _, e := range evs {
		if e.Kind == EventRejected {
			var rec control.Record
			decodeInto(e.Body, &rec)
			out = append(out, rec)
		}
	}
	return out
}

var (
	approver   = Actor{Name: "alice", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	denier     = Actor{Name: "alice", Role: "human_approver", Capability: "approval.deny"}
	reconciler = Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.confirm_external"}
	requester  = Actor{Name: "carol", Role: "authorized_requester", Capability: "run.cancel"}
	agent      = Actor{Name: "model", Role: "model", Capability: "approval.grant_exact_hash"}
)

const small = `{"refunds":[{"id":"r1","amount":40,"payee":"alice"}]}`
const large = `{"refunds":[{"id":"r2","amount":900,"payee":"bob"}]}`

func TestLowRiskRefundSucceeds(t *testing.T) {
	h := newHarness(t)
	h.start("run-1", small)
	run := h.run("run-1")
	if run.State != "SUCCEEDED" || run.Outcome != "success" {
		t.Fatalf("run ended %s/%s", run.State, run.Outcome)
	}
	want := "START EVENT_ACCEPTED EPOCH_STABLE EFFECT_AUTHORIZED INTENT_COMMITTED ATTEMPT_RECORDED EFFECT_RESULT_CONFIRMED NO_PENDING_INTERRUPT EVENT_ACCEPTED EPOCH_STABLE NO_EFFECTS VERIFIED_COMPLETE"
	if got := strings.Join(h.transitions("run-1"), " "); got != want {
		t.Fatalf("path\n got %s\nwant %s", got, want)
	}
	if h.dest.count() != 1 {
		t.Fatalf("%d mutations", h.dest.count())
	}
	rcs, _ := h.store.Receipts(ctx, "run-1")
	ins, _ := h.store.Intents(ctx, "run-1")
	if len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" || len(ins) != 1 || ins[0].Outbox != store.OutboxDone {
		t.Fatalf("receipts %+v intents %+v", rcs, ins)
	}
	// The intent was durable, with its first attempt, before anything was
	// sent: the commit that wrote it is at an earlier event than the receipt.
	ats, _ := h.store.Attempts(ctx, ins[0].ID)
	if len(ats) != 1 || ats[0].Status != store.AttemptSucceeded {
		t.Fatalf("attempts %+v", ats)
	}
}

func TestLargeRefundWaitsForApprovalBoundToItsContent(t *testing.T) {
	h := newHarness(t)
	h.start("run-2", large)
	st, err := h.r.Inspect(ctx, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "WAIT_APPROVAL" || len(st.Waiting) != 1 || st.Waiting[0].Preview != "Refund 900 to bob" {
		t.Fatalf("status %+v", st)
	}
	if h.dest.count() != 0 {
		t.Fatal("effect sent before approval")
	}
	// A model cannot approve: the workflow's own check refuses it before
	// any grant is stored or the run is told.
	head := h.run("run-2").Head
	var ar *ApproverRefusedError
	if err := h.r.Approve(ctx, "run-2", st.Waiting[0].RequestID, agent, time.Hour); !errors.As(err, &ar) ||
		!strings.Contains(ar.Reason, "not a human approver") {
		t.Fatalf("model approval: err = %v", err)
	}
	h.idle()
	if r := h.run("run-2"); r.State != "WAIT_APPROVAL" || r.Head != head {
		t.Fatalf("a refused model approval moved the run to %s (head %d, was %d)", r.State, r.Head, head)
	}
	// Approving something the run does not wait for says so.
	var nw *NotWaitingError
	if err := h.r.Approve(ctx, "run-2", "approval:nope", approver, time.Hour); !errors.As(err, &nw) {
		t.Fatalf("err = %v", err)
	}
	if err := h.r.Approve(ctx, "run-2", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-2")
	if run.State != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("after approval: %s, %d mutations", run.State, h.dest.count())
	}
	ins, _ := h.store.Intents(ctx, "run-2")
	a, err := h.store.Approval(ctx, ins[0].ApprovalID)
	if err != nil || a.Status != store.ApprovalConsumed || a.ConsumedBy != ins[0].ID {
		t.Fatalf("approval %+v %v", a, err)
	}
	if !strings.Contains(string(ins[0].Body), a.Digest) {
		t.Fatal("committed intent does not name the grant it rests on")
	}
}

func TestDeniedApprovalFailsTheRun(t *testing.T) {
	h := newHarness(t)
	h.start("run-3", large)
	st, _ := h.r.Inspect(ctx, "run-3")
	if err := h.r.Deny(ctx, "run-3", st.Waiting[0].RequestID, "too much", denier); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-3")
	if run.State != "FAILED_PERMANENT" || h.dest.count() != 0 {
		t.Fatalf("run %s, %d mutations", run.State, h.dest.count())
	}
}

func TestUnknownOutcomeIsReconciledNotRetried(t *testing.T) {
	h := newHarness(t)
	h.dest.script = []effect.Outcome{effect.Unknown} // applied, answer lost
	h.start("run-4", small)
	run := h.run("run-4")
	if run.State != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("run %s, %d mutations", run.State, h.dest.count())
	}
	ins, _ := h.store.Intents(ctx, "run-4")
	ats, _ := h.store.Attempts(ctx, ins[0].ID)
	if len(ats) != 1 || ats[0].Status != store.AttemptReconciledApplied {
		t.Fatalf("attempts %+v", ats)
	}
}

// unresolved starts run id with one small refund whose outcome is lost
// and cannot be looked up, and returns its status: waiting for a person
// to reconcile its one effect.
func (h *harness) unresolved(id string) Status {
	h.t.Helper()
	h.dest.script = []effect.Outcome{effect.Unknown}
	h.dest.lookupErr = true
	h.start(id, small)
	st, _ := h.r.Inspect(ctx, id)
	if st.State != "HUMAN_RECONCILIATION" || len(st.Unknown) != 1 {
		h.t.Fatalf("status %+v", st)
	}
	return st
}

func TestUnresolvedOutcomeGoesToAPerson(t *testing.T) {
	h := newHarness(t)
	st := h.unresolved("run-5")
	if rcs, _ := h.store.Receipts(ctx, "run-5"); len(rcs) != 0 {
		t.Fatal("an unknown outcome produced a receipt")
	}
	if err := h.r.Reconcile(ctx, "run-5", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.run("run-5").State; s != "SUCCEEDED" {
		t.Fatalf("after reconciliation: %s", s)
	}
	if h.dest.count() != 1 {
		t.Fatalf("%d mutations", h.dest.count())
	}
}

// People resolving one unknown effect at the same instant, differently:
// one resolution is stored and taken, the others are told it has yet to
// be taken, before anything is stored, and so is one given while it
// waits. The run ignores nothing.
func TestReconciliationsAtTheSameInstant(t *testing.T) {
	h := newHarness(t)
	st := h.unresolved("run-r")
	people := []Actor{reconciler, reconciler, reconciler, reconciler}
	resolutions := []string{"confirmed_success", "confirmed_failure", "confirmed_success", "confirmed_failure"}
	errs := make([]error, len(people))
	var wg sync.WaitGroup
	for i := range people {
		people[i].Name = fmt.Sprintf("op-%d", i)
		wg.Go(func() { errs[i] = h.r.Reconcile(ctx, "run-r", st.Unknown[0], resolutions[i], people[i]) })
	}
	wg.Wait()
	taken := -1
	for i, err := range errs {
		var nw *NotWaitingError
		switch {
		case err == nil && taken < 0:
			taken = i
		case err == nil:
			t.Fatalf("%s's resolution stored beside %s's", people[i].Name, people[taken].Name)
		case !errors.As(err, &nw) || !strings.Contains(nw.What, "has yet to be taken"):
			t.Fatalf("%s: %v", people[i].Name, err)
		}
	}
	if taken < 0 {
		t.Fatal("no resolution stored")
	}
	err := h.r.Reconcile(ctx, "run-r", st.Unknown[0], "abandon", Actor{Name: "late", Role: "human_reconciler", Capability: "receipt.abandon_unknown"})
	var nw *NotWaitingError
	if want := fmt.Sprintf("a reconciliation of %s (%s's %s has yet to be taken)", st.Unknown[0], people[taken].Name, resolutions[taken]); !errors.As(err, &nw) || nw.What != want {
		t.Fatalf("a resolution while one waits: %v, want %q", err, want)
	}
	h.idle()
	want := map[string]string{"confirmed_success": "SUCCEEDED", "confirmed_failure": "FAILED_PERMANENT"}[resolutions[taken]]
	if s := h.run("run-r").State; s != want {
		t.Fatalf("after %s: %s, want %s", resolutions[taken], s, want)
	}
	recs, err := h.store.Trace(ctx, "run-r")
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if strings.Contains(string(rec.Body), "reconcile_ignored") {
			t.Fatalf("the run ignored a resolution: %s", rec.Body)
		}
	}
}

func TestAbandonedOutcomeEndsUnknown(t *testing.T) {
	h := newHarness(t)
	h.dest.script = []effect.Outcome{effect.Unknown}
	h.dest.lookupErr = true
	h.start("run-6", small)
	st, _ := h.r.Inspect(ctx, "run-6")
	ab := Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.abandon_unknown"}
	if err := h.r.Reconcile(ctx, "run-6", st.Unknown[0], "abandon", ab); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-6")
	if run.State != "EFFECT_OUTCOME_UNKNOWN" || run.Outcome == "success" {
		t.Fatalf("run %s/%s", run.State, run.Outcome)
	}
}

// A resolution is given by someone its own event authorizes: a person who
// may confirm an outcome may not abandon it for that, nor may one who may
// abandon it confirm it. Either is refused by the FSM and audited, the
// effect stays unknown with nothing closed, and the run goes on waiting
// for a person who may; every pass after the refusal runs cleanly.
func TestAResolutionIsGivenOnlyBySomeoneItsEventAuthorizes(t *testing.T) {
	h := newHarness(t)
	st := h.unresolved("run-6b")
	abandoner := Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.abandon_unknown"}
	wrong := []struct {
		resolution, event string
		by                Actor
	}{
		{"abandon", "ABANDON", reconciler},
		{"confirmed_success", "HUMAN_RECEIPT_CONFIRMED", abandoner},
		{"confirmed_failure", "HUMAN_RECEIPT_CONFIRMED", abandoner},
	}
	for i, w := range wrong {
		if err := h.r.Reconcile(ctx, "run-6b", st.Unknown[0], w.resolution, w.by); err != nil {
			t.Fatal(err)
		}
		h.idle()
		if s, _ := h.r.Inspect(ctx, "run-6b"); s.State != "HUMAN_RECONCILIATION" || len(s.Unknown) != 1 {
			t.Fatalf("%s by %s: the run is %s, unknown %v", w.resolution, w.by.Capability, s.State, s.Unknown)
		}
		rej := h.rejected("run-6b")
		if len(rej) != i+1 || rej[i].Event != w.event {
			t.Fatalf("%s by %s: refusals %+v", w.resolution, w.by.Capability, rej)
		}
		if rcs, _ := h.store.Receipts(ctx, "run-6b"); len(rcs) != 0 {
			t.Fatalf("%s by %s closed the effect: %+v", w.resolution, w.by.Capability, rcs)
		}
		if pending, _ := h.store.Inbox(ctx, "run-6b", true); len(pending) != 0 {
			t.Fatalf("%s by %s: %d entries left pending", w.resolution, w.by.Capability, len(pending))
		}
	}
	if err := h.r.Reconcile(ctx, "run-6b", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.run("run-6b").State; s != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("after a reconciler's confirmation: %s, %d mutations", s, h.dest.count())
	}
}

func TestTransientFailureRetriesWithTheSameKey(t *testing.T) {
	h := newHarness(t)
	h.dest.script = []effect.Outcome{effect.FailedTransient}
	h.start("run-7", small)
	if s := h.run("run-7").State; s != "SUCCEEDED" {
		t.Fatalf("run %s", s)
	}
	ins, _ := h.store.Intents(ctx, "run-7")
	ats, _ := h.store.Attempts(ctx, ins[0].ID)
	if len(ats) != 2 || ats[0].Status != store.AttemptFailedTransient || ats[1].Status != store.AttemptSucceeded || h.dest.count() != 1 {
		t.Fatalf("attempts %+v, %d mutations", ats, h.dest.count())
	}
}

func TestRetriesExhaustedQueriesBeforeFailing(t *testing.T) {
	h := newHarness(t)
	// The default contract allows 3 retries: 4 transient failures exhaust them.
	h.dest.script = []effect.Outcome{effect.FailedTransient, effect.FailedTransient, effect.FailedTransient, effect.FailedTransient}
	h.start("run-8", small)
	run := h.run("run-8")
	rcs, _ := h.store.Receipts(ctx, "run-8")
	if run.State != "RETRY_EXHAUSTED" || run.Outcome != "retry_exhausted" || len(rcs) != 1 || rcs[0].Outcome != "confirmed_failure" || h.dest.count() != 0 {
		t.Fatalf("run %s receipts %+v mutations %d", run.State, rcs, h.dest.count())
	}
	ins, _ := h.store.Intents(ctx, "run-8")
	if ats, _ := h.store.Attempts(ctx, ins[0].ID); len(ats) != 4 {
		t.Fatalf("%d attempts, the contract allows 4", len(ats))
	}
}

func TestCancelWhileWaitingEndsTheRun(t *testing.T) {
	h := newHarness(t)
	h.start("run-9", large)
	if err := h.r.Cancel(ctx, "run-9", "customer withdrew", agent); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.run("run-9").State; s != "WAIT_APPROVAL" {
		t.Fatalf("a model cancelled the run: %s", s)
	}
	if rej := h.rejected("run-9"); len(rej) == 0 || rej[len(rej)-1].Reason != control.ReasonAuthority {
		t.Fatalf("unauthorised cancel not audited: %+v", rej)
	}
	if err := h.r.Cancel(ctx, "run-9", "customer withdrew", requester); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if run := h.run("run-9"); run.State != "CANCELED" || h.dest.count() != 0 {
		t.Fatalf("run %s", run.State)
	}
}

func TestCorruptCheckpointQuarantines(t *testing.T) {
	h := newHarness(t)
	h.start("run-10", large)
	// Write a checkpoint from a newer format, as another build might.
	l, err := h.store.AcquireLease(ctx, "run-10", "intruder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := h.store.Checkpoint(ctx, "run-10")
	run := h.run("run-10")
	bad := store.Checkpoint{FormatVersion: 99, Body: cp.Body, Digest: cp.Digest}
	ev := []byte(`{"x":1}`)
	if err := h.store.Commit(ctx, l, store.Tick{ExpectHead: run.Head, Events: []store.Event{{Kind: "x", Body: ev, Digest: store.BodyDigest(ev)}}, Checkpoint: &bad}); err != nil {
		t.Fatal(err)
	}
	h.store.ReleaseLease(ctx, l)
	st, _ := h.r.Inspect(ctx, "run-10")
	if err := h.r.Approve(ctx, "run-10", "approval:r2", approver, time.Hour); err == nil && len(st.Waiting) > 0 {
		t.Log("approval submitted to a run about to be quarantined")
	}
	h.idle()
	run = h.run("run-10")
	if run.Quarantine == "" || !strings.Contains(run.Quarantine, "format 99") {
		t.Fatalf("not quarantined: %+v", run)
	}
	if h.dest.count() != 0 {
		t.Fatal("a quarantined run sent an effect")
	}
}

// crash is a cut function that stops the runner at one point, the way a
// SIGKILL would: nothing after it runs, nothing is cleaned up.
type crash struct{ at string }

func (c crash) cut(point string) {
	if point == c.at {
		panic(c)
	}
}

func (h *harness) crashAt(point, id, input string) {
	h.t.Helper()
	r := h.runner(crash{point}.cut)
	if err := r.Start(ctx, id, "refunds", "1", []byte(input)); err != nil {
		h.t.Fatal(err)
	}
	func() {
		defer func() {
			if c, ok := recover().(crash); !ok || c.at != point {
				h.t.Fatalf("did not stop at %s", point)
			}
		}()
		r.RunToIdle(ctx)
	}()
}

// After a crash at each cut point a fresh runner (after the dead one's lease
// expires) finishes the run with exactly one mutation at the destination.
func TestCrashRecoveryAtEveryCutPoint(t *testing.T) {
	for _, point := range []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"} {
		t.Run(point, func(t *testing.T) {
			h := newHarness(t)
			h.crashAt(point, "run", small)
			// The dead runner's lease is released by its deferred cleanup in
			// this in-process simulation only if it unwound; take over as a
			// restarted runner with the same name would.
			h.recovered("run")
		})
	}
}

func TestEventLogIsCanonicalAndChained(t *testing.T) {
	h := newHarness(t)
	h.start("run-11", small)
	evs, _ := h.store.Events(ctx, "run-11", 0)
	prev := store.GenesisHash
	for _, e := range evs {
		if c, err := cjson.Canonicalize(e.Body); err != nil || string(c) != string(e.Body) {
			t.Fatalf("event %d not canonical: %v", e.Seq, err)
		}
		if e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			t.Fatalf("chain broken at %d", e.Seq)
		}
		prev = e.ChainHash
	}
}

// A valid human grant relayed by a model is still not an approval: the
// FSM checks who issues the control event, and audits the refusal.
func TestRelayedGrantNeedsAHumanApprover(t *testing.T) {
	h := newHarness(t)
	h.start("run-12", large)
	st, _ := h.r.Inspect(ctx, "run-12")
	if err := h.r.Approve(ctx, "run-12", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Take the person's event out of the inbox (as if it never arrived) and
	// have a model relay the same grant instead.
	in, _ := h.store.Inbox(ctx, "run-12", true)
	l, _ := h.store.AcquireLease(ctx, "run-12", "test", time.Minute)
	if err := h.store.Commit(ctx, l, store.Tick{ExpectHead: h.run("run-12").Head, Consume: []string{in[0].ID}}); err != nil {
		t.Fatal(err)
	}
	h.store.ReleaseLease(ctx, l)
	relay := store.Inbound{ID: "relay", RunID: "run-12", Kind: KindApprove, ActorRole: "model", Actor: "model",
		Capability: "approval.grant_exact_hash", Body: in[0].Body, Digest: in[0].Digest}
	if err := h.store.Submit(ctx, relay); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.run("run-12").State; s != "WAIT_APPROVAL" || h.dest.count() != 0 {
		t.Fatalf("relayed grant moved the run to %s", s)
	}
	rej := h.rejected("run-12")
	if len(rej) == 0 || rej[len(rej)-1].Event != "APPROVAL_GRANTED" || rej[len(rej)-1].Reason != control.ReasonAuthority {
		tr, _ := h.store.Trace(ctx, "run-12")
		for _, x := range tr {
			t.Log(x.Kind, string(x.Body))
		}
		t.Fatalf("relay not audited: %+v", rej)
	}
}

// A run that keeps going takes each input exactly once, even when a pass
// commits several times and reaches INGEST again after an effect.
func TestEachInputIsAcceptedOnce(t *testing.T) {
	h := newHarness(t)
	reg := &effect.Registry{}
	reg.Register("refund.pay", "fake/1", h.dest)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{counter{refunds{limit: 1000}}}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "c", "counter", "1", []byte(`{"id":"a","amount":1,"payee":"p"}`)); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"id":"b","amount":2,"payee":"p"}`, `{"id":"c","amount":3,"payee":"p"}`} {
		if err := r.Submit(ctx, "c", []byte(in), Actor{Name: "agent", Role: "agent", Capability: "run.input"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if h.dest.count() != 3 {
		t.Fatalf("%d mutations for 3 inputs", h.dest.count())
	}
	st, _ := r.Inspect(ctx, "c")
	if st.Accepted != 6 || st.State != "INGEST" {
		t.Fatalf("accepted %d inputs and receipts, state %s", st.Accepted, st.State)
	}
}

// A cancellation that arrives while an effect's outcome is unknown is
// recorded, not acted on: the effect is reconciled first, and only then is
// the run cancelled (fault plan: interrupts during an effect).
func TestCancelDuringAnEffectIsDeferredUntilReconciled(t *testing.T) {
	h := newHarness(t)
	h.dest.script = []effect.Outcome{effect.Unknown}
	h.dest.lookupErr = true
	h.start("run-13", small)
	if s := h.run("run-13").State; s != "HUMAN_RECONCILIATION" {
		t.Fatalf("state %s", s)
	}
	if err := h.r.Cancel(ctx, "run-13", "stop", requester); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-13")
	cp, _ := h.store.Checkpoint(ctx, "run-13")
	if run.State != "HUMAN_RECONCILIATION" || !strings.Contains(string(cp.Body), `"pending_interrupts":["CANCEL"]`) {
		t.Fatalf("cancel not deferred: %s %s", run.State, cp.Body)
	}
	st, _ := h.r.Inspect(ctx, "run-13")
	if err := h.r.Reconcile(ctx, "run-13", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run = h.run("run-13")
	if run.State != "CANCELED" {
		t.Fatalf("after reconciliation: %s", run.State)
	}
	rcs, _ := h.store.Receipts(ctx, "run-13")
	if len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" || h.dest.count() != 1 {
		t.Fatalf("receipts %+v, %d mutations", rcs, h.dest.count())
	}
	want := "HUMAN_RECEIPT_CONFIRMED PENDING_CANCEL"
	if got := strings.Join(h.transitions("run-13"), " "); !strings.HasSuffix(got, want) {
		t.Fatalf("path %s", got)
	}
}

// chooser records every choice it is handed, with who made it.
type chooser struct{ refunds }

func (chooser) ID() string                  { return "chooser" }
func (chooser) Init(string) ([]byte, error) { return []byte(`{"choices":[]}`), nil }
func (chooser) Decide(state []byte, in Accepted) (Decision, error) {
	var st struct {
		Choices []string `json:"choices"`
	}
	if err := decodeInto(state, &st); err != nil {
		return Decision{}, err
	}
	if in.Kind == KindChoice {
		st.Choices = append(st.Choices, in.Actor+"/"+in.ActorRole+"/"+in.Capability+":"+string(in.Body))
	}
	next, err := cjson.Marshal(st)
	return Decision{State: next, Completion: Continue}, err
}

// A person's choice reaches the workflow in inbox order, with the
// chooser's authenticated role and capability, and replays exactly.
func TestChoiceReachesTheWorkflowWithItsAuthority(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{chooser{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "c", "chooser", "1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	op := Actor{Name: "olga", Role: "operator", Capability: "mrp.choose_option"}
	if err := r.Choose(ctx, "c", "proposal:1", "path:store-credit", op); err != nil {
		t.Fatal(err)
	}
	if err := r.Choose(ctx, "c", "", "x", op); err == nil {
		t.Fatal("a choice without a proposal was accepted")
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	cp, _ := h.store.Checkpoint(ctx, "c")
	want := `olga/operator/mrp.choose_option:{\"option\":\"path:store-credit\",\"proposal_id\":\"proposal:1\"}`
	if !strings.Contains(string(cp.Body), want) {
		t.Fatalf("checkpoint %s lacks %s", cp.Body, want)
	}
}

// The runner checks its invariants itself: a history rewritten behind its
// back (digests and chain recomputed, so the store alone cannot tell) is
// caught when the runner loads the run again, the run is parked with a
// tripwire report, and nothing is sent.
func TestRunnerTripsOnARewrittenHistory(t *testing.T) {
	h := newHarness(t)
	h.start("run-w", large)
	h.start("run-ok", small)
	// Rewrite the accepted input of run-w (the refund it waits to pay) and
	// recompute the chain so every digest is self-consistent.
	db := h.store.DB()
	for _, q := range []string{"DROP TRIGGER events_no_update"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := h.store.Events(ctx, "run-w", 0)
	prev := store.GenesisHash
	for _, e := range evs {
		body := e.Body
		if e.Kind == EventAccepted {
			body = []byte(strings.Replace(string(body), `"amount":900`, `"amount":9000`, 1))
		}
		d := store.BodyDigest(body)
		next := store.ChainHash(prev, e.Seq, d)
		if _, err := db.Exec(`UPDATE events SET body = ?, digest = ?, prev_hash = ?, chain_hash = ? WHERE run_id = 'run-w' AND seq = ?`, body, d, prev, next, e.Seq); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	if _, err := db.Exec(`UPDATE runs SET head_hash = ? WHERE run_id = 'run-w'`, prev); err != nil {
		t.Fatal(err)
	}
	st, _ := h.r.Inspect(ctx, "run-w")
	if err := h.r.Approve(ctx, "run-w", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-w")
	if !strings.Contains(run.Quarantine, "append-only") || h.dest.count() != 1 {
		t.Fatalf("run %s quarantine %q, %d mutations", run.State, run.Quarantine, h.dest.count())
	}
	tr, _ := h.store.Trace(ctx, "run-w")
	if len(tr) == 0 || tr[len(tr)-1].Kind != "tripwire" {
		t.Fatalf("no tripwire report in the trace: %+v", tr)
	}
	if s := h.run("run-ok").State; s != "SUCCEEDED" {
		t.Fatalf("the other run: %s", s)
	}
}

// Two runs that plan the same effect identity cannot both commit it; the
// second is parked for a person instead of being retried every pass.
func TestIdentityCollisionParksTheRun(t *testing.T) {
	h := newHarness(t)
	h.start("first", small)
	h.start("second", small) // the fixture derives the same intent id and key from the refund id
	run := h.run("second")
	if !strings.Contains(run.Quarantine, "commit refused for good") {
		t.Fatalf("second run %s, quarantine %q", run.State, run.Quarantine)
	}
	if h.dest.count() != 1 {
		t.Fatalf("%d mutations", h.dest.count())
	}
	if err := h.r.RunToIdle(ctx); err != nil {
		t.Fatalf("the parked run keeps failing passes: %v", err)
	}
}

// A run that keeps taking inputs and never gets anything done ends
// NO_PROGRESS once the loop contract's window is full of stalled rounds;
// one that closes effects keeps going.
func TestNoProgressEndsAStalledRun(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{chooser{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "idle", "chooser", "1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	agentActor := Actor{Name: "bot", Role: "agent", Capability: "run.input"}
	for i := 0; i < 4; i++ {
		if err := r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if s := h.run("idle").State; s != "INGEST" {
			t.Logf("after %d extra inputs: %s", i, s)
			break
		}
		if err := r.Submit(ctx, "idle", []byte(fmt.Sprintf(`{"x":%d}`, i+2)), agentActor); err != nil {
			t.Fatal(err)
		}
	}
	run := h.run("idle")
	if run.State != "NO_PROGRESS" {
		t.Fatalf("a run that does nothing is still %s", run.State)
	}
	want := control.DefaultContract().NoProgress.WindowRounds
	if st, _ := r.Inspect(ctx, "idle"); st.Accepted != want {
		t.Fatalf("ended after %d inputs, the window is %d rounds", st.Accepted, want)
	}
}
