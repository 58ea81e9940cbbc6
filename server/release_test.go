package server

import (
	"context"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
)

// POST /v1/runs/{id}/release: only a caller whose role carries the
// capability the park summons releases it (a HUMAN_RECONCILIATION park
// asks a reconciler); the release is recorded in the trace under the
// caller's name; a run not parked, or quarantined for an untrusted
// checkpoint, is a conflict. Answers are checked against the OpenAPI
// document by the fixture.
func TestReleaseRoute(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("parked", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("parked", tokViewer, "an approval wait", waiting)
	park := store.ParkPrefix + "HUMAN_RECONCILIATION: fencing"
	if err := f.store.Quarantine(ctx, "parked", park); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tok    string
		status int
	}{{tokAgent, 403}, {tokViewer, 403}, {tokApprover, 403}, {tokOperator, 403}} {
		if a := f.post("/v1/runs/parked/release", tc.tok, `{"reason":"checked"}`); a.status != tc.status {
			t.Fatalf("release with %s: %d %s", tc.tok, a.status, a.body)
		}
	}
	if run, _ := f.store.Run(ctx, "parked"); run.Quarantine != park {
		t.Fatalf("a refused release lifted the park: %q", run.Quarantine)
	}
	if a := f.post("/v1/runs/parked/release", tokReconciler, `{"reason":"ledger checked","x":1}`); a.status != 422 && a.status != 400 {
		t.Fatalf("release with an unknown member: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs/parked/release", tokReconciler, `{"reason":"ledger checked"}`); a.status != 202 {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	if run, _ := f.store.Run(ctx, "parked"); run.Quarantine != "" {
		t.Fatalf("released run still parked: %q", run.Quarantine)
	}
	tr, err := f.store.Trace(ctx, "parked")
	if err != nil || len(tr) == 0 {
		t.Fatalf("trace: %v", err)
	}
	var rec string
	for _, r := range tr {
		if r.Kind == store.ReleaseKind {
			rec = string(r.Body)
		}
	}
	for _, want := range []string{`"by":"rita"`, `"role":"human_reconciler"`, `"capability":"receipt.confirm_external"`, `"reason":"ledger checked"`} {
		if !strings.Contains(rec, want) {
			t.Fatalf("release record %q lacks %s", rec, want)
		}
	}
	if a := f.post("/v1/runs/parked/release", tokReconciler, `{}`); a.status != 409 {
		t.Fatalf("release of a live run: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs/nope/release", tokReconciler, `{}`); a.status != 404 {
		t.Fatalf("release of no run: %d %s", a.status, a.body)
	}
}
