package runner

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// storedBoundaries reads a run's durable record back and describes it the
// way the wires see it: the checkpoint as loaded (PhaseLoad), the run at
// rest (PhaseIdle), and its whole history as one tick from the initial
// configuration (PhaseCommit) — which holds every turn, intent, grant and
// receipt the run ever committed.
func storedBoundaries(t *testing.T, h *harness, runID string) []tripwire.Boundary {
	t.Helper()
	run := h.run(runID)
	evs, err := h.store.Events(ctx, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := h.store.Checkpoint(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := decodeCheckpoint(stored, refunds{limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var open []tripwire.Effect
	for _, e := range cp.Open {
		open = append(open, tripwire.Effect{IntentID: e.IntentID, Stage: e.Stage, ApprovalID: e.ApprovalID})
	}
	var awaiting []tripwire.Awaiting
	for _, p := range cp.Ingest {
		awaiting = append(awaiting, tripwire.Awaiting{IntentID: p.IntentID, Digest: p.Digest})
	}
	ins, _ := h.store.Intents(ctx, runID)
	rcs, _ := h.store.Receipts(ctx, runID)
	ledger := &tripwire.Ledger{}
	var intents []tripwire.Intent
	var uses []tripwire.Consumption
	var results []tripwire.Result
	var receipts []tripwire.Receipt
	for _, in := range ins {
		n := int64(0)
		for _, rc := range rcs {
			if rc.IntentID == in.ID {
				n++
			}
		}
		ledger.Intents = append(ledger.Intents, tripwire.LedgerIntent{ID: in.ID, Outbox: string(in.Outbox), Receipts: n, ApprovalID: in.ApprovalID})
		intents = append(intents, tripwire.Intent{ID: in.ID, Digest: in.Digest, ApprovalID: in.ApprovalID})
		results = append(results, tripwire.Result{IntentID: in.ID, N: in.Attempts, Status: "succeeded", Outbox: string(in.Outbox)})
		if in.ApprovalID != "" {
			a, err := h.store.Approval(ctx, in.ApprovalID)
			if err != nil {
				t.Fatal(err)
			}
			ledger.Approvals = append(ledger.Approvals, tripwire.LedgerApproval{ID: a.ID, RunID: a.RunID, Status: string(a.Status), ConsumedBy: a.ConsumedBy})
			uses = append(uses, tripwire.Consumption{ApprovalID: a.ID, IntentID: in.ID, GrantRunID: a.RunID})
		}
	}
	for _, rc := range rcs {
		receipts = append(receipts, tripwire.Receipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest})
	}
	var links []tripwire.Link
	var events []tripwire.Event
	for _, e := range evs {
		links = append(links, tripwire.Link{Seq: e.Seq, Digest: e.Digest, PrevHash: e.PrevHash, ChainHash: e.ChainHash, Generation: e.Generation})
		te := tripwire.Event{Kind: e.Kind, Digest: e.Digest}
		switch e.Kind {
		case EventControl, EventRejected:
			var rec control.Record
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				t.Fatal(err)
			}
			te.Record = &rec
		case EventAccepted:
			in, err := DecodeAccepted(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			digest := in.Digest
			if in.Usage != nil && in.Kind == KindInput {
				// The inbox held the input wrapped with its report: the
				// record says exactly which wrapper.
				v, _ := cjson.Decode(in.Body)
				w, err := reportedBody(v, *in.Usage)
				if err != nil {
					t.Fatal(err)
				}
				digest = store.BodyDigest(w)
			}
			te.Input = &tripwire.Input{Seq: in.Seq, Kind: in.Kind, Digest: digest}
		}
		events = append(events, te)
	}
	all, _ := h.store.Inbox(ctx, runID, false)
	var consumed, waiting []tripwire.Inbound
	for _, in := range all {
		ti := tripwire.Inbound{ID: in.ID, Kind: in.Kind, Digest: in.Digest}
		if in.Consumed {
			consumed = append(consumed, ti)
		} else {
			waiting = append(waiting, ti)
		}
	}
	code := tripwire.Code{CheckpointBuild: stored.BuildDigest, RunningBuild: h.r.cfg.PlatformDigest,
		CheckpointWorkflow: cp.WorkflowDigest, RunningWorkflow: refunds{limit: 100}.Digest()}
	lease := tripwire.Lease{Generation: run.Lease.Generation, Newest: run.Lease.Generation}
	head := tripwire.Head{Seq: run.Head, Hash: run.HeadHash}
	genesis := tripwire.Head{Seq: 0, Hash: tripwire.GenesisHash}
	load := tripwire.Boundary{Phase: tripwire.PhaseLoad, RunID: runID, Before: cp.Control, After: cp.Control,
		CursorBefore: cp.Accepted, CursorAfter: cp.Accepted, OpenBefore: open, OpenAfter: open, Ledger: ledger, AwaitingBefore: awaiting,
		Chain: tripwire.Chain{Known: genesis, Observed: head, Links: links}, Lease: lease, Code: code}
	idle := load
	idle.Phase, idle.Waiting, idle.Chain = tripwire.PhaseIdle, waiting, tripwire.Chain{Known: head, Observed: head}
	history := tripwire.Boundary{Phase: tripwire.PhaseCommit, RunID: runID, Before: h.r.machine.Initial(), After: cp.Control, Outcome: run.Outcome,
		Events: events, CursorBefore: 0, CursorAfter: cp.Accepted, Consumed: consumed, OpenAfter: open, AwaitingAfter: awaiting,
		Intents: intents, Approvals: uses, Results: results, Receipts: receipts,
		Chain: tripwire.Chain{Known: head, Observed: head}, Lease: lease, Code: code}
	return []tripwire.Boundary{load, idle, history}
}

func checkStored(t *testing.T, h *harness, runID string) {
	t.Helper()
	for _, b := range storedBoundaries(t, h, runID) {
		if trips := tripwire.Check(b); len(trips) > 0 {
			for _, tr := range trips {
				t.Errorf("%s boundary of %s: %s", b.Phase, runID, tr)
			}
		}
	}
}

// The records real runs leave behind satisfy every wire: a differential
// check of the wires against the runner they will guard.
func TestStoredRunsSatisfyTheWires(t *testing.T) {
	t.Run("low risk", func(t *testing.T) {
		h := newHarness(t)
		h.start("run", small)
		checkStored(t, h, "run")
	})
	t.Run("approved", func(t *testing.T) {
		h := newHarness(t)
		h.start("run", large)
		checkStored(t, h, "run") // resting in WAIT_APPROVAL
		st, _ := h.r.Inspect(ctx, "run")
		if err := h.r.Approve(ctx, "run", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
			t.Fatal(err)
		}
		h.idle()
		if s := h.run("run").State; s != "SUCCEEDED" {
			t.Fatalf("state %s", s)
		}
		checkStored(t, h, "run")
	})
	t.Run("reconciled by a person after a deferred cancel", func(t *testing.T) {
		h := newHarness(t)
		h.dest.script = []effect.Outcome{effect.Unknown}
		h.dest.lookupErr = true
		h.start("run", small)
		checkStored(t, h, "run") // resting in HUMAN_RECONCILIATION
		if err := h.r.Cancel(ctx, "run", "stop", requester); err != nil {
			t.Fatal(err)
		}
		h.idle()
		checkStored(t, h, "run")
		st, _ := h.r.Inspect(ctx, "run")
		if err := h.r.Reconcile(ctx, "run", st.Unknown[0], "confirmed_success", reconciler); err != nil {
			t.Fatal(err)
		}
		h.idle()
		if s := h.run("run").State; s != "CANCELED" {
			t.Fatalf("state %s", s)
		}
		checkStored(t, h, "run")
	})
	t.Run("abandoned", func(t *testing.T) {
		h := newHarness(t)
		h.dest.script = []effect.Outcome{effect.Unknown}
		h.dest.lookupErr = true
		h.start("run", small)
		st, _ := h.r.Inspect(ctx, "run")
		ab := Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.abandon_unknown"}
		if err := h.r.Reconcile(ctx, "run", st.Unknown[0], "abandon", ab); err != nil {
			t.Fatal(err)
		}
		h.idle()
		checkStored(t, h, "run")
	})
	t.Run("inputs with usage reports", func(t *testing.T) {
		h := newHarness(t)
		// A first input the workflow refuses creates no run at all.
		var refused *InputRefusedError
		if err := h.r.StartWithUsage(ctx, "run", "refunds", "1", []byte(`{"note":"not a refund"}`), Usage{Tokens: 3}, payer); !errors.As(err, &refused) {
			t.Fatalf("err = %v", err)
		}
		if err := h.r.StartWithUsage(ctx, "run", "refunds", "1", []byte(small), Usage{Tokens: 10, CostMicros: 20}, payer); err != nil {
			t.Fatal(err)
		}
		h.idle()
		if s := h.run("run").State; s != "SUCCEEDED" {
			t.Fatalf("state %s", s)
		}
		checkStored(t, h, "run")
	})
	t.Run("transient then retries exhausted", func(t *testing.T) {
		h := newHarness(t)
		h.dest.script = []effect.Outcome{effect.FailedTransient}
		h.start("run", small)
		checkStored(t, h, "run")
		h = newHarness(t)
		h.dest.script = []effect.Outcome{effect.FailedTransient, effect.FailedTransient, effect.FailedTransient, effect.FailedTransient}
		h.start("run", small)
		if s := h.run("run").State; s != "RETRY_EXHAUSTED" {
			t.Fatalf("state %s", s)
		}
		checkStored(t, h, "run")
	})
	for _, point := range []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"} {
		t.Run("recovered after a crash "+point, func(t *testing.T) {
			h := newHarness(t)
			h.crashAt(point, "run", small)
			h.idle()
			checkStored(t, h, "run")
		})
	}
}

// A rewritten event in the real store trips the append-only wire at the
// next load.
func TestRewrittenStoredEventTrips(t *testing.T) {
	h := newHarness(t)
	h.start("run", small)
	bs := storedBoundaries(t, h, "run")
	load := bs[0]
	load.Chain.Links[3].Digest = store.BodyDigest([]byte("rewritten"))
	found := false
	for _, tr := range tripwire.Check(load) {
		found = found || tr.Wire == tripwire.WireAppendOnly
	}
	if !found {
		t.Fatal("a rewritten event did not trip the append-only wire")
	}
}

// The disposition of a trip, carried out on the real store the way
// docs/tripwires.md tells the runner to: the frozen tick is dropped, the
// report is committed alone as a trace record, the run is parked, and
// every other run carries on.
func TestTripParksOnlyItsRun(t *testing.T) {
	h := newHarness(t)
	h.start("tripped", large) // rests in WAIT_APPROVAL
	h.start("bystander", large)
	b := storedBoundaries(t, h, "tripped")[1]
	b.Waiting = append(b.Waiting, tripwire.Inbound{ID: "x", Kind: "approve_all", Digest: store.BodyDigest([]byte("x"))})
	trips := tripwire.Check(b)
	if len(trips) == 0 {
		t.Fatal("an unknown inbox kind did not trip")
	}
	rep, err := tripwire.NewReport(b, trips)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rep.Encode()
	if err != nil {
		t.Fatal(err)
	}
	lease, err := h.store.AcquireLease(ctx, "tripped", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	run := h.run("tripped")
	if err := h.store.Commit(ctx, lease, store.Tick{ExpectHead: run.Head, Trace: []store.TraceRecord{{Kind: tripwire.ReportKind, Body: body}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Quarantine(ctx, "tripped", "tripwire "+string(rep.Disposition.Park)+": "+trips[0].Wire); err != nil {
		t.Fatal(err)
	}
	tr, _ := h.store.Trace(ctx, "tripped")
	if len(tr) == 0 || tr[len(tr)-1].Kind != tripwire.ReportKind || string(tr[len(tr)-1].Body) != string(body) {
		t.Fatal("the report is not the run's last trace record")
	}
	if after := h.run("tripped"); after.Head != run.Head || after.Quarantine == "" {
		t.Fatalf("the tripped run moved (%d → %d) or is not parked (%q)", run.Head, after.Head, after.Quarantine)
	}
	// The bystander is untouched and still moves.
	st, _ := h.r.Inspect(ctx, "bystander")
	if err := h.r.Approve(ctx, "bystander", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.run("bystander").State; s != "SUCCEEDED" {
		t.Fatalf("bystander %s", s)
	}
	if s := h.run("tripped").State; s != "WAIT_APPROVAL" {
		t.Fatalf("tripped run %s", s)
	}
}

// twoAtOnce plans every refund of an input at once, so that one pass can
// close one effect while another waits for a person; it completes once
// every receipt has come back.
type twoAtOnce struct{ refunds }

func (w twoAtOnce) Decide(state []byte, in Accepted) (Decision, error) {
	var st struct {
		Owed int64 `json:"owed"`
	}
	if err := decodeInto(state, &st); err != nil {
		return Decision{}, err
	}
	var d Decision
	if in.Kind == KindInput {
		var req struct {
			Refunds []refund `json:"refunds"`
		}
		if err := decodeInto(in.Body, &req); err != nil {
			return Decision{}, err
		}
		for _, r := range req.Refunds {
			d.Effects = append(d.Effects, w.plan(r, in))
		}
		st.Owed += int64(len(req.Refunds))
	} else {
		st.Owed--
	}
	next, err := cjson.Marshal(st)
	if err != nil {
		return Decision{}, err
	}
	d.State, d.Completion = next, Continue
	if st.Owed == 0 {
		d.Completion = Complete
	}
	return d, nil
}

func (twoAtOnce) Init(string) ([]byte, error) { return []byte(`{"owed":0}`), nil }

// A receipt must reach the workflow. When one effect of a pass closes and
// another waits for a person, the closed effect's receipt must survive the
// pass (the checkpoint keeps it queued) and be accepted later; a runner that
// kept the queue in one pass's memory trips turn-conservation at the next
// load.
func TestEveryReceiptReachesTheWorkflow(t *testing.T) {
	h := newHarness(t)
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: h.store, Workflows: []Workflow{twoAtOnce{refunds{limit: 100}}}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	h.dest.script = []effect.Outcome{effect.Succeeded, effect.Unknown}
	h.dest.lookupErr = true
	h.start("run", `{"refunds":[{"id":"a","amount":1,"payee":"x"},{"id":"b","amount":2,"payee":"y"}]}`)
	st, _ := r.Inspect(ctx, "run")
	if st.State != "HUMAN_RECONCILIATION" || len(st.Unknown) != 1 {
		t.Fatalf("status %+v", st)
	}
	checkStored(t, h, "run")
	// The same rest with the queue held in memory and lost: the wire sees it.
	atLoad := storedBoundaries(t, h, "run")[0]
	closed := slices.ContainsFunc(atLoad.OpenBefore, func(e tripwire.Effect) bool { return e.Stage == tripwire.StageClosed })
	if !closed || len(atLoad.AwaitingBefore) != 1 {
		t.Fatalf("at rest the checkpoint should hold the closed effect and its queued receipt: open %+v, queue %+v", atLoad.OpenBefore, atLoad.AwaitingBefore)
	}
	atLoad.AwaitingBefore = nil
	if !slices.ContainsFunc(tripwire.Check(atLoad), func(tr tripwire.Trip) bool { return tr.Wire == tripwire.WireTurnConservation }) {
		t.Fatal("a closed effect whose receipt waits for nothing did not trip")
	}
	if err := r.Reconcile(ctx, "run", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	checkStored(t, h, "run")
	rcs, _ := h.store.Receipts(ctx, "run")
	evs, _ := h.store.Events(ctx, "run", 0)
	accepted := 0
	for _, e := range evs {
		var in struct {
			Kind string `json:"kind"`
		}
		if e.Kind == EventAccepted && json.Unmarshal(e.Body, &in) == nil && in.Kind == "receipt" {
			accepted++
		}
	}
	if len(rcs) != 2 || accepted != len(rcs) {
		t.Fatalf("%d receipts committed, %d accepted as inputs", len(rcs), accepted)
	}
}
