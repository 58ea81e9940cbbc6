package runner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/tripwire"
)

// picky is the in-process destination behind an adapter that, like the
// HTTP adapter with a body over its limit, refuses to encode some intents:
// its ContentDigest fails for any refund to the payee "mallory".
type picky struct{ *destination }

var errTooBig = errors.New("picky: TOO_LARGE: the request exceeds the limit")

func (p picky) ContentDigest(in effect.Intent) (string, error) {
	if strings.Contains(string(in.Payload), `"mallory"`) {
		return "", errTooBig
	}
	return cjson.Digest(in.Payload), nil
}

func (h *harness) pickyRunner() *Runner { return h.runnerWith(picky{h.dest}, nil) }

// An intent its adapter can never encode parks the run with the adapter's
// reason instead of failing every pass with nothing recorded; nothing is
// sent, nothing the tick decided is kept, and other runs go on.
//
// A runner whose adapter refuses the first input's effect refuses the run
// up front (TestUnsendableFirstInputIsRefused); a run meets the refusal on
// a pass when a later input plans the effect, or, as here, when the run
// was created under an adapter that took it and is advanced under one
// that does not.
func TestUnsendableIntentParksItsRun(t *testing.T) {
	h := newHarness(t)
	if err := h.r.Start(ctx, "stuck", "refunds", "1", []byte(`{"refunds":[{"id":"m1","amount":40,"payee":"mallory"}]}`)); err != nil {
		t.Fatalf("start: %v", err)
	}
	h.r = h.pickyRunner()
	if err := h.r.Start(ctx, "bystander", "refunds", "1", []byte(small)); err != nil {
		t.Fatal(err)
	}
	h.idle()

	run := h.run("stuck")
	if !strings.Contains(run.Quarantine, "tripwire "+string(tripwire.ParkSafeMode)+": "+wireUnsendable) ||
		!strings.Contains(run.Quarantine, errTooBig.Error()) || !strings.Contains(run.Quarantine, "intent:m1") {
		t.Fatalf("run not parked with the adapter's reason: state %s, quarantine %q", run.State, run.Quarantine)
	}
	tr, err := h.store.Trace(ctx, "stuck")
	if err != nil || len(tr) == 0 || tr[len(tr)-1].Kind != tripwire.ReportKind {
		t.Fatalf("no tripwire report in the trace (%v): %+v", err, tr)
	}
	var rep tripwire.Report
	if err := json.Unmarshal(tr[len(tr)-1].Body, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Trips) != 1 || rep.Trips[0].Wire != wireUnsendable || rep.Trips[0].Where != "/open_after/0" ||
		rep.Disposition.Park != tripwire.ParkSafeMode || rep.Disposition.Summon != tripwire.SummonSafeMode {
		t.Fatalf("report %s", tr[len(tr)-1].Body)
	}
	// Frozen: no intent, no event beyond what was durable before the tick.
	if ins, err := h.store.Intents(ctx, "stuck"); err != nil || len(ins) != 0 {
		t.Fatalf("intents %v (%v)", ins, err)
	}
	if evs, err := h.store.Events(ctx, "stuck", 0); err != nil || int64(len(evs)) != run.Head {
		t.Fatalf("events %d, head %d (%v)", len(evs), run.Head, err)
	}
	if _, sent := h.dest.applied["idem:m1"]; sent {
		t.Fatal("the unsendable intent reached the destination")
	}
	// A later pass neither fails nor moves the parked run.
	if moved, err := h.r.Advance(ctx, "stuck"); err != nil || moved {
		t.Fatalf("advance after park: moved %v, err %v", moved, err)
	}
	if again := h.run("stuck"); again.Head != run.Head {
		t.Fatalf("parked run moved: head %d -> %d", run.Head, again.Head)
	}
	if s := h.run("bystander").State; s != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("bystander %s, mutations %d", s, h.dest.count())
	}
}

// A first input whose effect its adapter cannot encode is refused when the
// run is asked for, as an input the workflow refuses is: nothing is
// created, and the refusal names the effect and the adapter's reason.
func TestUnsendableFirstInputIsRefused(t *testing.T) {
	h := newHarness(t)
	h.r = h.pickyRunner()
	err := h.r.Start(ctx, "stuck", "refunds", "1", []byte(`{"refunds":[{"id":"m1","amount":40,"payee":"mallory"}]}`))
	var refused *InputRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "refund.pay effect it plans cannot be sent") || !strings.Contains(err.Error(), errTooBig.Error()) {
		t.Fatalf("start with an unsendable first effect: %v", err)
	}
	if runs, err := h.store.Runs(ctx, "", 10); err != nil || len(runs) != 0 {
		t.Fatalf("runs after the refusal: %v (%v)", runs, err)
	}
	// The same input through a runner whose adapter takes it starts.
	if err := h.r.Start(ctx, "fine", "refunds", "1", []byte(small)); err != nil {
		t.Fatal(err)
	}
}
