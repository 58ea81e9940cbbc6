package governedstep

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/internal/tripcount"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"github.com/jackc/pgx/v5"
)

// BenchmarkFlrhPostgres is b.N flrh governed steps on PostgreSQL, in runs
// of ten as in the side-by-side campaign, one at a time. Besides wall time
// it reports cpu-ns/op, this process's user and system CPU per step, and
// server-cpu-ns/op, the CPU of the PostgreSQL backends serving the store's
// connections (read from /proc, so only for a server on this machine; the
// WAL writer's flushes are not in it). Both are far steadier than wall time
// on a shared machine.
func BenchmarkFlrhPostgres(b *testing.B) { benchFlrhPostgres(b, "") }

// BenchmarkFlrhPostgresAsync is BenchmarkFlrhPostgres with the sessions'
// synchronous_commit off: the difference is what waiting for the WAL flush
// of each commit costs a step.
func BenchmarkFlrhPostgresAsync(b *testing.B) { benchFlrhPostgres(b, "synchronous_commit=off") }

// BenchmarkFlrhPostgresRTT is BenchmarkFlrhPostgres with the server half a
// millisecond away: a proxy holds each round trip back by 0.5 ms, as a
// network between the runner and the database would (the server on this
// machine answers over loopback in tens of microseconds).
func BenchmarkFlrhPostgresRTT(b *testing.B) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if dsn == "" {
		b.Skip("FLRH_TEST_POSTGRES is unset")
	}
	p := newCountingProxy(b, dsn, 500*time.Microsecond)
	benchFlrhPostgresAt(b, p.DSN(), "", p, 1, 0)
}

// BenchmarkFlrhPostgresConcurrent is BenchmarkFlrhPostgres with C runs
// advanced at once by C workers (C = 1, 2, 4, 8), each store committing
// every tick alone ("alone") or ticks that arrive together in groups, at
// most n under way at once (postgres.Options.CommitGroups, "groups=n",
// n = 1, 2, 4). Besides the CPU of both processes per step it reports
// steps/s, wall-clock throughput. For one C, alternate them in one
// sitting:
//
//	cd bench && FLRH_TEST_POSTGRES=postgres://... go test ./governedstep -run XXX \
//		-bench 'FlrhPostgresConcurrent/C=8/' -benchtime 1600x -count 3
func BenchmarkFlrhPostgresConcurrent(b *testing.B) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if dsn == "" {
		b.Skip("FLRH_TEST_POSTGRES is unset")
	}
	for _, c := range []int{1, 2, 4, 8} {
		for _, groups := range []int{0, 1, 2, 4} {
			name := fmt.Sprintf("C=%d/alone", c)
			if groups > 0 {
				name = fmt.Sprintf("C=%d/groups=%d", c, groups)
			}
			b.Run(name, func(b *testing.B) { benchFlrhPostgresAt(b, dsn, "", nil, c, groups) })
		}
	}
}

func benchFlrhPostgres(b *testing.B, param string) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if dsn == "" {
		b.Skip("FLRH_TEST_POSTGRES is unset")
	}
	benchFlrhPostgresAt(b, dsn, param, nil, 1, 0)
}

