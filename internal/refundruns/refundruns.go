// Package refundruns writes runs of the refund examples to a store
// through a real runner, for tests that need records a runner wrote:
// effects paid at a sandbox destination, a grant a person gave and the
// runner consumed, trace records of several ticks.
package refundruns

import (
	"context"
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Record runs refunds on st, each to idle, and returns the runs' ids in
// the order written: with demo, two runs of the refunds demo that end,
// prefix+"small" and prefix+"large", the large one with a refund a person
// approves; then one run of the refund-agent bundle per amount,
// prefix+"agent-0", prefix+"agent-1", …, whose ticks write several trace
// records each. Any failure fails t.
func Record(t testing.TB, st store.Store, prefix string, withDemo bool, amounts ...int) []string {
	t.Helper()
	ctx := context.Background()
	must := mustOf(t)
	sb, err := sandbox.New(sandbox.Options{})
	must(err)
	agent, reg := agentPaying(t, sb.Adapter())
	run := func(wf runner.Workflow, start func(r *runner.Runner)) {
		t.Helper()
		r := newRunner(t, st, wf, reg)
		start(r)
		must(r.RunToIdle(ctx))
		must(r.Close(ctx))
	}
	var ids []string
	if withDemo {
		wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments"}
		small, large := prefix+"small", prefix+"large"
		run(wf, func(r *runner.Runner) {
			must(r.Start(ctx, small, wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"},{"id":"d","amount":9,"payee":"dan","reason":"w"}]}`)))
			must(r.Start(ctx, large, wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"b","amount":500,"payee":"bob","reason":"y"},{"id":"c","amount":7,"payee":"carol","reason":"z"}]}`)))
			must(r.RunToIdle(ctx))
			in, err := r.Inspect(ctx, large)
			must(err)
			if len(in.Waiting) != 1 {
				t.Fatalf("%s waits for %d approvals", large, len(in.Waiting))
			}
			must(r.Approve(ctx, large, in.Waiting[0].RequestID, runner.Actor{Name: "alice", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Hour))
		})
		ids = append(ids, small, large)
	}
	run(agent, func(r *runner.Runner) {
		for i, amount := range amounts {
			id := fmt.Sprintf("%sagent-%d", prefix, i)
			must(r.Start(ctx, id, agent.ID(), agent.Version(), []byte(fmt.Sprintf(
				`{"type":"refund.requested/1","payload":{"amount":%d,"payee":"p%d","reason":"damaged item","refund_id":"r-%d"}}`, amount, i, i))))
			ids = append(ids, id)
		}
	})
	return ids
}

// Abandoned runs one refund of the refund-agent bundle on st whose payment
// was sent and whose answer was lost (the destination never answers a
// lookup either), so the run waits for a person; a person then abandons
// the effect, and the run ends EFFECT_OUTCOME_UNKNOWN with the effect's
// outbox entry open. It returns the run's id (prefix+"abandoned").
func Abandoned(t testing.TB, st store.Store, prefix string) string {
	t.Helper()
	ctx := context.Background()
	must := mustOf(t)
	id := prefix + "abandoned"
	r, unknown := lostAnswer(t, st, id)
	defer r.Close(ctx)
	must(r.Reconcile(ctx, id, unknown, "abandon", runner.Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.abandon_unknown"}))
	must(r.RunToIdle(ctx))
	run, err := st.Run(ctx, id)
	must(err)
	if run.State != "EFFECT_OUTCOME_UNKNOWN" || run.Outcome == "" {
		t.Fatalf("run %s ended %s/%s after the effect was abandoned", id, run.State, run.Outcome)
	}
	return id
}

// Lost runs one refund of the refund-agent bundle on st whose payment was
// sent and whose answer was lost, and leaves it waiting for a person to
// say what became of it (HUMAN_RECONCILIATION). It returns the run's id
// (prefix+"lost").
func Lost(t testing.TB, st store.Store, prefix string) string {
	t.Helper()
	id := prefix + "lost"
	r, _ := lostAnswer(t, st, id)
	mustOf(t)(r.Close(context.Background()))
	return id
}

// lostAnswer starts run id on st, whose one payment's answer is lost, runs
// it until it waits for a person to reconcile it, and returns the runner
// and the effect.
func lostAnswer(t testing.TB, st store.Store, id string) (*runner.Runner, string) {
	t.Helper()
	ctx := context.Background()
	must := mustOf(t)
	agent, reg := agentPaying(t, lostAnswers{})
	r := newRunner(t, st, agent, reg)
	must(r.Start(ctx, id, agent.ID(), agent.Version(), []byte(
		`{"type":"refund.requested/1","payload":{"amount":25,"payee":"p-lost","reason":"damaged item","refund_id":"r-`+id+`"}}`)))
	must(r.RunToIdle(ctx))
	in, err := r.Inspect(ctx, id)
	must(err)
	if in.State != "HUMAN_RECONCILIATION" || len(in.Unknown) != 1 {
		t.Fatalf("run %s is %s with %d effects unknown; want HUMAN_RECONCILIATION with one", id, in.State, len(in.Unknown))
	}
	return r, in.Unknown[0]
}

// Finish takes run id of the refund-agent bundle on st to its end with a
// runner whose payments go to pay: finance-lead grants each approval it waits
// for, and bob confirms each effect whose outcome is unknown as applied.
// It returns the run's header.
func Finish(t testing.TB, st store.Store, id string, pay effect.Adapter) store.Run {
	t.Helper()
	ctx := context.Background()
	must := mustOf(t)
	agent, reg := agentPaying(t, pay)
	r := newRunner(t, st, agent, reg)
	defer r.Close(ctx)
	must(r.RunToIdle(ctx))
	for range 8 {
		in, err := r.Inspect(ctx, id)
		must(err)
		if len(in.Waiting) == 0 && len(in.Unknown) == 0 {
			break
		}
		for _, w := range in.Waiting {
			must(r.Approve(ctx, id, w.RequestID, runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Hour))
		}
		for _, u := range in.Unknown {
			must(r.Reconcile(ctx, id, u, "confirmed_success", runner.Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.confirm_external"}))
		}
		must(r.RunToIdle(ctx))
	}
	run, err := st.Run(ctx, id)
	must(err)
	return run
}

// lostAnswers is a destination whose every answer is lost: an attempt's
// outcome is unknown, and so is every lookup's.
type lostAnswers struct{}

func (lostAnswers) Execute(context.Context, effect.Intent) (effect.Receipt, error) {
	return effect.Receipt{Outcome: effect.Unknown, Code: "TRANSPORT_AFTER_SEND"}, nil
}

func (lostAnswers) Lookup(context.Context, string, string) (effect.LookupResult, error) {
	return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
}

// mustOf returns a function that fails t on an error.
func mustOf(t testing.TB) func(error) {
	return func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// agentPaying loads the refund-agent bundle and a registry whose
// payments go to pay.
func agentPaying(t testing.TB, pay effect.Adapter) (runner.Workflow, *effect.Registry) {
	t.Helper()
	must := mustOf(t)
	agent, _, err := bundle.LoadExample("refund-agent")
	must(err)
	reg := &effect.Registry{}
	must(reg.Register("refund.pay", "http/1", pay))
	return agent, reg
}

// newRunner is a runner of wf over st whose effects go through reg,
// reconciling an unknown outcome at once.
func newRunner(t testing.TB, st store.Store, wf runner.Workflow, reg *effect.Registry) *runner.Runner {
	t.Helper()
	// Notices are written as every command line runner writes them: while
	// the store is delivered from (its notify duty held).
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, NoticesWhenDelivered: true,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	mustOf(t)(err)
	return r
}
