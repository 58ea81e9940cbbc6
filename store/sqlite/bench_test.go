package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
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

// BenchmarkCommitRunnerTick commits ticks shaped like the refund-agent
// bundle's (six events of about 800 bytes, a 7 KiB checkpoint, four trace
// records, an intent), on 8 runs written by 1 or 8 goroutines at once:
// with 8, concurrent commits share batches (one transaction, one fsync).
// Besides wall time it reports cpu-ns/op, the process's CPU per tick.
func BenchmarkCommitRunnerTick(b *testing.B) {
	ev := strings.Repeat("e", 700)
	cp := []byte(`{"state":"` + strings.Repeat("s", 7<<10) + `"}`)
	tr := []byte(`{"trace":"` + strings.Repeat("t", 400) + `"}`)
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("C=%d", writers), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			leases := make([]store.Lease, 8)
			for r := range leases {
				id := fmt.Sprintf("run-%d", r)
				if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
					b.Fatal(err)
				}
				if leases[r], err = s.AcquireLease(ctx, id, "w", time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			work := func(runs []store.Lease) error {
				heads := make([]int64, len(runs))
				for {
					n := next.Add(1) - 1
					if n >= int64(b.N) {
						return nil
					}
					i := int(n) % len(runs)
					l := runs[i]
					tick := store.Tick{ExpectHead: heads[i], Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
						Intents: []store.Intent{storetest.In(fmt.Sprintf("%s-%d", l.RunID, n), fmt.Sprintf("k-%s-%d", l.RunID, n), fmt.Sprint(n))}}
					for e := 0; e < 6; e++ {
						tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"n":%d,"e":%d,"pad":%q}`, n, e, ev)))
					}
					for k := 0; k < 4; k++ {
						tick.Trace = append(tick.Trace, store.TraceRecord{Kind: "t", Body: tr})
					}
					if err := s.Commit(ctx, l, tick); err != nil {
						return err
					}
					heads[i] += 6
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cputime.Used()
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			per := len(leases) / writers
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() { defer wg.Done(); errs <- work(leases[w*per : (w+1)*per]) }()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
