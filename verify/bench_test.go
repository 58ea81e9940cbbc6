package verify

import (
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// longRun records one run of the built-in refund workflow with n refunds
// in its input, each paid through the in-process destination, and returns
// the closed database's path. Every refund adds its effect's control
// records, receipt and accepted-receipt events, so the run's log grows
// linearly with n.
func longRun(tb testing.TB, n int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "long.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &payments{applied: map[string]string{}})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, MaxTransitions: int64(100 * n), Contract: unboundedContract(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	var in strings.Builder
	in.WriteString(`{"refunds":[`)
	for i := range n {
		if i > 0 {
			in.WriteString(",")
		}
		fmt.Fprintf(&in, `{"id":"r%05d","amount":%d,"payee":"payee-%d","reason":"x"}`, i, 1+i%90, i%7)
	}
	in.WriteString(`]}`)
	if err := r.Start(ctx, "long", wf.ID(), wf.Version(), []byte(in.String())); err != nil {
		tb.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	if run, _ := st.Run(ctx, "long"); run.State != "SUCCEEDED" {
		tb.Fatalf("the long run ended %s", run.State)
	}
	return path
}

// BenchmarkVerifyReplay measures verify.Run followed by verify.Replay over
// one long recorded run, reading it from SQLite each time, and reports
// events checked per second of wall and of CPU time.
func BenchmarkVerifyReplay(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("refunds=%d", n), func(b *testing.B) {
			path := longRun(b, n)
			st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			run, err := st.Run(ctx, "long")
			if err != nil {
				b.Fatal(err)
			}
			decide := decideOnly(b, st, wf, []string{"long"})
			verifyRun := func(b *testing.B) {
				rep, err := Run(ctx, st, nil, "long")
				if err != nil || !rep.OK() {
					b.Fatalf("verify: %v %v", err, rep.Findings)
				}
			}
			replay := func(b *testing.B) {
				rp, err := Replay(ctx, st, wf, "long")
				if err != nil || !rp.OK() {
					b.Fatalf("replay: %v %v", err, rp.Findings)
				}
			}
			for _, phase := range []struct {
				name  string
				steps []func(*testing.B)
			}{
				{"verify+replay", []func(*testing.B){verifyRun, replay}},
				{"verify", []func(*testing.B){verifyRun}},
				{"replay", []func(*testing.B){replay}},
				{"decide", []func(*testing.B){func(*testing.B) { decide() }}},
			} {
				b.Run(phase.name, func(b *testing.B) {
					measure(b, int(run.Head), func() {
						for _, step := range phase.steps {
							step(b)
						}
					})
				})
			}
		})
	}
}

// TestLongRunVerifiesAndReplays keeps the benchmark's run honest: a long
// run is found clean by both checks, and its log is as long as claimed.
func TestLongRunVerifiesAndReplays(t *testing.T) {
	path := longRun(t, 40)
	st := open(t, path, true)
	rep, err := Run(ctx, st, nil, "long")
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep)
	}
	if rep.Intents != 40 || rep.Receipts != 40 {
		t.Fatalf("%d intents, %d receipts, want 40 each", rep.Intents, rep.Receipts)
	}
	rp, err := Replay(ctx, st, wf, "long")
	if err != nil || !rp.OK() {
		t.Fatalf("replay: %v %v", err, rp)
	}
	if rp.Effects != 40 {
		t.Fatalf("replay re-derived %d effects, want 40", rp.Effects)
	}
}

