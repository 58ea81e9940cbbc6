package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// BenchmarkScheduleHeads: what a scheduled start pays for its head (one
// synced write before the run is started) and what a schedule with
// overlap skip reads at each time due, over a store keeping 1,000
// schedules' heads.
func BenchmarkScheduleHeads(b *testing.B) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), nil)
	defer s.Close()
	due := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		if err := s.SetScheduleHead(ctx, store.ScheduleHead{Name: fmt.Sprintf("s-%d", i), RunID: fmt.Sprintf("s-%d-first", i), Due: due}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("set", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := s.SetScheduleHead(ctx, store.ScheduleHead{Name: "s-500", RunID: fmt.Sprintf("s-500-%d", i), Due: due.Add(time.Duration(i+1) * time.Minute)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, ok, err := s.ScheduleHead(ctx, "s-499"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}
