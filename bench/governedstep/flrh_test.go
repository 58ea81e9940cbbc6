package governedstep

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/openended"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
	"github.com/jackc/pgx/v5/pgxpool"
)

// openEnded is the refund-agent bundle that never completes
// (openended.RefundAgent): one run takes any number of governed steps.
func openEnded(t testing.TB) *bundle.Workflow {
	t.Helper()
	wf, err := openended.RefundAgent()
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

type flrhSystem struct {
	t    testing.TB
	r    *runner.Runner
	wf   *bundle.Workflow
	sb   *sandbox.Sandbox
	tag  string
	st   store.Store
	foot func() (int64, int64, error)
	done func()
}

func newFlrh(t testing.TB, st store.Store, tag string) *flrhSystem {
	t.Helper()
	return newFlrhAdapter(t, st, tag, nil)
}

// newFlrhAdapter is newFlrh with the destination's adapter handed through
// wrap, when not nil, before the runner gets it.
func newFlrhAdapter(t testing.TB, st store.Store, tag string, wrap func(effect.Adapter) effect.Adapter) *flrhSystem {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 24})
	if err != nil {
		t.Fatal(err)
	}
	var ad effect.Adapter = sb.Adapter()
	if wrap != nil {
		ad = wrap(ad)
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", ad); err != nil {
		t.Fatal(err)
	}
	wf := openEnded(t)
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg,
		Owner: "bench-" + tag, MaxTransitions: 1 << 40, Parallelism: 64,
		// The harness advances every run it starts on this runner.
		LeaseStarts: true})
	if err != nil {
		t.Fatal(err)
	}
	return &flrhSystem{t: t, r: r, wf: wf, sb: sb, tag: tag, st: st}
}

func refundInput(run, step int) []byte {
	return []byte(fmt.Sprintf(`{"type":"refund.requested/1","payload":{"amount":%d,"payee":"p%d","reason":"damaged item","refund_id":"r-%d-%d"}}`,
		10+step, run, run, step))
}

func (s *flrhSystem) runID(i int) string { return fmt.Sprintf("%s-%d", s.tag, i) }

func (s *flrhSystem) run(i, k int, lat func(time.Duration)) error {
	id := s.runID(i)
	for j := 0; j < k; j++ {
		t0 := time.Now()
		// One pass is the whole step: a pass ends only when the run
		// waits for input (check counts every step's receipt).
		var err error
		if j == 0 {
			// The run's creation, its lease, its input and its first tick
			// are one commit (one fewer than Start, then Advance), the
			// input recorded as Start records it.
			_, err = s.r.StartAdvance(ctx, id, s.wf.ID(), s.wf.Version(), refundInput(i, j), runner.Actor{Name: "runner", Role: "runner", Capability: "run.start"})
		} else {
			// The input is accepted by the tick it starts, in that tick's
			// commit (one commit fewer than Submit, then Advance).
			_, err = s.r.SubmitAdvance(ctx, id, refundInput(i, j), runner.Actor{Name: "bench", Role: "agent", Capability: "run.input"})
		}
		if err != nil {
			return err
		}
		lat(time.Since(t0))
	}
	return nil
}

func (s *flrhSystem) footprint() (int64, int64, error) { return s.foot() }

func (s *flrhSystem) check(runs, steps int) error {
	if got := len(s.sb.Mutations()); got != runs*steps {
		return fmt.Errorf("destination applied %d mutations for %d governed steps", got, runs*steps)
	}
	for i := 0; i < runs; i++ {
		rcs, err := s.st.Receipts(ctx, s.runID(i))
		if err != nil {
			return err
		}
		if len(rcs) != steps {
			return fmt.Errorf("run %s has %d receipts, want %d", s.runID(i), len(rcs), steps)
		}
	}
	return nil
}

func newFlrhSQLite(t testing.TB) system {
	dir := t.TempDir()
	path := filepath.Join(dir, "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Store calls are counted (BenchmarkFlrhSQLite reports them per step).
	s := newFlrh(t, &countingStore{Store: st, calls: map[string]*callCount{}}, "sq")
	s.foot = func() (int64, int64, error) { return sqliteFootprint(st.DB(), path) }
	s.done = func() { s.r.Close(ctx); st.Close() }
	return s
}

func newFlrhPostgres(t testing.TB, dsn string) system {
	schema := fmt.Sprintf("bench_flrh_%d", time.Now().UnixNano())
	st, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema, MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	s := newFlrh(t, st, "pg")
	s.foot = func() (int64, int64, error) { return pgFootprint(st.Pool(), schema) }
	s.done = func() {
		s.r.Close(ctx)
		st.Pool().Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		st.Close()
	}
	return s
}

// sqliteFootprint counts every row of every table and the bytes of the
// database and its write-ahead log.
func sqliteFootprint(db *sql.DB, path string) (rows, bytes int64, err error) {
	names, err := queryStrings(db, `SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return 0, 0, err
	}
	for _, n := range names {
		var c int64
		if err := db.QueryRow(`SELECT COUNT(*) FROM "` + n + `"`).Scan(&c); err != nil {
			return 0, 0, err
		}
		rows += c
	}
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			bytes += fi.Size()
		}
	}
	return rows, bytes, nil
}

func queryStrings(db *sql.DB, q string) ([]string, error) {
	rs, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}

// pgFootprint counts every row of every table in the schema and their
// total size on disk (heap, indexes, TOAST).
func pgFootprint(pool *pgxpool.Pool, schema string) (rows, bytes int64, err error) {
	rs, err := pool.Query(ctx, `SELECT quote_ident(table_schema)||'.'||quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, schema)
	if err != nil {
		return 0, 0, err
	}
	var names []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			rs.Close()
			return 0, 0, err
		}
		names = append(names, s)
	}
	rs.Close()
	for _, n := range names {
		var c, b int64
		if err := pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM `+n+`), pg_total_relation_size('`+n+`')`).Scan(&c, &b); err != nil {
			return 0, 0, err
		}
		rows += c
		bytes += b
	}
	return rows, bytes, nil
}

func (s *flrhSystem) close() { s.done() }

// CreateRunCommit is counted as one Commit, the write it is: a run's
// creation with its first tick (runner.StartAdvance), one transaction.
func (c *countingStore) CreateRunCommit(ctx context.Context, run store.Run, owner string, ttl time.Duration, first []store.Inbound, tick store.Tick) (store.Lease, error) {
	defer c.count("Commit")()
	sc, ok := c.Store.(store.StartCommitter)
	if !ok {
		return store.Lease{}, fmt.Errorf("store %T cannot create a run with its first tick", c.Store)
	}
	return sc.CreateRunCommit(ctx, run, owner, ttl, first, tick)
}
