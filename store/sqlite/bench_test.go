package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkCommitTick measures one fenced tick commit with one event and a
// checkpoint (synchronous=FULL: at least one fsync per commit).
func BenchmarkCommitTick(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"})
	l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
	cp := []byte(`{"state":"x"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: int64(i), Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"i":%d}`, i))},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}); err != nil {
			b.Fatal(err)
		}
	}
}
