package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkCompact compacts a store of 2,000 ended runs (every kind of
// record each, storetest.EndedWithEverything), half of them pruned before
// the first compaction: each op is one Compact whole (VACUUM with
// secure_delete, the log checkpointed and truncated). The first op finds
// the pruned half's free pages to drop; later ones rewrite a store with
// none. It reports the store's size and MB/s of it.
func BenchmarkCompact(b *testing.B) {
	ctx := context.Background()
	c := storetest.NewClock()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{Clock: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t := &testing.T{}
	for i := range 2000 {
		storetest.EndedWithEverything(t, s, c, fmt.Sprintf("run-%05d", i))
	}
	if t.Failed() {
		b.Fatal("building the store failed")
	}
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
