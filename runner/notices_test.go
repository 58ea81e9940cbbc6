package runner

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// noticing is h's runner writing notices, over the adapter given.
func (h *harness) noticing(adapter effect.Adapter) *Runner {
	return h.runnerWith(adapter, func(c *Config) { c.Notices = true })
}

// claimAll takes every notice due from h's store, settles it, and returns
// their bodies in the store's order with the notices themselves.
func (h *harness) claimAll() ([]store.NoticeBody, []store.Notice) {
	h.t.Helper()
	ns, err := h.store.ClaimNotices(ctx, "test", time.Minute, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	bodies := make([]store.NoticeBody, len(ns))
	for i, n := range ns {
		dec := json.NewDecoder(bytes.NewReader(n.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&bodies[i]); err != nil {
			h.t.Fatalf("notice %s: %v", n.ID, err)
		}
		if bodies[i].Kind != n.Kind || bodies[i].RunID != n.RunID || bodies[i].Seq != n.Seq {
			h.t.Fatalf("notice %+v has the body %+v", n, bodies[i])
		}
		if err := h.store.NoticeDone(ctx, n.ID, "test"); err != nil {
			h.t.Fatal(err)
		}
	}
	return bodies, ns
}

// A runner that writes notices writes one with the tick that leaves a run
// waiting for an approval, one with the tick that ends it, one with the
// tick that leaves it waiting for a person to reconcile, and one with the
// report of a tripwire that froze it; each names the run, its state and
// position, and what it waits for, and nothing of the refund itself.
// A runner that does not write notices writes none.
func TestNoticesFollowTheRun(t *testing.T) {
	h := newHarness(t)
	h.start("quiet", large)
	st, err := h.r.Inspect(ctx, "quiet")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if b, err := h.store.NoticeBacklog(ctx); err != nil || b.Count != 0 {
		t.Fatalf("a runner without notices wrote %d (%v)", b.Count, err)
	}

	h.r = h.noticing(h.dest)
	h.start("big", large)
	st, err = h.r.Inspect(ctx, "big")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	run := h.run("big")
	got, ns := h.claimAll()
	want := []store.NoticeBody{{Kind: store.NoticeApproval, RunID: "big", WorkflowID: "refunds", WorkflowVersion: "1", State: "WAIT_APPROVAL",
		Seq: run.Head, Requests: []string{st.Waiting[0].RequestID}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notices %+v, want %+v", got, want)
	}
	for _, n := range ns {
		for _, content := range []string{"bob", "amount", "payee"} {
			if bytes.Contains(n.Body, []byte(content)) {
				t.Fatalf("notice %s names %q: %s", n.ID, content, n.Body)
			}
		}
	}
	// Approved, the run ends: one notice, with its outcome.
	if err := h.r.Approve(ctx, "big", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run = h.run("big")
	got, _ = h.claimAll()
	want = []store.NoticeBody{{Kind: store.NoticeEnded, RunID: "big", WorkflowID: "refunds", WorkflowVersion: "1", State: "SUCCEEDED",
		Seq: run.Head, Outcome: run.Outcome}}
	if run.State != "SUCCEEDED" || !reflect.DeepEqual(got, want) {
		t.Fatalf("run %s; notices %+v, want %+v", run.State, got, want)
	}

	// An outcome no one can find out waits for a person.
	st = h.unresolved("lost")
	run = h.run("lost")
	got, _ = h.claimAll()
	want = []store.NoticeBody{{Kind: store.NoticeReconciliation, RunID: "lost", WorkflowID: "refunds", WorkflowVersion: "1",
		State: "HUMAN_RECONCILIATION", Seq: run.Head, Effects: st.Unknown}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notices %+v, want %+v", got, want)
	}
	// Reconciled as applied, it ends, and says so.
	if err := h.r.Reconcile(ctx, "lost", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if got, _ = h.claimAll(); len(got) != 1 || got[0].Kind != store.NoticeEnded || got[0].RunID != "lost" || got[0].Outcome != "success" {
		t.Fatalf("after reconciliation: %+v", got)
	}

	// A tripwire freezes a run: the notice comes with the wires' report.
	h.dest.script, h.dest.lookupErr = nil, false
	if err := h.r.Start(ctx, "stuck", "refunds", "1", []byte(`{"refunds":[{"id":"m1","amount":40,"payee":"mallory"}]}`)); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.claimAll(); len(got) != 0 {
		t.Fatalf("a run waiting for its pass wrote %+v", got)
	}
	h.r = h.noticing(picky{h.dest})
	h.idle()
	run = h.run("stuck")
	got, _ = h.claimAll()
	want = []store.NoticeBody{{Kind: store.NoticeTripped, RunID: "stuck", WorkflowID: "refunds", WorkflowVersion: "1", State: run.State,
		Seq: run.Head, Park: string(tripwire.ParkSafeMode), Wires: []string{wireUnsendable}}}
	if run.Quarantine == "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("run parked %q; notices %+v, want %+v", run.Quarantine, got, want)
	}
}

// A runner with NoticesWhenDelivered writes notices while the store's
// notify duty is held, as read at most every NoticeDutyCheck, and none
// before it is held or once it has lapsed.
func TestNoticesWhenDelivered(t *testing.T) {
	h := newHarness(t)
	h.r = h.runnerWith(h.dest, func(c *Config) { c.NoticesWhenDelivered = true })
	h.start("before", large)
	if b, _ := h.store.NoticeBacklog(ctx); b.Count != 0 {
		t.Fatalf("%d notices written with no one delivering", b.Count)
	}
	if _, err := h.store.HoldDuty(ctx, store.NotifyDuty, "notifier", time.Hour); err != nil {
		t.Fatal(err)
	}
	h.start("cached", large) // within NoticeDutyCheck of the last read
	if b, _ := h.store.NoticeBacklog(ctx); b.Count != 0 {
		t.Fatalf("%d notices written before the duty was read again", b.Count)
	}
	h.clock.Advance(NoticeDutyCheck)
	h.start("delivered", large)
	got, _ := h.claimAll()
	if len(got) != 1 || got[0].Kind != store.NoticeApproval || got[0].RunID != "delivered" {
		t.Fatalf("notices %+v, want the approval of delivered", got)
	}
	h.clock.Advance(time.Hour)
	h.start("lapsed", large)
	if got, _ = h.claimAll(); len(got) != 0 {
		t.Fatalf("notices %+v after the duty lapsed", got)
	}
}

// A run quarantined, not by a tripwire, is told of too, with why: its
// checkpoint written by a newer build, or a commit the store refuses for
// good (two runs planning one effect identity). A runner that does not
// write notices quarantines the same runs and tells of none.
func TestQuarantinedRunsTold(t *testing.T) {
	for _, noticing := range []bool{false, true} {
		h := newHarness(t)
		if noticing {
			h.r = h.noticing(h.dest)
		}
		h.start("newer", large)
		h.claimAll() // its approval's
		l, err := h.store.AcquireLease(ctx, "newer", "intruder", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cp, _ := h.store.Checkpoint(ctx, "newer")
		run := h.run("newer")
		ev := []byte(`{"x":1}`)
		if err := h.store.Commit(ctx, l, store.Tick{ExpectHead: run.Head, Events: []store.Event{{Kind: "x", Body: ev, Digest: store.BodyDigest(ev)}},
			Checkpoint: &store.Checkpoint{FormatVersion: 99, Body: cp.Body, Digest: cp.Digest}}); err != nil {
			t.Fatal(err)
		}
		h.store.ReleaseLease(ctx, l)
		h.start("first", small)
		h.start("second", small) // the fixture derives the same intent id from the refund id
		h.idle()
		newer, second := h.run("newer"), h.run("second")
		if !strings.Contains(newer.Quarantine, "format 99") || !strings.Contains(second.Quarantine, "commit refused for good") {
			t.Fatalf("quarantines %q, %q", newer.Quarantine, second.Quarantine)
		}
		got, _ := h.claimAll()
		var quarantined []store.NoticeBody
		for _, b := range got {
			if b.Kind == store.NoticeQuarantined {
				quarantined = append(quarantined, b)
			}
		}
		if !noticing {
			if len(got) != 0 {
				t.Fatalf("a runner without notices wrote %+v", got)
			}
			continue
		}
		want := []store.NoticeBody{
			{Kind: store.NoticeQuarantined, RunID: "newer", WorkflowID: "refunds", WorkflowVersion: "1", State: newer.State, Seq: newer.Head, Reason: newer.Quarantine},
			{Kind: store.NoticeQuarantined, RunID: "second", WorkflowID: "refunds", WorkflowVersion: "1", State: second.State, Seq: second.Head, Reason: second.Quarantine},
		}
		slices.SortFunc(quarantined, func(a, b store.NoticeBody) int { return strings.Compare(a.RunID, b.RunID) })
		if !reflect.DeepEqual(quarantined, want) {
			t.Fatalf("quarantine notices %+v,\nwant %+v", quarantined, want)
		}
	}
}

// TellWaiting tells of every run waiting for a person that no runner told
// of (its runner wrote no notices): an approval, a reconciliation, a run a
// tripwire froze, runs quarantined (a checkpoint from a newer build, an
// effect identity another run holds); with the very bodies and IDs the
// ticks would have written, so that a run told of already is not told
// twice, and told again nothing new is written. Runs last written before
// since, or at or after until, are left.
func TestTellWaiting(t *testing.T) {
	h := newHarness(t)
	h.start("big", large)
	h.unresolved("lost")
	h.dest.script, h.dest.lookupErr = nil, false
	if err := h.r.Start(ctx, "stuck", "refunds", "1", []byte(`{"refunds":[{"id":"m1","amount":40,"payee":"mallory"}]}`)); err != nil {
		t.Fatal(err)
	}
	quiet := h.r
	h.r = h.runnerWith(picky{h.dest}, nil)
	h.idle()
	h.r = quiet
	h.start("clash", small) // the lost run's refund again: its intent's identity is taken, the run quarantined
	// A run whose checkpoint a newer build wrote: quarantined.
	h.start("newer", large)
	l, err := h.store.AcquireLease(ctx, "newer", "intruder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := h.store.Checkpoint(ctx, "newer")
	ev := []byte(`{"x":1}`)
	if err := h.store.Commit(ctx, l, store.Tick{ExpectHead: h.run("newer").Head, Events: []store.Event{{Kind: "x", Body: ev, Digest: store.BodyDigest(ev)}},
		Checkpoint: &store.Checkpoint{FormatVersion: 99, Body: cp.Body, Digest: cp.Digest}}); err != nil {
		t.Fatal(err)
	}
	h.store.ReleaseLease(ctx, l)
	h.idle()
	if got, _ := h.claimAll(); len(got) != 0 {
		t.Fatalf("a runner without notices wrote %+v", got)
	}
	// One more run, told of by a runner that writes notices: its notice
	// waits, not yet delivered.
	h.r = h.noticing(h.dest)
	h.start("told", large)
	h.r = quiet
	before, err := h.store.NoticeBacklog(ctx)
	if err != nil || before.Count != 1 {
		t.Fatalf("backlog %+v (%v)", before, err)
	}

	if n, err := h.r.TellWaiting(ctx, h.clock.Now().Add(time.Hour), time.Time{}); err != nil || n != 0 {
		t.Fatalf("told %d (%v) of runs written before since", n, err)
	}
	if n, err := h.r.TellWaiting(ctx, time.Time{}, h.clock.Now()); err != nil || n != 0 {
		t.Fatalf("told %d (%v) of runs written after until", n, err)
	}
	n, err := h.r.TellWaiting(ctx, time.Time{}, h.clock.Now().Add(time.Nanosecond))
	if err != nil || n != 6 {
		t.Fatalf("told of %d runs (%v), want 6", n, err)
	}
	if n, err := h.r.TellWaiting(ctx, time.Time{}, time.Time{}); err != nil || n != 6 {
		t.Fatalf("told again of %d (%v)", n, err)
	}
	got, ns := h.claimAll()
	byRun := map[string]store.NoticeBody{}
	for i, b := range got {
		if _, twice := byRun[b.RunID]; twice {
			t.Fatalf("run %s told of twice: %+v", b.RunID, got)
		}
		byRun[b.RunID] = b
		run := h.run(b.RunID)
		trace, err := h.store.Trace(ctx, b.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if ns[i].ID != store.NoticeID(b.RunID, run.Head, int64(len(trace)), b.Kind) {
			t.Fatalf("run %s told of as %s", b.RunID, ns[i].ID)
		}
	}
	big, _ := h.r.Inspect(ctx, "big")
	lost, _ := h.r.Inspect(ctx, "lost")
	stuck, newer, clash := h.run("stuck"), h.run("newer"), h.run("clash")
	want := map[string]store.NoticeBody{
		"big": {Kind: store.NoticeApproval, RunID: "big", WorkflowID: "refunds", WorkflowVersion: "1", State: "WAIT_APPROVAL", Seq: big.Run.Head,
			Requests: []string{big.Waiting[0].RequestID}},
		"told": byRun["told"], // as its tick wrote it
		"lost": {Kind: store.NoticeReconciliation, RunID: "lost", WorkflowID: "refunds", WorkflowVersion: "1", State: "HUMAN_RECONCILIATION",
			Seq: lost.Run.Head, Effects: lost.Unknown},
		"stuck": {Kind: store.NoticeTripped, RunID: "stuck", WorkflowID: "refunds", WorkflowVersion: "1", State: stuck.State, Seq: stuck.Head,
			Park: string(tripwire.ParkSafeMode), Wires: []string{wireUnsendable}},
		"newer": {Kind: store.NoticeQuarantined, RunID: "newer", WorkflowID: "refunds", WorkflowVersion: "1", State: newer.State, Seq: newer.Head,
			Reason: newer.Quarantine},
		"clash": {Kind: store.NoticeQuarantined, RunID: "clash", WorkflowID: "refunds", WorkflowVersion: "1", State: clash.State, Seq: clash.Head,
			Reason: clash.Quarantine},
	}
	if byRun["told"].Kind != store.NoticeApproval {
		t.Fatalf("the told run's notice %+v", byRun["told"])
	}
	if len(byRun) != 6 || !strings.Contains(newer.Quarantine, "format 99") || !strings.Contains(clash.Quarantine, "commit refused for good") {
		t.Fatalf("told of %v", byRun)
	}
	for id, w := range want {
		if !reflect.DeepEqual(byRun[id], w) {
			t.Errorf("run %s told of as %+v,\nwant %+v", id, byRun[id], w)
		}
	}
}
