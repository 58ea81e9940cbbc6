package runner_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/tripwire"
	"flrh.dev/flrh/verify"
)

// A refund whose reason makes the HTTP request larger than the wire allows
// can never be sent. The real bundle on SQLite against the sandbox: the
// run is parked with the wire's reason instead of resting in INIT with no
// record, nothing reaches the destination, its record verifies and
// replays, and a refund started beside it is paid.
func TestTooLargeRequestParksTheRun(t *testing.T) {
	o := newObserved(t, false)
	big, err := json.Marshal(map[string]any{"type": "refund.requested/1",
		"payload": map[string]any{"refund_id": "r-big", "amount": 40, "payee": plantedPayee, "reason": strings.Repeat("x", 2_000_000)}})
	if err != nil {
		t.Fatal(err)
	}
	// Asked for with the adapters in hand, the run is refused: nothing is
	// created.
	var refused *runner.InputRefusedError
	if err := o.r.Start(o.ctx, "big", o.wf.ID(), o.wf.Version(), big); !errors.As(err, &refused) || !strings.Contains(err.Error(), httpwire.CodeTooLarge) {
		t.Fatalf("start with the adapters: %v", err)
	}
	if _, err := o.st.Run(o.ctx, "big"); err == nil {
		t.Fatal("the refused run was created")
	}
	startUnchecked(t, o, "big", big)
	if err := o.r.Start(o.ctx, "small", o.wf.ID(), o.wf.Version(), refundInput("r-1", 40)); err != nil {
		t.Fatal(err)
	}
	if err := o.r.RunToIdle(o.ctx); err != nil {
		t.Fatal(err)
	}

	run, err := o.st.Run(o.ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.Quarantine, "tripwire DEGRADED_SAFE_MODE: unsendable") || !strings.Contains(run.Quarantine, httpwire.CodeTooLarge) {
		t.Fatalf("run big: state %s, quarantine %q", run.State, run.Quarantine)
	}
	tr, err := o.st.Trace(o.ctx, "big")
	if err != nil || len(tr) == 0 || tr[len(tr)-1].Kind != tripwire.ReportKind {
		t.Fatalf("no tripwire report (%v)", err)
	}
	var rep tripwire.Report
	if err := json.Unmarshal(tr[len(tr)-1].Body, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Trips) != 1 || rep.Trips[0].Wire != "unsendable" || !strings.Contains(rep.Trips[0].Explanation, httpwire.CodeTooLarge) {
		t.Fatalf("report trips %+v", rep.Trips)
	}
	if ins, err := o.st.Intents(o.ctx, "big"); err != nil || len(ins) != 0 {
		t.Fatalf("an intent was committed: %d (%v)", len(ins), err)
	}
	if strings.Contains(o.logs.String(), plantedPayee) {
		t.Fatal("the payee reached the log")
	}
	o.verifiedAndReplayed(t, "big")
	small, err := o.st.Run(o.ctx, "small")
	if err != nil || small.State != "SUCCEEDED" {
		t.Fatalf("small: %+v (%v)", small, err)
	}
}

// startUnchecked creates a run through a runner with no adapters, which
// cannot check that the first input's effect can be sent: the way a run
// meets an adapter that refuses its intent on a pass (its input created
// before the adapter changed, say) rather than at its start.
func startUnchecked(t *testing.T, o *observed, id string, input []byte) {
	t.Helper()
	r, err := runner.New(runner.Config{Store: o.st, Workflows: []runner.Workflow{o.wf}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(o.ctx, id, o.wf.ID(), o.wf.Version(), input); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
}

// verifiedAndReplayed fails the test unless the run's record verifies and
// replays byte for byte.
func (o *observed) verifiedAndReplayed(t *testing.T, id string) {
	t.Helper()
	vr, err := verify.Run(o.ctx, o.st, control.Default(), id)
	if err != nil || !vr.OK() {
		t.Fatalf("verify %s: %v %+v", id, err, vr)
	}
	rp, err := verify.Replay(o.ctx, o.st, o.wf, id)
	if err != nil || !rp.OK() {
		t.Fatalf("replay %s: %v %+v", id, err, rp)
	}
}
