package governedstep

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
	"github.com/jackc/pgx/v5/pgxpool"
)

// job is one DBOS workflow's input: which run, how many steps.
type job struct {
	Run   int `json:"run"`
	Steps int `json:"steps"`
}

// started holds, per run, when the harness asked for it and where its step
// latencies go; the workflow body reads it so that step 0 includes the
// workflow's start, as flrh's step 0 includes the run's.
var started sync.Map // int -> *clock

type clock struct {
	prev time.Time
	lat  func(time.Duration)
}

func noop(context.Context) (int, error) { return 0, nil }

func steps(dctx dbos.Context, in job) (int, error) {
	v, _ := started.Load(in.Run)
	c, _ := v.(*clock)
	for j := 0; j < in.Steps; j++ {
		if _, err := dbos.RunAsStep(dctx, noop, dbos.WithStepName("noop")); err != nil {
			return j, err
		}
		if c != nil {
			now := time.Now()
			c.lat(now.Sub(c.prev))
			c.prev = now
		}
	}
	return in.Steps, nil
}

type dbosSystem struct {
	dctx  dbos.Context
	tag   string
	foot  func() (int64, int64, error)
	count func() (int64, error)
	done  func()
}

func launchDBOS(t testing.TB, cfg dbos.Config) dbos.Context {
	t.Helper()
	cfg.AppName = "flrh-bench"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	dctx, err := dbos.NewContext(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dbos: %v", err)
	}
	dbos.RegisterWorkflow(dctx, steps)
	if err := dbos.Launch(dctx); err != nil {
		t.Fatalf("dbos launch: %v", err)
	}
	return dctx
}

func (s *dbosSystem) run(i, k int, lat func(time.Duration)) error {
	started.Store(i, &clock{prev: time.Now(), lat: lat})
	defer started.Delete(i)
	h, err := dbos.RunWorkflow(s.dctx, steps, job{Run: i, Steps: k}, dbos.WithWorkflowID(fmt.Sprintf("%s-%d", s.tag, i)))
	if err != nil {
		return err
	}
	n, err := h.GetResult()
	if err != nil {
		return err
	}
	if n != k {
		return fmt.Errorf("workflow ran %d of %d steps", n, k)
	}
	return nil
}

func (s *dbosSystem) footprint() (int64, int64, error) { return s.foot() }

func (s *dbosSystem) check(runs, k int) error {
	n, err := s.count()
	if err != nil {
		return err
	}
	if n != int64(runs*k) {
		return fmt.Errorf("dbos recorded %d step outputs for %d steps", n, runs*k)
	}
	return nil
}

func (s *dbosSystem) close() { s.done() }

// newDBOSSQLite gives DBOS a SQLite database opened with the same
// durability as flrh's embedded store (WAL, synchronous=FULL): DBOS's own
// default is synchronous=NORMAL, which does not fsync each commit.
func newDBOSSQLite(t testing.TB) system {
	path := filepath.Join(t.TempDir(), "dbos.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	var sync string
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != "2" {
		t.Fatalf("dbos sqlite: synchronous=%s (%v), want 2 (FULL)", sync, err)
	}
	dctx := launchDBOS(t, dbos.Config{SQLiteSystemDB: db})
	return &dbosSystem{dctx: dctx, tag: "sq",
		foot: func() (int64, int64, error) { return sqliteFootprint(db, path) },
		count: func() (int64, error) {
			var n int64
			err := db.QueryRow(`SELECT COUNT(*) FROM operation_outputs`).Scan(&n)
			return n, err
		},
		done: func() { dbos.Shutdown(dctx, 5*time.Second); db.Close() }}
}

func newDBOSPostgres(t testing.TB, dsn string) system {
	schema := fmt.Sprintf("bench_dbos_%d", time.Now().UnixNano())
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	dctx := launchDBOS(t, dbos.Config{DatabaseURL: dsn, DatabaseSchema: schema})
	return &dbosSystem{dctx: dctx, tag: "pg",
		foot: func() (int64, int64, error) { return pgFootprint(pool, schema) },
		count: func() (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM `+schema+`.operation_outputs`).Scan(&n)
			return n, err
		},
		done: func() {
			dbos.Shutdown(dctx, 5*time.Second)
			pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			pool.Close()
		}}
}