// benchFlrhPostgresAt runs the benchmark on dsn, c runs at a time, with
// the store's CommitGroups set to groups; through p, when not nil, it also
// reports round trips per step. With c > 1 it reports steps/s.
func benchFlrhPostgresAt(b *testing.B, dsn, param string, p *tripcount.Proxy, c, groups int) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		b.Skipf("the server's CPU is read for postgres:// URLs only (%v)", err)
	}
	app := fmt.Sprintf("flrh_bench_%d", time.Now().UnixNano())
	q := u.Query()
	q.Set("application_name", app)
	if k, v, ok := strings.Cut(param, "="); ok {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	schema := "bench_" + app
	st, err := postgres.Open(ctx, u.String(), postgres.Options{Schema: schema, MaxConns: 16, CommitGroups: groups})
	if err != nil {
		b.Fatal(err)
	}
	s := newFlrh(b, st, "pg")
	defer func() {
		s.r.Close(ctx)
		st.Pool().Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		st.Close()
	}()
	var waits *waitSampler
	if os.Getenv("FLRH_BENCH_PG_WAITS") != "" {
		waits = sampleWaits(b, dsn, app)
	}
	b.ResetTimer()
	cpu0, srv0 := cputime.Used(), backendCPU(b, st, app)
	sys0 := backendSys(b, st, app)
	var trips0 int64
	if p != nil {
		trips0 = p.Trips()
	}
	start := time.Now()
	// Runs of ten handed out to c workers as they finish one.
	if err := inFlight((b.N+9)/10, c, func(i int) error {
		return s.run(i, min(10, b.N-i*10), func(time.Duration) {})
	}); err != nil {
		b.Fatal(err)
	}
	if c > 1 {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "steps/s")
	}
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(backendCPU(b, st, app)-srv0)/float64(b.N), "server-cpu-ns/op")
	b.ReportMetric(float64(backendSys(b, st, app)-sys0)/float64(b.N), "server-sys-ns/op")
	if waits != nil {
		waits.report(b)
	}
	if p != nil {
		// Less the round trip of the backend CPU query above. (The
		// proxy's own CPU is in cpu-ns/op.)
		b.ReportMetric(float64(p.Trips()-trips0-1)/float64(b.N), "round-trips/op")
	}
}

// backendCPU sums the user and system CPU of the PostgreSQL backends whose
// application_name is app, from /proc (clock ticks of 10 ms). Backends that
// ended in between are missed; the pool keeps its connections open for the
// benchmark's length.
func backendCPU(b *testing.B, st *postgres.Store, app string) time.Duration {
	rows, err := st.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	rows.Close()
	d, err := cputime.OfProcesses(pids)
	if err != nil {
		b.Skipf("the server's processes are not readable here: %v", err)
	}
	return d
}

