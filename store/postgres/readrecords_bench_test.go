package postgres

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

// recordAgentRuns runs the refund agent to idle on st for amounts, and
// the refunds demo twice, once with a refund a person approves; it
// returns the runs' ids.
func recordAgentRuns(t testing.TB, st store.Store, prefix string, amounts []int) []string {
	t.Helper()
	src, err := examples.Bundle("refund-agent")
	must(t, err)
	agent, _, err := bundle.LoadFS(src)
	must(t, err)
	sb, err := sandbox.New(sandbox.Options{})
	must(t, err)
	reg := &effect.Registry{}
	must(t, reg.Register("refund.pay", "http/1", sb.Adapter()))
	refunds := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments"}
	newRunner := func(wf runner.Workflow) *runner.Runner {
		r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg,
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
		must(t, err)
		t.Cleanup(func() { r.Close(ctx) })
		return r
	}
	r := newRunner(agent)
	var ids []string
	for i, amount := range amounts {
		id := fmt.Sprintf("%sagent-%d", prefix, i)
		must(t, r.Start(ctx, id, agent.ID(), agent.Version(), []byte(fmt.Sprintf(
			`{"type":"refund.requested/1","payload":{"amount":%d,"payee":"p%d","reason":"damaged item","refund_id":"r-%d"}}`, amount, i, i))))
		ids = append(ids, id)
	}
	must(t, r.RunToIdle(ctx))
	r = newRunner(refunds)
	small, large := prefix+"small", prefix+"large"
	must(t, r.Start(ctx, small, refunds.ID(), refunds.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"},{"id":"d","amount":9,"payee":"dan","reason":"w"}]}`)))
	must(t, r.Start(ctx, large, refunds.ID(), refunds.Version(), []byte(`{"refunds":[{"id":"b","amount":500,"payee":"bob","reason":"y"},{"id":"c","amount":7,"payee":"carol","reason":"z"}]}`)))
	must(t, r.RunToIdle(ctx))
	waiting, err := r.Inspect(ctx, large)
	must(t, err)
	if len(waiting.Waiting) != 1 {
		t.Fatalf("%s waits for %d approvals", large, len(waiting.Waiting))
	}
	must(t, r.Approve(ctx, large, waiting.Waiting[0].RequestID, runner.Actor{Name: "alice", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Hour))
	must(t, r.RunToIdle(ctx))
	return append(ids, small, large)
}

// BenchmarkVerifyManyRuns measures verify.Many over 66 runs the runner
// wrote (64 refund-agent runs and two refunds demo runs, one with a grant),
// as `flrh verify --all` checks them, on one worker per CPU.
func BenchmarkVerifyManyRuns(b *testing.B) {
	st := openTest(b, Options{})
	amounts := make([]int, 64)
	for i := range amounts {
		amounts[i] = 5 + i%40
	}
	ids := recordAgentRuns(b, st, "", amounts)
	events := 0
	for _, id := range ids {
		run, err := st.Run(ctx, id)
		must(b, err)
		events += int(run.Head)
	}
	b.ReportAllocs()
	for b.Loop() {
		reps, err := verify.Many(ctx, st, nil, ids)
		if err != nil {
			b.Fatal(err)
		}
		for i, rep := range reps {
			if !rep.OK() {
				b.Fatalf("verify %s: %v", ids[i], rep.Findings)
			}
		}
	}
	b.ReportMetric(float64(len(ids)), "runs")
	b.ReportMetric(float64(events), "events")
}
