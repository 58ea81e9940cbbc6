package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"flrh.dev/flrh/internal/refundruns"
)

// benchPruneAmounts is the refund of each run the pruning benchmarks
// record: FLRH_BENCH_PRUNE_RUNS runs (default 100) of 30 each.
func benchPruneAmounts(b *testing.B) []int {
	n := 100
	if v := os.Getenv("FLRH_BENCH_PRUNE_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	amounts := make([]int, n)
	for i := range amounts {
		amounts[i] = 30
	}
	return amounts
}

// storeBackend is a store backend a test or benchmark runs on: an
// embedded store (dsn "") or the PostgreSQL server dsn names.
type storeBackend struct{ name, dsn string }

// storeBackends are the backends the store tests and benchmarks run on:
// the embedded store, and PostgreSQL when FLRH_TEST_POSTGRES names one.
func storeBackends() []storeBackend {
	backends := []storeBackend{{"sqlite", ""}}
	if dsn := os.Getenv("FLRH_TEST_POSTGRES"); dsn != "" {
		backends = append(backends, storeBackend{"postgres", dsn})
	}
	return backends
}

// BenchmarkPrune measures flrh store prune per run, on runs a real runner
// wrote (FLRH_BENCH_PRUNE_RUNS runs of the refund-agent bundle, default
// 100, each paying one refund on its own: 18 events, 1 intent and its
// attempt and receipt, 2 inbox entries, 9 trace records): reading the
// record, verifying it, encoding it, and then, with "archive", writing
// the archive durably and reading it back, with "compressed" the same
// compressed first (--compress), or with "discard" nothing;
// then the store's removal, one transaction each. The runs are recorded
// outside the timer for each iteration.
func BenchmarkPrune(b *testing.B) {
	amounts := benchPruneAmounts(b)
	n := len(amounts)
	for _, be := range storeBackends() {
		for _, way := range []string{"archive", "compressed", "discard"} {
			for _, parallel := range []int{1, 2, 4} {
				b.Run(fmt.Sprintf("%s/%s/parallel=%d", be.name, way, parallel), func(b *testing.B) {
					ctx := context.Background()
					var runs, bytes, fileBytes int
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						spec := "sqlite:" + filepath.Join(b.TempDir(), "prune.db")
						if be.dsn != "" {
							_, spec = freshSchema(b, be.dsn, "flrh_bench_prune_")
						}
						st, err := openStore(ctx, spec, false)
						if err != nil {
							b.Fatal(err)
						}
						refundruns.Record(b, st, "", false, amounts...)
						dir := ""
						if way != "discard" {
							dir = b.TempDir()
						}
						b.StartTimer()
						rep, err := pruneRuns(ctx, st, pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir, Parallel: parallel, Compress: way == "compressed"})
						b.StopTimer()
						if err != nil || len(rep.Pruned) != n || len(rep.Skipped) != 0 {
							b.Fatalf("pruned %d of %d runs, left %d: %v", len(rep.Pruned), n, len(rep.Skipped), err)
						}
						for _, p := range rep.Pruned {
							runs++
							bytes += p.Bytes
							fileBytes += p.FileBytes
						}
						st.Close()
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(runs), "ms/run")
					b.ReportMetric(float64(bytes)/float64(runs), "archive-bytes/run")
					b.ReportMetric(float64(fileBytes)/float64(runs), "file-bytes/run")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}
