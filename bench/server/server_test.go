// Package server_test is a bounded loopback load test of the HTTP API: a
// SQLite store seeded with many runs of the refund workflow, the API served
// on 127.0.0.1, and clients reading run pages and watching event streams.
//
//	cd bench && go test ./server/ -run Load -v            # latency report
//	cd bench && go test ./server/ -run XXX -bench .        # benchmarks
//
// FLRH_BENCH_RUNS sets how many runs are seeded (default 10000).
// FLRH_BENCH_SEED names a directory where the seeded store is kept
// (seed-N.db) and reused by later runs, which then skip the minute of
// seeding; each run works on its own copy.
// FLRH_BENCH_PROFILE names a directory that receives a CPU profile of each
// measured condition and a block and mutex profile of the whole test.
package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// commitClock records when each run committed, so stream latency is
// measured from the commit itself.
type commitClock struct {
	store.Store
	mu  sync.Mutex
	all map[string][]time.Time
}

func (c *commitClock) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	err := c.Store.Commit(ctx, l, t)
	if err == nil {
		c.mu.Lock()
		c.all[l.RunID] = append(c.all[l.RunID], time.Now())
		c.mu.Unlock()
	}
	return err
}

// Unwrap lets the runner find the SQLite store's ReadyLister.
func (c *commitClock) Unwrap() store.Store { return c.Store }

// firstAfter is the run's first commit at or after t.
func (c *commitClock) firstAfter(runID string, t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.all[runID] {
		if !at.Before(t) {
			return at
		}
	}
	return time.Time{}
}

type env struct {
	clock  *commitClock
	st     store.Store
	r      *runner.Runner
	ts     *httptest.Server
	runs   []string
	cancel context.CancelFunc
	dir    string
	run    func() // starts the background runner
	runOn  sync.Once
}

// startRunner starts the background runner (once): until then the API
// is measured alone; after, with the runner advancing every live run.
func (e *env) startRunner() { e.runOn.Do(e.run) }

var (
	once   sync.Once
	shared *env
	setErr error
)

