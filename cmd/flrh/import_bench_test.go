package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/refundruns"
)

// BenchmarkImport measures flrh store import per run, from an embedded
// store a real runner wrote (FLRH_BENCH_PRUNE_RUNS runs of the
// refund-agent bundle, default 100) into an empty store of each backend:
// "ended" moves runs that paid their refund (18 events, 1 intent, its
// attempt and receipt, 2 inbox entries, 9 trace records), reading each
// whole and importing it in one transaction (--ended); "live" moves runs
// waiting for an approval, each fenced out of the old store first
// (--live); "archive" takes the paid runs in from the archives flrh store
// prune wrote of them (--archive DIR): each read, decoded and verified
// (the import orders the runs by creation before it writes any), then
// imported in one transaction ("archive-reread": decoded again before it is
// imported, as an import does beyond keepDecoded). The runs are recorded (and for "archive" pruned)
// outside the timer for each iteration.
func BenchmarkImport(b *testing.B) {
	n := len(benchPruneAmounts(b))
	for _, be := range storeBackends() {
		for _, way := range []struct {
			name   string
			amount int
			what   importWhat
		}{{"ended", 30, importWhat{ended: true}}, {"live", 800, importWhat{live: true, to: "bench"}}, {"archive", 30, importWhat{}}, {"archive-reread", 30, importWhat{}}} {
			b.Run(be.name+"/"+way.name, func(b *testing.B) {
				ctx := context.Background()
				amounts := make([]int, n)
				for i := range amounts {
					amounts[i] = way.amount
				}
				runs := 0
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					src, err := openStore(ctx, "sqlite:"+filepath.Join(b.TempDir(), "from.db"), false)
					if err != nil {
						b.Fatal(err)
					}
					refundruns.Record(b, src, "", false, amounts...)
					dir := filepath.Join(b.TempDir(), "archive")
					if strings.HasPrefix(way.name, "archive") {
						if err := os.Mkdir(dir, 0o750); err != nil {
							b.Fatal(err)
						}
						if rep, err := pruneRuns(ctx, src, pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir, Parallel: 1}); err != nil || len(rep.Pruned) != n {
							b.Fatalf("pruned %d of %d runs: %v", len(rep.Pruned), n, err)
						}
					}
					spec := "sqlite:" + filepath.Join(b.TempDir(), "to.db")
					if be.dsn != "" {
						_, spec = freshSchema(b, be.dsn, "flrh_bench_import_")
					}
					dst, err := openStore(ctx, spec, false)
					if err != nil {
						b.Fatal(err)
					}
					if way.name == "archive-reread" {
						defer func(keep int64) { keepDecoded = keep }(keepDecoded)
						keepDecoded = 0
					}
					b.StartTimer()
					var rep importReport
					if strings.HasPrefix(way.name, "archive") {
						rep, err = importArchives(ctx, dst, []string{dir}, false)
					} else {
						rep, err = importRuns(ctx, src, dst, way.what)
					}
					b.StopTimer()
					if moved := len(rep.Ended) + len(rep.Live) + len(rep.Archived); err != nil || moved != n || len(rep.Left) != 0 {
						b.Fatalf("moved %d of %d runs, left %v: %v", moved, n, rep.Left, err)
					}
					runs += n
					src.Close()
					dst.Close()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(runs), "ms/run")
			})
		}
	}
}