// unboundedContract is the default loop contract with every counted budget
// at its ceiling: long benchmark runs measure steps, not budgets.
func unboundedContract(tb testing.TB) *control.Contract {
	const most = "4503599627370496" // 2^52, the contract's ceiling
	c, err := control.DefaultContract().Override([]byte(`{"budgets":{"steps":` + most + `,"tool_calls":` + most +
		`,"wall_seconds":` + most + `,"suspended_seconds":` + most + `}}`))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkVerifyMany measures checking every run of a store that holds
// 200 ordinary refund-agent runs (see manyRuns): for each run verify, then
// replay, each reading the run (as the server's two endpoints do), either
// alone, or both from one read (Check); then all runs at once on one worker
// per CPU, as `flrh replay --all` and `flrh verify --all` do. It reports
// events checked per wall-second and per CPU-second of the whole process.
func BenchmarkVerifyMany(b *testing.B) {
	path, wf, ids := manyRuns(b, 200)
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	events := eventsOf(b, st, ids)
	verifyRun := func(b *testing.B, id string) {
		rep, err := Run(ctx, st, nil, id)
		if err != nil || !rep.OK() {
			b.Fatalf("verify %s: %v %v", id, err, rep.Findings)
		}
	}
	replay := func(b *testing.B, id string) {
		rp, err := Replay(ctx, st, wf, id)
		if err != nil || !rp.OK() {
			b.Fatalf("replay %s: %v %v", id, err, rp.Findings)
		}
	}
	for _, phase := range []struct {
		name string
		each func(*testing.B, string)
	}{
		{"verify+replay", func(b *testing.B, id string) { verifyRun(b, id); replay(b, id) }},
		{"verify", verifyRun},
		{"replay", replay},
		{"check", func(b *testing.B, id string) {
			rep, rp, err := Check(ctx, st, nil, wf, id)
			if err != nil || !rep.OK() || !rp.OK() {
				b.Fatalf("check %s: %v %v %v", id, err, rep.Findings, rp.Findings)
			}
		}},
	} {
		b.Run(phase.name, func(b *testing.B) {
			measure(b, events, func() {
				for _, id := range ids {
					phase.each(b, id)
				}
			})
		})
	}
	// What `flrh replay --all` does: every run checked once, on one worker
	// per CPU.
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i] = Job{RunID: id, Workflow: wf}
	}
	b.Run("check-parallel", func(b *testing.B) {
		measure(b, events, func() {
			out, err := CheckMany(ctx, st, nil, jobs)
			if err != nil || len(out) != len(jobs) {
				b.Fatal(err)
			}
		})
	})
	// The same with the collector's target `flrh verify` and `flrh
	// replay` run under when GOGC is not set (checkGCPercent, cmd/flrh).
	b.Run("check-parallel-gc400", func(b *testing.B) {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		measure(b, events, func() {
			out, err := CheckMany(ctx, st, nil, jobs)
			if err != nil || len(out) != len(jobs) {
				b.Fatal(err)
			}
		})
	})
	b.Run("decide", func(b *testing.B) { measure(b, events, decideOnly(b, st, wf, ids)) })
	b.Run("verify-parallel", func(b *testing.B) {
		measure(b, events, func() {
			if _, err := Many(ctx, st, nil, ids); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// measure runs step in the benchmark's loop and reports events/s over
// wall time and over the process's CPU time.
func measure(b *testing.B, events int, step func()) {
	b.Helper()
	start, cpu := time.Now(), cputime.Used()
	for b.Loop() {
		step()
	}
	wall, used := time.Since(start), cputime.Used()-cpu
	b.ReportMetric(float64(events)*float64(b.N)/wall.Seconds(), "events/s")
	if used > 0 {
		b.ReportMetric(float64(events)*float64(b.N)/used.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(events), "events")
}

// decideOnly returns a step that runs the workflow's Decide alone over the
// accepted inputs of the runs ids, decoded beforehand: what replay spends
// outside the workflow is replay less this.
func decideOnly(b *testing.B, st store.Store, wf runner.Workflow, ids []string) func() {
	inputs := make([][]runner.Accepted, len(ids))
	for i, id := range ids {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == runner.EventAccepted {
				in, err := runner.DecodeAccepted(e.Body)
				if err != nil {
					b.Fatal(err)
				}
				inputs[i] = append(inputs[i], in)
			}
		}
	}
	return func() {
		for i, id := range ids {
			state, err := wf.Init(id)
			if err != nil {
				b.Fatal(err)
			}
			for _, in := range inputs[i] {
				d, err := wf.Decide(state, in)
				if err != nil {
					b.Fatal(err)
				}
				if d.Refusal == "" {
					state = d.State
				}
			}
		}
	}
}

// eventsOf is how many events the runs ids of st hold: their heads.
func eventsOf(tb testing.TB, st store.Store, ids []string) int {
	tb.Helper()
	events := 0
	for _, id := range ids {
		run, err := st.Run(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		events += int(run.Head)
	}
	return events
}
