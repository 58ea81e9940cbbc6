package runner

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// A run started with labels keeps them on its header, and goes as the
// same run without them goes: its events are as long, and hold none of
// them. Labels the
// rules refuse are refused before anything is written. A delivery that
// starts a run gives it the delivery's labels.
func TestStartRunLabels(t *testing.T) {
	h := newHarness(t)
	want := map[string]string{"order": "A-1042", "team": "payments"}
	given := maps.Clone(want)
	if err := h.r.StartRun(ctx, StartRequest{RunID: "run-a", WorkflowID: "refunds", Version: "1", Input: []byte(small), By: payer, Labels: given}); err != nil {
		t.Fatal(err)
	}
	given["team"] = "changed after the start"
	other := strings.Replace(small, `"r1"`, `"r2"`, 1) // another refund: keys are the workflow's, not the run's
	if err := h.r.StartRun(ctx, StartRequest{RunID: "run-b", WorkflowID: "refunds", Version: "1", Input: []byte(other), By: payer}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	run := h.run("run-a")
	if run.State != "SUCCEEDED" || !maps.Equal(run.Labels, want) {
		t.Fatalf("the labelled run: %s, labels %v", run.State, run.Labels)
	}
	if bare := h.run("run-b"); bare.State != "SUCCEEDED" || bare.Labels != nil {
		t.Fatalf("the bare run: %s, labels %v", bare.State, bare.Labels)
	}
	a, err := h.store.Events(ctx, "run-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.store.Events(ctx, "run-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d events against %d", len(a), len(b))
	}
	for i := range a {
		if strings.Contains(string(a[i].Body), "A-1042") || strings.Contains(string(a[i].Body), "payments") {
			t.Fatalf("event %d holds a label: %s", a[i].Seq, a[i].Body)
		}
		if a[i].Kind != b[i].Kind || len(a[i].Body) != len(b[i].Body) {
			t.Fatalf("event %d differs: %s %s against %s %s", a[i].Seq, a[i].Kind, a[i].Body, b[i].Kind, b[i].Body)
		}
	}

	var le *label.Error
	err = h.r.StartRun(ctx, StartRequest{RunID: "refused", WorkflowID: "refunds", Version: "1", Input: []byte(small), By: payer, Labels: map[string]string{"Team": "x"}})
	if !errors.As(err, &le) || le.Key != "Team" {
		t.Fatalf("a bad label: %v", err)
	}
	if _, err := h.store.Run(ctx, "refused"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a run refused for its labels was written: %v", err)
	}

	got, err := h.r.Deliver(ctx, Delivery{Key: "shop:1", RunID: "delivered", Input: []byte(strings.Replace(small, `"r1"`, `"r3"`, 1)), Actor: "shop", Workflow: "refunds", Version: "1",
		Labels: map[string]string{"flrh.webhook": "shop"}})
	if err != nil || !got.Started {
		t.Fatalf("delivered: %+v %v", got, err)
	}
	if run := h.run("delivered"); run.Labels["flrh.webhook"] != "shop" || len(run.Labels) != 1 {
		t.Fatalf("the delivered run's labels: %v", run.Labels)
	}
}

// A labelled run's notices carry its labels, tick after tick (the header
// a pass keeps as well as the one read afresh), so that routes may take
// them by label.
func TestNoticesCarryLabels(t *testing.T) {
	h := newHarness(t)
	h.r = h.noticing(h.dest)
	want := map[string]string{"order": "A-7", "team": "payments"}
	if err := h.r.StartRun(ctx, StartRequest{RunID: "big", WorkflowID: "refunds", Version: "1", Input: []byte(large), By: payer, Labels: want}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	st, err := h.r.Inspect(ctx, "big")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	got, _ := h.claimAll()
	if len(got) != 1 || got[0].Kind != store.NoticeApproval || !maps.Equal(got[0].Labels, want) {
		t.Fatalf("notices %+v", got)
	}
	if err := h.r.Approve(ctx, "big", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if got, _ = h.claimAll(); len(got) != 1 || got[0].Kind != store.NoticeEnded || !maps.Equal(got[0].Labels, want) {
		t.Fatalf("notices %+v", got)
	}
}
