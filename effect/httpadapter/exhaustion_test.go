package httpadapter_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/protocol"
)

// The adapter side of the reference's retry-exhaustion fault family
// (m4b-rx1). The figures are transcribed from the reference corpus's M4B
// fixture: max_attempts 1, a transient attempt outcome, a not-applied query
// leading to a confirmed_failure receipt, an unproven query routed to
// human reconciliation with at most one query after the handoff.
func TestRetryExhaustionQueriesBeforeFailure(t *testing.T) {
	const maxAttempts = 1
	policy := control.RetryPolicy{MaxRetries: maxAttempts - 1, BaseMillis: 500, CapMillis: 60000}

	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 5*time.Second)
	in := fixture.Intent("effect:rx1", payload)
	if err := s.Inject(sandbox.Fault{Key: "effect:rx1", Times: 1, Status: 503}); err != nil {
		t.Fatal(err)
	}
	r := execute(t, a, in)
	class, ok := r.RetryClass()
	if !ok || class != control.ClassTransient {
		t.Fatalf("attempt: %+v", r)
	}
	d, err := policy.Decide(class, maxAttempts, "seed", "effect:rx1")
	if err != nil || d.Action != control.ActionExhausted {
		t.Fatalf("after the last attempt: %+v %v", d, err)
	}
	// Exhausted: the destination is queried before any failure is minted.
	res, err := effect.Reconcile(context.Background(), a, "effect:rx1", r.ContentDigest, effect.RetryPlan(policy, "seed", "effect:rx1", 3))
	if err != nil || res.Status != effect.ConfirmedFailure || len(res.Lookups) != 1 {
		t.Fatalf("query after exhaustion: %+v %v", res, err)
	}
	outcome, ok := res.Lookups[0].ProtocolOutcome()
	if !ok || outcome != protocol.OutcomeConfirmedFailure {
		t.Fatalf("outcome %q", outcome)
	}
	rcpt, err := effect.NewActionReceipt(in.Effect, effect.ReceiptBinding{
		CommandDigest: fixture.ActionDigest, InputRootDigest: fixture.ActionDigest, PlatformDigest: fixture.ActionDigest,
	}, effect.Observation{
		AttemptID: "attempt:rx1:1", Outcome: outcome, OutputDigests: []string{res.Lookups[0].EvidenceDigest},
		RecordedAt: "2026-08-08T00:00:02Z",
	})
	if err != nil || rcpt.Outcome != protocol.OutcomeConfirmedFailure {
		t.Fatalf("failure receipt: %v", err)
	}
	if len(s.Mutations()) != 0 {
		t.Fatal("a failed effect left a mutation")
	}
}

func TestRetryExhaustionUnprovenGoesToAPerson(t *testing.T) {
	var queries atomic.Int32
	url := stub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			queries.Add(1)
			w.Write([]byte(`{"status":"probably"}`)) // not an answer this protocol knows
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	a := newAdapter(t, url, time.Second)
	in := fixture.Intent("effect:rx1b", payload)
	r := execute(t, a, in)
	if r.Outcome != effect.FailedTransient {
		t.Fatalf("attempt: %+v", r)
	}
	res, err := effect.Reconcile(context.Background(), a, "effect:rx1b", r.ContentDigest, effect.Plan{Backoff: []time.Duration{0, 0, 0}})
	if err != nil || res.Status != effect.HumanRequired {
		t.Fatalf("unproven query: %+v %v", res, err)
	}
	if _, ok := res.Lookups[0].ProtocolOutcome(); ok {
		t.Error("an unproven query produced a receipt outcome")
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("%d queries; the handoff allows at most 1", n)
	}
}
