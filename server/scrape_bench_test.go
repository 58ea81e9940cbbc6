package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// BenchmarkScrapeApprovalsWaiting measures what a /metrics scrape reads
// for flrh_approvals_waiting over FLRH_BENCH_WAITING runs (default 500)
// resting in WAIT_APPROVAL: the live runs in that state, then the
// approval requests each one waits on.
func BenchmarkScrapeApprovalsWaiting(b *testing.B) {
	n := 500
	if v := os.Getenv("FLRH_BENCH_WAITING"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	f := newFixture(b, tokenFileText)
	for i := range n {
		id := fmt.Sprintf("w-%05d", i)
		if a := f.post("/v1/runs", tokOperator, refundBody(id, fmt.Sprintf("r-%05d", i), 900)); a.status != 201 {
			b.Fatalf("start: %d %s", a.status, a.body)
		}
	}
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ids, err := store.LiveHeadsIn(ctx, f.store, "WAIT_APPROVAL")
		if err != nil {
			b.Fatal(err)
		}
		if len(ids) == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d runs wait", len(ids), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// "every-checkpoint" reads every run's checkpoint, as each scrape did
	// before it remembered counts; "remembered" is a scrape after the
	// first, with no run moved since: the listing alone.
	for _, remember := range []bool{false, true} {
		name := "every-checkpoint"
		if remember {
			name = "remembered"
		}
		b.Run(name, func(b *testing.B) {
			counts := waitCounts{}
			for b.Loop() {
				if !remember {
					clear(counts)
				}
				runs, err := store.LiveHeadsIn(ctx, f.store, "WAIT_APPROVAL")
				if err != nil {
					b.Fatal(err)
				}
				got, err := counts.count(ctx, f.runner.Inspect, runs)
				if err != nil || int(got) != n {
					b.Fatalf("counted %v approvals waiting, %v; want %d", got, err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
		})
	}
}
