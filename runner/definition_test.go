package runner

import (
	"errors"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// Two runners on one store hold different definitions of one workflow id
// and version (refunds@1 with two limits). A run records the definition it
// was started under, and the runner without it leaves the run exactly as
// it was — no lease, no event, no quarantine — whether it lists live runs,
// is asked to advance the run, is handed an input for it, or was given
// the run's lease by a claim.
func TestRunnerLeavesRunsOfAnotherDefinition(t *testing.T) {
	h := newHarness(t)
	other := func(limit int64, owner string) *Runner {
		reg := &effect.Registry{}
		if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
			t.Fatal(err)
		}
		r, err := New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: limit}}, Adapters: reg, Owner: owner,
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := other(100, "runner-a"), other(50, "runner-b")
	for _, c := range []struct {
		r  *Runner
		id string
	}{{a, "a"}, {a, "a2"}, {b, "b"}} {
		input := []byte(`{"refunds":[{"id":"` + c.id + `-x","amount":20,"payee":"alice"}]}`) // the refund id keys the payment
		if err := c.r.Start(ctx, c.id, "refunds", "1", input); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := h.run("a").WorkflowDigest, (refunds{limit: 100}).Digest(); got != want {
		t.Fatalf("run a records definition %q, want %q", got, want)
	}
	untouched := func(id string) {
		t.Helper()
		run := h.run(id)
		if run.Head != 0 || run.Lease.Generation != 0 || run.Quarantine != "" || run.Outcome != "" {
			t.Fatalf("run %s was touched by the runner without its definition: %+v", id, run)
		}
	}

	// b's pass over every live run takes its own and leaves a's.
	if err := b.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if run := h.run("b"); run.Outcome != "success" {
		t.Fatalf("b's own run ended %q", run.Outcome)
	}
	untouched("a")
	// Asked to advance it, b refuses, with a typed error.
	_, err := b.Advance(ctx, "a")
	if !errors.Is(err, ErrDefinitionNotLoaded) || store.CodeOf(err) != store.CodeLeaseHeld {
		t.Fatalf("b advancing a: %v (code %q), want ErrDefinitionNotLoaded with LEASE_HELD", err, store.CodeOf(err))
	}
	untouched("a")
	// Handed an input for it, b keeps the input durable for a, and says so.
	moved, err := b.SubmitAdvance(ctx, "a", []byte(`{"refunds":[{"id":"y","amount":30,"payee":"bob"}]}`), Actor{Name: "op", Role: "operator", Capability: "run.input"})
	if err != nil || moved {
		t.Fatalf("b handed a's input: moved %v, %v", moved, err)
	}
	untouched("a")
	if in, err := h.store.Inbox(ctx, "a", true); err != nil || len(in) != 2 {
		t.Fatalf("a's pending inbox: %d entries, %v; want its start input and the one b was handed", len(in), err)
	}
	// A lease a claim gave b on such a run is given back at once.
	l, err := h.store.AcquireLease(ctx, "a2", "runner-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.leases["a2"] = l
	b.mu.Unlock()
	if retry := b.claimedPass(ctx, "a2", 0); retry {
		t.Fatal("b would retry a run of another definition")
	}
	if run := h.run("a2"); run.Head != 0 || run.Quarantine != "" || run.Lease.Owner == "runner-b" && run.Lease.ExpiresAt.After(h.clock.Now()) {
		t.Fatalf("a2 after b's claimed pass: %+v", run)
	}

	// a, which holds the definition, takes both inputs and ends the runs.
	if err := a.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "a2"} {
		if run := h.run(id); run.Outcome != "success" || run.Quarantine != "" {
			t.Fatalf("run %s under its own definition: %+v", id, run)
		}
	}
}
