package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// attemptStatuses lists the statuses of the run's only intent's attempts.
func (h *harness) attemptStatuses(run string) []string {
	h.t.Helper()
	ins, err := h.store.Intents(ctx, run)
	if err != nil || len(ins) != 1 {
		h.t.Fatalf("intents %+v: %v", ins, err)
	}
	ats, err := h.store.Attempts(ctx, ins[0].ID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, a := range ats {
		out = append(out, string(a.Status))
	}
	return out
}

func transients(n int) []effect.Outcome {
	out := make([]effect.Outcome, n)
	for i := range out {
		out[i] = effect.FailedTransient
	}
	return out
}

func TestRetriesExhaustedHaltsTheRun(t *testing.T) {
	for _, retries := range []int64{3, 1} {
		t.Run(fmt.Sprintf("%d retries", retries), func(t *testing.T) {
			b := newBudgetRig(t, fmt.Sprintf(`{"budgets":{"retries_per_transition":%d},"retry":{"base_millis":200,"cap_millis":500}}`, retries))
			b.dest.script = transients(20) // fails every time
			b.pay("run", 0, 10)
			run := b.run("run")
			if run.State != "RETRY_EXHAUSTED" || run.Outcome != "retry_exhausted" {
				t.Fatalf("run %s (%s)", run.State, run.Outcome)
			}
			want := slices.Repeat([]string{string(store.AttemptFailedTransient)}, int(retries))
			want = append(want, string(store.AttemptReconciledNotApplied)) // the last one, looked up
			if got := b.attemptStatuses("run"); !slices.Equal(got, want) {
				t.Fatalf("attempts %v, want %v (retries_per_transition+1)", got, want)
			}
			// Backoff before each retry, from the contract.
			l := b.checkLedger("run")
			c := b.r.contractFor(counter{})
			ins, _ := b.store.Intents(ctx, "run")
			var delays []time.Duration
			for n := int64(1); n <= retries; n++ {
				delays = append(delays, time.Duration(control.Jitter(c.Retry.Backoff(n), l.JitterSeed, ins[0].IdempotencyKey, n))*time.Millisecond)
			}
			if got := b.clock.slept(); fmt.Sprint(got) != fmt.Sprint(delays) {
				t.Fatalf("slept %v, the contract says %v", got, delays)
			}
			st, _ := b.r.Inspect(ctx, "run")
			if want := fmt.Sprintf("%s: %d of %d attempts (", ins[0].ID, retries+1, retries+1); !strings.HasPrefix(st.Budget.Retries, want) {
				t.Fatalf("status says %q", st.Budget.Retries)
			}
			// The evidence: the bounded attempt ledger, recorded once.
			a := l.RetriesExhausted
			if a == nil || a.Intent != ins[0].ID || a.Attempts != retries+1 || a.Limit != retries+1 || !slices.Equal(a.Outcomes, want) {
				t.Fatalf("attempt ledger %+v", a)
			}
			// The destination was asked before the failure was minted; the
			// receipt is committed but the run halts before accepting it.
			rcs, _ := b.store.Receipts(ctx, "run")
			if len(rcs) != 1 || rcs[0].Outcome != "confirmed_failure" || b.dest.count() != 0 {
				t.Fatalf("receipts %+v, %d mutations", rcs, b.dest.count())
			}
			if l.Steps != 1 {
				t.Fatalf("%d steps: the failure receipt was accepted", l.Steps)
			}
			path := strings.Join(b.transitions("run"), " ")
			if !strings.HasSuffix(path, "ATTEMPT_RECORDED EFFECT_RESULT_CONFIRMED NO_PENDING_INTERRUPT RETRIES_EXHAUSTED") {
				t.Fatalf("path %s", path)
			}
			evs, _ := b.store.Events(ctx, "run", 0)
			var rec control.Record
			if err := json.Unmarshal(evs[len(evs)-1].Body, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.From != "INGEST" || rec.ActorRole != "retry_controller" || rec.Evidence["bounded_attempt_ledger"] == "" {
				t.Fatalf("record %+v", rec)
			}
			tr, _ := b.store.Trace(ctx, "run")
			found := 0
			for _, r := range tr {
				if r.Kind == RetriesTraceKind {
					found++
				}
			}
			if found != 1 {
				t.Fatalf("%d %s trace records", found, RetriesTraceKind)
			}
		})
	}
}

func TestRecoveryOnTheLastAttemptSucceeds(t *testing.T) {
	h := newHarness(t)
	h.dest.script = transients(3) // the fourth and last attempt goes through
	h.start("run", small)
	if run := h.run("run"); run.State != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("run %s, %d mutations", run.State, h.dest.count())
	}
	if got := h.attemptStatuses("run"); len(got) != 4 || got[3] != string(store.AttemptSucceeded) {
		t.Fatalf("attempts %v", got)
	}
	if l := h.ledgerOf("run"); l.RetriesExhausted != nil {
		t.Fatalf("a recovered intent recorded as exhausted: %+v", l.RetriesExhausted)
	}
}

func TestUnknownOutcomesAreNotRetryableFailures(t *testing.T) {
	// Three transient failures, then the last attempt is applied but its
	// answer lost: the lookup finds it applied. Success, not exhaustion.
	h := newHarness(t)
	h.dest.script = append(transients(3), effect.Unknown)
	h.start("run", small)
	if run := h.run("run"); run.State != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("run %s, %d mutations", run.State, h.dest.count())
	}
	// The same, with a destination that cannot say: a person decides, and
	// the failure they confirm reaches the workflow; the retry controller
	// does not halt the run.
	h = newHarness(t)
	h.dest.script = append(transients(3), effect.Unknown)
	h.dest.lookupErr = true
	h.start("run", small)
	if s := h.run("run").State; s != "HUMAN_RECONCILIATION" {
		t.Fatalf("state %s", s)
	}
	st, _ := h.r.Inspect(ctx, "run")
	if err := h.r.Reconcile(ctx, "run", st.Unknown[0], "confirmed_failure", reconciler); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if run := h.run("run"); run.State != "FAILED_PERMANENT" {
		t.Fatalf("run %s: a person's verdict on an unknown outcome counted as a spent retry", run.State)
	}
	if l := h.ledgerOf("run"); l.RetriesExhausted != nil {
		t.Fatalf("attempt ledger %+v", l.RetriesExhausted)
	}
	checkStored(t, h, "run")
}

func TestARetryRefusedByTheBudgetIsNotRetriesExhausted(t *testing.T) {
	// Two tool calls for an intent allowed four attempts: the budget, not
	// the retry policy, stops the third, and the run ends on its budget.
	b := newBudgetRig(t, `{"budgets":{"tool_calls":2}}`)
	b.dest.script = transients(20)
	b.pay("run", 0, 10)
	l := b.checkLedger("run")
	if run := b.run("run"); run.State != "BUDGET_EXHAUSTED" || l.RetriesExhausted != nil || l.Breach == nil || l.Breach.Dimension != control.DimToolCalls {
		t.Fatalf("run %s, ledger %+v", run.State, l)
	}
}