func seedCount() int {
	if n, err := strconv.Atoi(os.Getenv("FLRH_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// setup opens the store once per process, seeded with every run started
// and advanced until it waits (large refunds) or ends (small ones): seeded
// here, or copied from the seed directory when a store of the same size is
// kept there.
func setup(tb testing.TB) *env {
	once.Do(func() {
		dir, err := os.MkdirTemp("", "flrh-bench-server-")
		if err != nil {
			setErr = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		fail := func(err error) { setErr = err; cancel() }
		n := seedCount()
		path := filepath.Join(dir, "flrh.db")
		kept := ""
		if d := os.Getenv("FLRH_BENCH_SEED"); d != "" {
			kept = filepath.Join(d, fmt.Sprintf("seed-%d.db", n))
			if err := copyFile(kept, path); err == nil {
				fmt.Fprintf(os.Stderr, "reusing the seeded store %s\n", kept)
			} else if !os.IsNotExist(err) {
				fail(err)
				return
			}
		}
		_, statErr := os.Stat(path)
		seeded := statErr == nil
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			fail(err)
			return
		}
		clock := &commitClock{Store: st, all: map[string][]time.Time{}}
		wrapped, notifier := server.NotifyCommits(clock)
		sb, _ := sandbox.New(sandbox.Options{})
		reg := &effect.Registry{}
		reg.Register("refund.pay", "http/1", sb.Adapter())
		wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
		r, err := runner.New(runner.Config{Store: wrapped, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "bench"})
		if err != nil {
			fail(err)
			return
		}
		e := &env{dir: dir, clock: clock, st: wrapped, r: r, cancel: cancel}
		start := time.Now()
		for i := range n {
			id := fmt.Sprintf("run-%06d", i)
			e.runs = append(e.runs, id)
			if seeded {
				continue
			}
			amount := 40
			if i%3 == 0 {
				amount = 900
			}
			in := fmt.Sprintf(`{"refunds":[{"id":"r-%06d","amount":%d,"payee":"p%d","reason":"load"}]}`, i, amount, i%17)
			if err := r.Start(ctx, id, wf.ID(), wf.Version(), []byte(in)); err != nil {
				fail(err)
				return
			}
			if _, err := r.Advance(ctx, id); err != nil {
				fail(err)
				return
			}
		}
		if !seeded {
			fmt.Fprintf(os.Stderr, "seeded %d runs in %v\n", n, time.Since(start).Round(time.Millisecond))
			if kept != "" {
				// VACUUM INTO writes a consistent copy of a live WAL database.
				os.MkdirAll(filepath.Dir(kept), 0o755)
				tmp := kept + ".tmp"
				os.Remove(tmp)
				if _, err := st.DB().ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
					fail(err)
					return
				}
				if err := os.Rename(tmp, kept); err != nil {
					fail(err)
					return
				}
			}
		}
		srv, err := server.New(server.Config{Store: wrapped, Runner: r, Catalog: server.Static{wf}, Notifier: notifier, StreamPoll: time.Second})
		if err != nil {
			fail(err)
			return
		}
		e.run = func() { go r.Run(ctx) }
		e.ts = httptest.NewServer(srv)
		shared = e
	})
	if setErr != nil {
		tb.Fatal(setErr)
	}
	return shared
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func get(tb testing.TB, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
}

// BenchmarkRunPage reads one run's page (header, status from the
// checkpoint, effects and receipts) over loopback HTTP.
func BenchmarkRunPage(b *testing.B) {
	e := setup(b)
	c := e.ts.Client()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		get(b, c, e.ts.URL+"/v1/runs/"+e.runs[(i*7919)%len(e.runs)])
		i++
	}
}

// BenchmarkRunList reads a page of 50 runs, from a cursor deep in the store.
func BenchmarkRunList(b *testing.B) {
	e := setup(b)
	c := e.ts.Client()
	for b.Loop() {
		get(b, c, e.ts.URL+"/v1/runs?limit=50&after="+e.runs[len(e.runs)/2])
	}
}

// BenchmarkRunListFiltered lists runs waiting for approval (a filtered
// scan, bounded per request).
func BenchmarkRunListFiltered(b *testing.B) {
	e := setup(b)
	c := e.ts.Client()
	for b.Loop() {
		get(b, c, e.ts.URL+"/v1/runs?state=WAIT_APPROVAL&limit=50")
	}
}

// TestLoadRunPage measures run-page latency under concurrent clients, with
// the API alone and with the background runner on, then the delay from an
// approval's submission to the run's next commit and from that commit to
// its event on an open stream. It reports numbers and asserts only
// correctness: timings on a shared machine are not a pass/fail criterion.
func TestLoadRunPage(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	e := setup(t)
	stop := profileContention(t)
	defer stop()
	for _, clients := range []int{1, 4, 8} {
		pageLatency(t, e, "API alone", clients, 2000/clients)
	}
	e.startRunner()
	time.Sleep(time.Second)
	// The runner alone, nothing to do but poll: what it costs to find no
	// work among the resting runs.
	cpu0 := cputime.Used()
	time.Sleep(3 * time.Second)
	t.Logf("background runner idle: CPU %v per second of polling", ((cputime.Used() - cpu0) / 3).Round(time.Microsecond))
	for _, clients := range []int{1, 4, 8} {
		pageLatency(t, e, "background runner on", clients, 2000/clients)
	}

	// Approvals, first with the API idle, then with four clients reading
	// run pages meanwhile. Every third run waits for approval.
	waiting := []string{}
	for i := 0; i < len(e.runs); i += 3 {
		waiting = append(waiting, e.runs[i])
	}
	approvals(t, e, "API idle", waiting[:min(15, len(waiting))])
	stopReading := readPages(t, e, 4)
	approvals(t, e, "4 clients reading run pages", waiting[min(15, len(waiting)):min(30, len(waiting))])
	stopReading()

	// Every 30 s the runner also visits every resting run (so that time
	// budgets expire while runs wait); this window holds one such sweep.
	cpu0 = cputime.Used()
	time.Sleep(35 * time.Second)
	t.Logf("background runner idle over 35 s, one deadline sweep included: CPU %v per second", ((cputime.Used() - cpu0) / 35).Round(time.Microsecond))
}

// readPages keeps clients reading run pages until the returned function is
// called.
func readPages(t *testing.T, e *env, clients int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				resp, err := hc.Get(e.ts.URL + "/v1/runs/" + e.runs[(c*1000+i)*7919%len(e.runs)])
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// approvals approves each run with a stream open on it, and times the
// submission against the run's next commit and that commit against the
// event's arrival on the stream.
func approvals(t *testing.T, e *env, label string, ids []string) {
	var delays, ticks []time.Duration
	missed := 0
	for _, id := range ids {
		st, err := e.r.Inspect(context.Background(), id)
		if err != nil || len(st.Waiting) == 0 {
			continue
		}
		resp, err := http.Get(e.ts.URL + "/v1/runs/" + id + "/stream?after=" + strconv.FormatInt(st.Run.Head, 10))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "id: ") {
					got <- time.Now()
					return
				}
			}
		}()
		time.Sleep(20 * time.Millisecond) // let the stream settle into its wait
		t0 := time.Now()
		if err := e.r.Approve(context.Background(), id, st.Waiting[0].RequestID,
			runner.Actor{Name: "bench", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-got:
			committed := e.clock.firstAfter(id, t0)
			delays = append(delays, at.Sub(committed))
			ticks = append(ticks, committed.Sub(t0))
		case <-time.After(20 * time.Second):
			missed++
		}
		resp.Body.Close()
		if missed == 2 {
			break // bounded: the runner is not keeping up
		}
	}
	if missed > 0 {
		t.Logf("runner (%s): %d approvals had no commit within 20 s", label, missed)
	}
	if len(delays) == 0 {
		return
	}
	// The clock is read just after Commit returns, the notification is sent
	// from inside the same call: tiny negative delays are possible.
	t.Logf("stream (%s): the approval's first commit → its event on the stream, %d runs: %s", label, len(delays), percentiles(delays))
	t.Logf("runner (%s): approval submitted → the run's next commit, %d runs: %s", label, len(ticks), percentiles(ticks))
}

// percentiles formats p50, p90, p99 and max of a sample.
func percentiles(d []time.Duration) string {
	slices.Sort(d)
	pct := func(p float64) time.Duration { return d[int(float64(len(d)-1)*p)] }
	return fmt.Sprintf("p50 %v, p90 %v, p99 %v, max %v", pct(.5), pct(.9), pct(.99), d[len(d)-1])
}

// pageLatency reads run pages from concurrent clients and logs percentiles.
func pageLatency(t *testing.T, e *env, label string, clients, perClient int) {
	if dir := os.Getenv("FLRH_BENCH_PROFILE"); dir != "" {
		name := strings.ReplaceAll(fmt.Sprintf("page-%s-%d.cpu.pprof", label, clients), " ", "-")
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cpu0, wait0 := cputime.Used(), runQueueWait()
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for i := range perClient {
				id := e.runs[(c*perClient+i)*7919%len(e.runs)]
				t0 := time.Now()
				resp, err := hc.Get(e.ts.URL + "/v1/runs/" + id)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[c] = append(lat[c], time.Since(t0))
				if resp.StatusCode != 200 {
					t.Errorf("run page %s: %d", id, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu, wait := cputime.Used()-cpu0, runQueueWait()-wait0
	all := slices.Concat(lat...)
	n := time.Duration(len(all))
	t.Logf("run page (%s), %d runs in the store, %d clients × %d requests: %s; CPU %v per page; runnable threads waited %v per page for a CPU",
		label, len(e.runs), clients, perClient, percentiles(all), (cpu / n).Round(time.Microsecond), (wait / n).Round(time.Microsecond))
}

// runQueueWait is how long this process's threads have been runnable but
// waiting for a CPU (the second field of each thread's schedstat): time
// lost to the machine's other work, not spent in the server. Zero where
// the kernel does not report it.
func runQueueWait() time.Duration {
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var total time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fields := strings.Fields(string(b)); len(fields) >= 2 {
			ns, _ := strconv.ParseInt(fields[1], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// profileContention records block and mutex profiles until the returned
// function writes them, when FLRH_BENCH_PROFILE is set.
func profileContention(t *testing.T) func() {
	dir := os.Getenv("FLRH_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	runtime.SetMutexProfileFraction(10)
	return func() {
		for _, name := range []string{"block", "mutex"} {
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err != nil {
				t.Error(err)
				continue
			}
			pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
		}
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.ts.Close()
		shared.cancel()
		shared.st.Close()
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}
