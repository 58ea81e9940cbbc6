package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkCommitStepPair commits a governed step's two ticks, one writer:
// the input tick (its input submitted and consumed, an intent begun, five
// events, a 7 KiB checkpoint, four trace records), which waits for the
// disk, and the receipt tick (the attempt's result, the receipt, six
// events, a checkpoint, four trace records), marked MayLag. An op is a
// step.
func BenchmarkCommitStepPair(b *testing.B) { benchStepPair(b, 0) }

// BenchmarkCommitStepPairRuns10 is BenchmarkCommitStepPair in runs of ten
// steps, as bench/governedstep's runs are: what a tick costs that grows
// with its run shows in the one-run benchmark and not here.
func BenchmarkCommitStepPairRuns10(b *testing.B) { benchStepPair(b, 10) }

// benchStepPair commits b.N steps, in one run (perRun 0) or in runs of
// perRun steps.
func benchStepPair(b *testing.B, perRun int) {
	ev := strings.Repeat("e", 700)
	cp := []byte(`{"state":"` + strings.Repeat("s", 7<<10) + `"}`)
	tr := []byte(`{"trace":"` + strings.Repeat("t", 400) + `"}`)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if v := os.Getenv("FLRH_BENCH_LINGER"); v != "" {
		// Under valgrind a step takes tens of milliseconds: the bound is
		// raised so that the instructions counted are those of a step
		// whose lagging tick waits for the next, as it does natively.
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		s.lingerFor = d
	}
	l := leasedRun(b, s)
	events := func(tick *store.Tick, n, k int) {
		for e := 0; e < k; e++ {
			tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"n":%d,"e":%d,"pad":%q}`, n, e, ev)))
		}
		for k := 0; k < 4; k++ {
			tick.Trace = append(tick.Trace, store.TraceRecord{Kind: "t", Body: tr})
		}
	}
	head, runID := int64(0), "r"
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Used()
	pages0 := s.w.logPages.Load()
	for n := 0; n < b.N; n++ {
		if perRun > 0 && n > 0 && n%perRun == 0 {
			runID = fmt.Sprintf("r%d", n/perRun)
			if err := s.CreateRun(ctx, store.Run{ID: runID, WorkflowID: "wf", State: "S"}); err != nil {
				b.Fatal(err)
			}
			if l, err = s.AcquireLease(ctx, runID, "w", time.Hour); err != nil {
				b.Fatal(err)
			}
			head = 0
		}
		id := fmt.Sprintf("i-%d", n)
		in := storetest.Inb(runID, fmt.Sprintf("in-%d", n), "input", fmt.Sprintf(`{"n":%d}`, n))
		first := store.Tick{ExpectHead: head, State: "EFFECT", Submit: []store.Inbound{in}, Consume: []string{in.ID},
			Intents:    []store.Intent{storetest.In(id, "k-"+id, fmt.Sprint(n))},
			Begin:      []string{id},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
		events(&first, n, 5)
		if err := s.Commit(ctx, l, first); err != nil {
			b.Fatal(err)
		}
		head += 5
		second := store.Tick{ExpectHead: head, State: "INGEST", MayLag: true,
			Results:    []store.AttemptResult{{IntentID: id, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts:   []store.Receipt{{IntentID: id, Outcome: "confirmed_success", Body: []byte(`{"ok":true}`), Digest: store.BodyDigest([]byte(`{"ok":true}`))}},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
		events(&second, n, 6)
		if err := s.Commit(ctx, l, second); err != nil {
			b.Fatal(err)
		}
		head += 6
	}
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	s.DB() // commits the last step's lagging tick
	b.ReportMetric(float64(s.w.logPages.Load()-pages0)/float64(b.N), "log-pages/op")
}
