// Package governedstep measures flrh's governed step side by side with
// DBOS Transact's bare durable step, on the same database in the same run.
//
// The harness shape is the same for every system: N runs of K steps, C runs
// in flight. A flrh step is one input taken through F, L, the seam, R and H
// (the refund-agent bundle), a low-risk refund authorized, its intent,
// outbox row, first attempt and checkpoint committed, the payment applied by
// an in-process destination and its receipt committed and accepted back. A
// DBOS step is `dbos.RunAsStep` of a function that does nothing: the least
// a durable step can cost there. The comparison is therefore generous to
// DBOS.
//
// PostgreSQL runs need FLRH_TEST_POSTGRES (a DSN); the SQLite runs need
// nothing. Run with
//
//	cd bench && FLRH_TEST_POSTGRES=postgres://... go test ./governedstep -run Compare -v
//
// Sizes: FLRH_BENCH_RUNS (N, default 40), FLRH_BENCH_STEPS (K, default 10).
package governedstep

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
)

var ctx = context.Background()

// system is one durable-execution system under the harness.
type system interface {
	// run executes run i with k steps, reporting each step's latency.
	run(i, k int, lat func(time.Duration)) error
	// footprint reads rows and bytes held by the system's store so far.
	footprint() (rows, bytes int64, err error)
	// check verifies, after the campaign, that every step took effect
	// exactly once.
	check(runs, steps int) error
	close()
}

// result is one campaign's figures.
type result struct {
	name              string
	c, steps          int
	wall              time.Duration
	p50, p99          time.Duration
	rowsPer, bytesPer float64
}

func (r result) perSec() float64 { return float64(r.steps) / r.wall.Seconds() }

// inFlight calls do(0) … do(n-1) with c calls in flight, each worker taking
// the next i as it finishes one, and returns the first error any call
// returned (a worker stops at its error; the others go on).
func inFlight(n, c int, do func(i int) error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, max(c, 1))
	)
	for w := 0; w < max(c, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// campaign runs n runs of k steps with c in flight.
func campaign(t *testing.T, name string, s system, n, k, c int) result {
	t.Helper()
	rows0, bytes0, err := s.footprint()
	if err != nil {
		t.Fatalf("%s: footprint: %v", name, err)
	}
	var (
		mu   sync.Mutex
		lats = make([]time.Duration, 0, n*k)
	)
	rec := func(d time.Duration) { mu.Lock(); lats = append(lats, d); mu.Unlock() }
	start := time.Now()
	err = inFlight(n, c, func(i int) error {
		if err := s.run(i, k, rec); err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		return nil
	})
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := s.check(n, k); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	rows1, bytes1, err := s.footprint()
	if err != nil {
		t.Fatalf("%s: footprint: %v", name, err)
	}
	slices.Sort(lats)
	steps := n * k
	return result{name: name, c: c, steps: steps, wall: wall,
		p50: lats[len(lats)/2], p99: lats[min(len(lats)-1, len(lats)*99/100)],
		rowsPer:  float64(rows1-rows0) / float64(steps),
		bytesPer: float64(bytes1-bytes0) / float64(steps)}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCompare runs every system on every backend at C=1 and C=8, one after
// the other in the same process, and prints one table with the ratios.
// It asserts only that each system did its work exactly once; the figures
// are printed, never asserted.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("side-by-side campaign; not in -short")
	}
	if os.Getenv("FLRH_BENCH_COMPARE") == "" {
		t.Skip("set FLRH_BENCH_COMPARE=1 to run the side-by-side campaign (it takes a minute or more)")
	}
	n, k := envInt("FLRH_BENCH_RUNS", 40), envInt("FLRH_BENCH_STEPS", 10)
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	type backend struct {
		name string
		flrh func(t testing.TB) system
		dbos func(t testing.TB) system
	}
	backends := []backend{{"sqlite", newFlrhSQLite, newDBOSSQLite}}
	if dsn != "" {
		backends = append(backends, backend{"postgres",
			func(t testing.TB) system { return newFlrhPostgres(t, dsn) },
			func(t testing.TB) system { return newDBOSPostgres(t, dsn) }})
	} else {
		t.Log("FLRH_TEST_POSTGRES is unset: PostgreSQL rows skipped")
	}
	var out []result
	for _, b := range backends {
		for _, c := range []int{1, 8} {
			// Interleave the systems so that machine load drifts alike.
			for _, sys := range []struct {
				name string
				mk   func(testing.TB) system
			}{{"flrh", b.flrh}, {"dbos", b.dbos}} {
				s := sys.mk(t)
				out = append(out, campaign(t, sys.name+"/"+b.name, s, n, k, c))
				s.close()
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d runs x %d steps\n", n, k)
	fmt.Fprintf(&sb, "%-16s %3s %10s %10s %10s %10s %9s\n", "system/backend", "C", "steps/s", "p50", "p99", "rows/step", "bytes/step")
	for _, r := range out {
		fmt.Fprintf(&sb, "%-16s %3d %10.0f %10s %10s %10.1f %9.0f\n", r.name, r.c, r.perSec(),
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.rowsPer, r.bytesPer)
	}
	for i := 0; i+1 < len(out); i += 2 {
		f, d := out[i], out[i+1]
		fmt.Fprintf(&sb, "%s C=%d: flrh/dbos steps/s %.2f, p50 %.2f\n", strings.TrimPrefix(f.name, "flrh/"), f.c,
			f.perSec()/d.perSec(), float64(f.p50)/float64(d.p50))
	}
	t.Log(sb.String())
}

// BenchmarkFlrhSQLite is b.N flrh governed steps on the embedded store, in
// runs of ten, for profiling the step. Besides wall time it reports
// cpu-ns/op, the process's user and system CPU per step (GC included),
// which a shared machine disturbs far less than wall time.
func BenchmarkFlrhSQLite(b *testing.B) {
	s := newFlrhSQLite(b)
	defer s.close()
	b.ResetTimer()
	cpu0 := cputime.Used()
	// Runs of ten steps, as in the side-by-side campaign.
	for i := 0; i*10 < b.N; i++ {
		if err := s.run(i, min(10, b.N-i*10), func(time.Duration) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	if cs, ok := s.(*flrhSystem).st.(*countingStore); ok {
		w, r := cs.writesReads()
		b.ReportMetric(float64(w)/float64(b.N), "store-writes/op")
		b.ReportMetric(float64(r)/float64(b.N), "store-reads/op")
	}
}
