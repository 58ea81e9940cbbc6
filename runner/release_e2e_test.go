package runner_test

import (
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// The run from decision 1161 (a request too large for the HTTP wire), on
// the real bundle: a person releases it, it trips again since its input is
// unchanged, and its record — park, release, park — verifies and replays.
// A cancel queued while it is parked, then a release, ends it CANCELED.
func TestReleasedTooLargeRunVerifiesAndCancels(t *testing.T) {
	o := newObserved(t, false)
	big := `{"type":"refund.requested/1","payload":{"refund_id":"r-big","amount":40,"payee":"` + plantedPayee + `","reason":"` + strings.Repeat("x", 2_000_000) + `"}}`
	startUnchecked(t, o, "big", []byte(big))
	if err := o.r.RunToIdle(o.ctx); err != nil {
		t.Fatal(err)
	}
	person := runner.Actor{Name: "dana", Role: "operator", Capability: tripwire.SummonSafeMode}
	check := func(wantKinds ...string) {
		t.Helper()
		tr, err := o.st.Trace(o.ctx, "big")
		if err != nil || len(tr) != len(wantKinds) {
			t.Fatalf("trace %d records (%v), want %v", len(tr), err, wantKinds)
		}
		for i, k := range wantKinds {
			if tr[i].Kind != k {
				t.Fatalf("trace record %d is %s, want %s", i, tr[i].Kind, k)
			}
		}
		o.verifiedAndReplayed(t, "big")
	}
	if err := o.r.Release(o.ctx, "big", "limit checked", runner.Actor{Name: "model", Role: "agent", Capability: tripwire.SummonSafeMode}); !errors.As(err, new(*runner.ReleaseRefusedError)) {
		t.Fatalf("an agent's release: %v", err)
	}
	if err := o.r.Release(o.ctx, "big", "limit checked", person); err != nil {
		t.Fatal(err)
	}
	check(tripwire.ReportKind, store.ReleaseKind)
	if err := o.r.RunToIdle(o.ctx); err != nil {
		t.Fatal(err)
	}
	if run, _ := o.st.Run(o.ctx, "big"); !store.IsPark(run.Quarantine) {
		t.Fatalf("the cause persists but the run is not parked again: %+v", run)
	}
	check(tripwire.ReportKind, store.ReleaseKind, tripwire.ReportKind)

	if err := o.r.Cancel(o.ctx, "big", "too large to pay", runner.Actor{Name: "carol", Role: "authorized_requester", Capability: "run.cancel"}); err != nil {
		t.Fatal(err)
	}
	if err := o.r.Release(o.ctx, "big", "cancel queued", person); err != nil {
		t.Fatal(err)
	}
	if err := o.r.RunToIdle(o.ctx); err != nil {
		t.Fatal(err)
	}
	run, err := o.st.Run(o.ctx, "big")
	if err != nil || run.State != "CANCELED" || run.Quarantine != "" {
		t.Fatalf("after cancel and release: %+v (%v)", run, err)
	}
	check(tripwire.ReportKind, store.ReleaseKind, tripwire.ReportKind, store.ReleaseKind)
	if ins, _ := o.st.Intents(o.ctx, "big"); len(ins) != 0 {
		t.Fatalf("an intent was committed: %d", len(ins))
	}
}