// backendSys is the system (kernel) share of backendCPU: the stime of the
// same backends, from /proc/PID/stat (clock ticks of 10 ms).
func backendSys(b *testing.B, st *postgres.Store, app string) time.Duration {
	rows, err := st.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended in between
		}
		// The fields after the command's closing parenthesis: state is
		// the first, stime the thirteenth.
		i := bytes.LastIndexByte(raw, ')')
		if f := strings.Fields(string(raw[i+1:])); i >= 0 && len(f) > 12 {
			v, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// waitSampler reads, every few milliseconds from its own connection, what
// the benchmark's backends are doing (pg_stat_activity), and reports the
// share of backend samples in each class: waiting for this process (idle
// between transactions, or reading the client's next message inside
// one), for the WAL's write or flush, for a relation's extension, for a
// lock, something else, or running. Set FLRH_BENCH_PG_WAITS=1; the
// sampling costs the machine CPU of its own (not in server-cpu-ns/op).
type waitSampler struct {
	stop   chan struct{}
	done   chan struct{}
	counts map[string]int
}

var waitClasses = []string{"client", "wal", "extend", "lock", "other", "running"}

func waitClass(typ, event, state string) string {
	switch {
	case typ == "Client" || state == "idle":
		return "client"
	case event == "WALWrite" || event == "WALSync" || event == "WALInsert" || event == "WALInitSync" || event == "WALInitWrite":
		return "wal"
	case event == "extend" || event == "DataFileExtend":
		return "extend"
	case typ == "Lock" || typ == "LWLock":
		return "lock"
	case typ != "":
		return "other"
	}
	return "running"
}

func sampleWaits(b *testing.B, dsn, app string) *waitSampler {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	w := &waitSampler{stop: make(chan struct{}), done: make(chan struct{}), counts: map[string]int{}}
	go func() {
		defer close(w.done)
		defer conn.Close(ctx)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT coalesce(wait_event_type, ''), coalesce(wait_event, ''), coalesce(state, '')
FROM pg_stat_activity WHERE application_name = $1`, app)
			if err != nil {
				return
			}
			for rows.Next() {
				var typ, event, state string
				if rows.Scan(&typ, &event, &state) == nil {
					w.counts[waitClass(typ, event, state)]++
				}
			}
			rows.Close()
		}
	}()
	return w
}

func (w *waitSampler) report(b *testing.B) {
	close(w.stop)
	<-w.done
	total := 0
	for _, n := range w.counts {
		total += n
	}
	if total == 0 {
		return
	}
	for _, c := range waitClasses {
		b.ReportMetric(100*float64(w.counts[c])/float64(total), c+"-%")
	}
}

// TestPostgresRoundTrips takes a few runs of governed steps through a TCP
// proxy that counts network round trips between the store and PostgreSQL,
// and prints them per step and per store call. A round trip is counted
// each time the client speaks after the server has answered: a pipeline
// of statements sent together is one.
//
//	cd bench && FLRH_BENCH_COMPARE=1 FLRH_TEST_POSTGRES=postgres://... go test ./governedstep -run RoundTrips -v
func TestPostgresRoundTrips(t *testing.T) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if os.Getenv("FLRH_BENCH_COMPARE") == "" || dsn == "" {
		t.Skip("set FLRH_BENCH_COMPARE=1 and FLRH_TEST_POSTGRES to count round trips")
	}
	p := newCountingProxy(t, dsn, 0)
	const runs, steps = 4, 10
	schema := fmt.Sprintf("bench_rt_%d", time.Now().UnixNano())
	st, err := postgres.Open(ctx, p.DSN(), postgres.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st, p: p, calls: map[string]*callCount{}}
	// The PostgreSQL store reads a run it takes up in one round trip; the
	// count goes through that read as the runner makes it.
	s := newFlrh(t, countingTakeUpStore{cs}, "rt")
	defer func() {
		s.r.Close(ctx)
		st.Pool().Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		st.Close()
	}()
	// The first run warms the pool and the prepared-statement caches.
	if err := s.run(0, steps, func(time.Duration) {}); err != nil {
		t.Fatal(err)
	}
	cs.reset()
	rt0 := p.Trips()
	for i := 1; i <= runs; i++ {
		if err := s.run(i, steps, func(time.Duration) {}); err != nil {
			t.Fatal(err)
		}
	}
	total := p.Trips() - rt0
	n := float64(runs * steps)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d runs x %d steps: %.1f round trips per step\n%-14s %8s %8s %10s\n", runs, steps, float64(total)/n, "store call", "calls/step", "trips/call", "trips/step")
	names := make([]string, 0, len(cs.calls))
	for k := range cs.calls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c := cs.calls[k]
		fmt.Fprintf(&sb, "%-14s %8.2f %8.2f %10.2f\n", k, float64(c.n)/n, float64(c.trips)/float64(c.n), float64(c.trips)/n)
	}
	t.Log(sb.String())
	if total == 0 {
		t.Fatal("no round trips counted")
	}
}

// newCountingProxy puts a round-trip counting proxy in front of dsn,
// holding back delay before each round trip as a network would.
func newCountingProxy(t testing.TB, dsn string, delay time.Duration) *tripcount.Proxy {
	p, err := tripcount.Start(dsn, delay)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type callCount struct{ n, trips int64 }

// countingStore counts the store calls a step makes and, through a proxy
// (p, when not nil), attributes round trips to them.
// Calls run one at a time in this test, so the proxy's counter moves only
// for the call in progress (the runner's own background work is off).
type countingStore struct {
	store.Store
	p     *tripcount.Proxy
	mu    sync.Mutex
	calls map[string]*callCount
}

func (c *countingStore) reset() {
	c.mu.Lock()
	c.calls = map[string]*callCount{}
	c.mu.Unlock()
}

func (c *countingStore) count(name string) func() {
	trips := func() int64 { return 0 } // without a proxy, calls alone
	if c.p != nil {
		trips = c.p.Trips
	}
	t0 := trips()
	return func() {
		d := trips() - t0
		c.mu.Lock()
		cc := c.calls[name]
		if cc == nil {
			cc = &callCount{}
			c.calls[name] = cc
		}
		cc.n++
		cc.trips += d
		c.mu.Unlock()
	}
}

func (c *countingStore) Unwrap() store.Store { return c.Store }

// countingTakeUpStore is a countingStore over a store that reads a run it
// takes up in one go (runner.TakeUpReader), counted as one call.
type countingTakeUpStore struct{ *countingStore }

func (c countingTakeUpStore) TakeUp(ctx context.Context, runID string) (store.Run, store.Checkpoint, error, []store.Inbound, error) {
	defer c.count("TakeUp")()
	return c.Store.(runner.TakeUpReader).TakeUp(ctx, runID)
}

func (c *countingStore) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	defer c.count("CreateRun")()
	return c.Store.CreateRun(ctx, run, first...)
}

// CreateRunLeased is counted as one write: the stores offer it (the
// runner's LeaseStarts creates a run already leased through it).
func (c *countingStore) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	defer c.count("CreateRunLeased")()
	lc, ok := c.Store.(store.LeasedCreator)
	if !ok {
		return store.Lease{}, fmt.Errorf("store %T cannot create a run leased", c.Store)
	}
	return lc.CreateRunLeased(ctx, run, owner, ttl, first...)
}
func (c *countingStore) Run(ctx context.Context, id string) (store.Run, error) {
	defer c.count("Run")()
	return c.Store.Run(ctx, id)
}
func (c *countingStore) AcquireLease(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	defer c.count("AcquireLease")()
	return c.Store.AcquireLease(ctx, id, owner, ttl)
}
func (c *countingStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	defer c.count("RenewLease")()
	return c.Store.RenewLease(ctx, l, ttl)
}
func (c *countingStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	defer c.count("ReleaseLease")()
	return c.Store.ReleaseLease(ctx, l)
}
func (c *countingStore) Commit(ctx context.Context, l store.Lease, tick store.Tick) error {
	defer c.count("Commit")()
	return c.Store.Commit(ctx, l, tick)
}
func (c *countingStore) BeginAttempt(ctx context.Context, l store.Lease, id string) (store.Attempt, error) {
	defer c.count("BeginAttempt")()
	return c.Store.BeginAttempt(ctx, l, id)
}
func (c *countingStore) Approval(ctx context.Context, id string) (store.Approval, error) {
	defer c.count("Approval")()
	return c.Store.Approval(ctx, id)
}
func (c *countingStore) Submit(ctx context.Context, in store.Inbound) error {
	defer c.count("Submit")()
	return c.Store.Submit(ctx, in)
}
func (c *countingStore) Inbox(ctx context.Context, id string, pending bool) ([]store.Inbound, error) {
	defer c.count("Inbox")()
	return c.Store.Inbox(ctx, id, pending)
}
func (c *countingStore) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	defer c.count("Events")()
	return c.Store.Events(ctx, id, after)
}
func (c *countingStore) Checkpoint(ctx context.Context, id string) (store.Checkpoint, error) {
	defer c.count("Checkpoint")()
	return c.Store.Checkpoint(ctx, id)
}
func (c *countingStore) Intents(ctx context.Context, id string) ([]store.Intent, error) {
	defer c.count("Intents")()
	return c.Store.Intents(ctx, id)
}
func (c *countingStore) Attempts(ctx context.Context, id string) ([]store.Attempt, error) {
	defer c.count("Attempts")()
	return c.Store.Attempts(ctx, id)
}
func (c *countingStore) Receipts(ctx context.Context, id string) ([]store.Receipt, error) {
	defer c.count("Receipts")()
	return c.Store.Receipts(ctx, id)
}
func (c *countingStore) Trace(ctx context.Context, id string) ([]store.TraceRecord, error) {
	defer c.count("Trace")()
	return c.Store.Trace(ctx, id)
}

// writesReads sums the counted calls: those that commit a transaction of
// their own, and the reads.
func (c *countingStore) writesReads() (writes, reads int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, cc := range c.calls {
		switch name {
		case "CreateRun", "CreateRunLeased", "AcquireLease", "RenewLease", "ReleaseLease", "Commit", "BeginAttempt", "Submit":
			writes += cc.n
		default:
			reads += cc.n
		}
	}
	return writes, reads
}
