package sqlite

import (
	"context"
	"fmt"
	"testing"

	"flrh.dev/flrh/archive"
)

// BenchmarkCompact compacts a store of 2,000 ended runs (every kind of
// record each, storetest.EndedWithEverything), half of them pruned before
// the first compaction: each op is one Compact whole (VACUUM with
// secure_delete, the log checkpointed and truncated). The first op finds
// the pruned half's free pages to drop; later ones rewrite a store with
// none. It reports the store's size and MB/s of it.
func BenchmarkCompact(b *testing.B) {
	ctx := context.Background()
	s := endedRuns(b, b.TempDir(), 2000)
	for i := 0; i < 2000; i += 2 {
		a, err := archive.Read(ctx, s, fmt.Sprintf("run-%05d", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Prune(ctx, a.Pruning("")); err != nil {
			b.Fatal(err)
		}
	}
	var last int64
	for b.Loop() {
		got, err := s.Compact(ctx)
		if err != nil {
			b.Fatal(err)
		}
		last = got.After
	}
	b.SetBytes(last)
	b.ReportMetric(float64(last)/1e6, "MB-store")
}
