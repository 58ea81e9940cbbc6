package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
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

// BenchmarkCommitSealed is one tick as the runner commits it (one event, a
// 6 KiB checkpoint, four trace records of 1 KiB) with and without
// encryption at rest, side by side.
func BenchmarkCommitSealed(b *testing.B) {
	key, err := sealed.New(bytes.Repeat([]byte{3}, sealed.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	cp := []byte(`{"state":"` + strings.Repeat("s", 6<<10) + `"}`)
	tr := []byte(`{"trace":"` + strings.Repeat("t", 1<<10) + `"}`)
	for _, c := range []struct {
		name   string
		sealer store.Sealer
	}{{"plain", nil}, {"sealed", key}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{Sealer: c.sealer})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"})
			l, _ := s.AcquireLease(ctx, "r", "w", time.Hour)
			trace := []store.TraceRecord{{Kind: "h.fhr", Body: tr}, {Kind: "h.outcome", Body: tr}, {Kind: "mrp.journey", Body: tr}, {Kind: "receipt", Body: tr}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Commit(ctx, l, store.Tick{ExpectHead: int64(i), Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"i":%d}`, i))},
					Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}, Trace: trace}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
