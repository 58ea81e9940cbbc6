package postgres

import (
	"testing"

	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/verify"
)

// BenchmarkVerifyManyRuns measures verify.Many over 66 runs the runner
// wrote (64 refund-agent runs and two refunds demo runs, one with a grant),
// as `flrh verify --all` checks them, on one worker per CPU.
func BenchmarkVerifyManyRuns(b *testing.B) {
	st := openTest(b, Options{})
	amounts := make([]int, 64)
	for i := range amounts {
		amounts[i] = 5 + i%40
	}
	ids := refundruns.Record(b, st, "", true, amounts...)
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
