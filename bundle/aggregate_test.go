package bundle

import (
	"strings"
	"testing"

	"flrh.dev/flrh/runner"
)

// capRules cap what one payee may be refunded over a run at 150, with a
// sum over every refund asked for, and end the run at its third paid
// refund, with a count.
const capRules = `
// A payee is over the cap once the refunds asked for them sum past 150;
// under it (explicit negative evidence) while they do not.
.decl over_cap(payee: symbol)
over_cap(p) :- refund_requested(_, _, p), sum a : refund_requested(_, a, p) > 150.
-over_cap(p) :- refund_requested(_, _, p), sum a : refund_requested(_, a, p) <= 150.
done("three") :- count : refund_settled(_, "confirmed_success") >= 3.
`

// A rule file's aggregates decide a precondition across a run's inputs:
// each payee may be refunded at most 150 over the run, so a third refund
// that takes bob past it is rejected while carol's is paid, and the run
// ends with its third paid refund. The record verifies and replays.
func TestAggregatesCapARunsRefunds(t *testing.T) {
	dir := copyExample(t, "refund-agent")
	appendTo(t, dir, "rules.dl", capRules)
	edit(t, dir, "workflow.json", `"payee:not-blocked": {"relation": "blocked", "args": ["$action.payee"], "polarity": "negative"}`,
		`"payee:not-blocked": {"relation": "blocked", "args": ["$action.payee"], "polarity": "negative"},
    "payee:under-cap": {"relation": "over_cap", "args": ["$action.payee"], "polarity": "negative"}`)
	edit(t, dir, "workflow.json", `"complete_when": "done(\"refund\")"`, `"complete_when": "done(\"three\")"`)
	edit(t, dir, "domain.json", `"preconditions": ["refund:requested", "payee:not-blocked"]`, `"preconditions": ["refund:requested", "payee:not-blocked", "payee:under-cap"]`)
	wf, ads, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, wf, ads)
	const run = "refund-cap"
	h.start(run, refund("r-1", 80, "bob", "damaged"))
	by := runner.Actor{Name: "ops", Role: "operator", Capability: "run.submit"}
	for _, in := range []string{refund("r-2", 60, "bob", "damaged"), refund("r-3", 30, "bob", "damaged"), refund("r-4", 40, "carol", "damaged")} {
		if s := h.status(run); s.State != "INGEST" {
			t.Fatalf("before %s the run is %s", in, s.State)
		}
		if err := h.r.Submit(h.ctx, run, []byte(in), by); err != nil {
			t.Fatal(err)
		}
		h.idle()
	}
	var outcomes []string
	for _, n := range h.trace(run, "h.outcome") {
		outcomes = append(outcomes, n["outcome"].(string))
	}
	if strings.Join(outcomes, " ") != "INTENT INTENT REJECTED INTENT" {
		t.Fatalf("outcomes %v", outcomes)
	}
	paid := map[string]bool{}
	for _, in := range h.intents(run) {
		if h.mutationsFor(in.IdempotencyKey) != 1 {
			t.Fatalf("intent %s reached the destination %d times", in.ID, h.mutationsFor(in.IdempotencyKey))
		}
		paid[in.ID] = true
	}
	if len(paid) != 3 {
		t.Fatalf("%d refunds paid, want 3", len(paid))
	}
	if s := h.status(run); s.State != "SUCCEEDED" {
		t.Fatalf("after three paid refunds the run is %s", s.State)
	}
	h.checkRecord(run)
}
