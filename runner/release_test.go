package runner

import (
	"errors"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

var leaver = Actor{Name: "dana", Role: "operator", Capability: tripwire.SummonSafeMode}

func traceKinds(h *harness, id string) []string {
	tr, err := h.store.Trace(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	var kinds []string
	for _, r := range tr {
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// parkedStuck starts a run whose refund its adapter can never encode: it
// is parked in Degraded Safe Mode on its first pass. (Created under an
// adapter that takes the refund: the picky runner refuses such a run up
// front.)
func parkedStuck(t *testing.T) *harness {
	h := newHarness(t)
	if err := h.r.Start(ctx, "stuck", "refunds", "1", []byte(`{"refunds":[{"id":"m1","amount":40,"payee":"mallory"}]}`)); err != nil {
		t.Fatal(err)
	}
	h.r = h.pickyRunner()
	h.idle()
	if !store.IsPark(h.run("stuck").Quarantine) {
		t.Fatalf("not parked: %q", h.run("stuck").Quarantine)
	}
	return h
}

// Only a person holding the capability the park summons releases it; every
// refusal is typed and writes nothing.
func TestReleaseRefusesAllButThePersonSummoned(t *testing.T) {
	h := parkedStuck(t)
	before := h.run("stuck")
	kinds := traceKinds(h, "stuck")
	for _, tc := range []struct {
		name   string
		by     Actor
		reason string
	}{
		{"an agent", Actor{Name: "model", Role: "agent", Capability: tripwire.SummonSafeMode}, "ok"},
		{"the runner", Actor{Name: "runner", Role: "runner", Capability: tripwire.SummonSafeMode}, "ok"},
		{"another capability", reconciler, "ok"},
		{"no name", Actor{Role: "operator", Capability: tripwire.SummonSafeMode}, "ok"},
		{"no reason", leaver, " "},
	} {
		err := h.r.Release(ctx, "stuck", tc.reason, tc.by)
		var re *ReleaseRefusedError
		if !errors.As(err, &re) || re.Need != tripwire.SummonSafeMode {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	if after := h.run("stuck"); after.Quarantine != before.Quarantine || after.Head != before.Head {
		t.Fatalf("a refused release changed the run: %+v", after)
	}
	if got := traceKinds(h, "stuck"); !slices.Equal(got, kinds) {
		t.Fatalf("a refused release wrote to the trace: %v", got)
	}

	// A quarantine for an untrusted checkpoint is no park: it stays.
	if err := h.r.Start(ctx, "corrupt", "refunds", "1", []byte(small)); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Quarantine(ctx, "corrupt", "checkpoint digest mismatch"); err != nil {
		t.Fatal(err)
	}
	var np *NotParkedError
	if err := h.r.Release(ctx, "corrupt", "looks fine", leaver); !errors.As(err, &np) {
		t.Fatalf("release of a corrupt run: %v", err)
	}
	if q := h.run("corrupt").Quarantine; q != "checkpoint digest mismatch" {
		t.Fatalf("corrupt run's quarantine %q", q)
	}
	if err := h.r.Release(ctx, "nope", "x", leaver); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("release of no run: %v", err)
	}
}

// A released run whose cause persists trips again on its next pass and is
// parked anew for a person; passes after that do not move it.
func TestReleasedRunWhoseCauseStaysTripsAgain(t *testing.T) {
	h := parkedStuck(t)
	if err := h.r.Release(ctx, "stuck", "adapter limit raised", leaver); err != nil {
		t.Fatal(err)
	}
	if q := h.run("stuck").Quarantine; q != "" {
		t.Fatalf("released run still quarantined: %q", q)
	}
	h.idle()
	run := h.run("stuck")
	if !store.IsPark(run.Quarantine) {
		t.Fatalf("released run with its cause in place not parked again: %+v", run)
	}
	want := []string{tripwire.ReportKind, store.ReleaseKind, tripwire.ReportKind}
	if got := traceKinds(h, "stuck"); !slices.Equal(got, want) {
		t.Fatalf("trace %v, want %v", got, want)
	}
	h.idle()
	if got := traceKinds(h, "stuck"); !slices.Equal(got, want) || h.run("stuck").Head != run.Head {
		t.Fatalf("the parked run moved again: %v", got)
	}
	if _, sent := h.dest.applied["idem:m1"]; sent {
		t.Fatal("the unsendable intent reached the destination")
	}
}

// A cancel a person queues while the run is parked waits in its inbox; once
// released, the next pass takes it and the run ends CANCELED.
func TestReleasedRunTakesTheCancelQueuedWhileParked(t *testing.T) {
	h := newHarness(t)
	h.start("tripped", large) // rests in WAIT_APPROVAL
	run := h.run("tripped")
	lease, err := h.store.AcquireLease(ctx, "tripped", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rep := []byte(`{"disposition":{"freeze":true,"park":"DEGRADED_SAFE_MODE","summon":"mrp.leave_safe_mode"}}`)
	if err := h.store.Commit(ctx, lease, store.Tick{ExpectHead: run.Head, Trace: []store.TraceRecord{{Kind: tripwire.ReportKind, Body: rep}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Quarantine(ctx, "tripped", store.ParkPrefix+string(tripwire.ParkSafeMode)+": wedge"); err != nil {
		t.Fatal(err)
	}
	if err := h.r.Cancel(ctx, "tripped", "no longer wanted", requester); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if r := h.run("tripped"); r.Outcome != "" || r.Quarantine == "" {
		t.Fatalf("a parked run took its cancel: %+v", r)
	}
	if err := h.r.Release(ctx, "tripped", "checked the record", leaver); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if r := h.run("tripped"); r.State != "CANCELED" || r.Quarantine != "" {
		t.Fatalf("released run: state %s outcome %s quarantine %q", r.State, r.Outcome, r.Quarantine)
	}
	var np *NotParkedError
	if err := h.r.Release(ctx, "tripped", "again", leaver); !errors.As(err, &np) {
		t.Fatalf("release of an ended run: %v", err)
	}
}
