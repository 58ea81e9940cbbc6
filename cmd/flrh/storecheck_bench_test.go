package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkStoreCheck measures flrh store check over a store of many
// runs (FLRH_BENCH_RUNS, default 100,000): a third ended, one in a
// thousand quarantined and one in a thousand holding a lease long
// expired, the rest live; answered by the store's census ("census") and
// by paging through every header ("walk"). "scrape-reads" times what a
// metrics scrape reads besides checkpoints: the census by state and the
// live runs in one state (about two thirds of the runs, here), listed as
// whole headers; "scrape-heads" the same listing where each run stands;
// "list-filtered" and "list-paged" a run listing filtered by a state no
// run is in, by the store and by paging; "prunable-listed" and
// "prunable-paged" the runs flrh store prune would take, by the store and
// by paging. The runs are copies of one
// run made by SQL: the check reads headers only, and how they were
// written does not change how they are read.
func BenchmarkStoreCheck(b *testing.B) {
	n := 100_000
	if v := os.Getenv("FLRH_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "check.db")
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		seedRuns(b, st, n, func(cols []string, exprs []string) error {
			_, err := st.DB().Exec(`WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
INSERT INTO runs (`+strings.Join(cols, ", ")+`) SELECT `+strings.Join(exprs, ", ")+`
FROM seq, (SELECT * FROM runs WHERE run_id = 'seed') t`, n)
			return err
		}, func() ([]string, error) {
			return columns(st.DB().Query(`SELECT name FROM pragma_table_info('runs')`))
		}, "printf('seed-%07d', n)")
		st.Close()
		benchCheck(b, "sqlite:"+path, n)
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := os.Getenv("FLRH_TEST_POSTGRES")
		if dsn == "" {
			b.Skip("FLRH_TEST_POSTGRES is unset")
		}
		schema, spec := freshSchema(b, dsn, "flrh_bench_")
		st, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			st.Pool().Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			st.Close()
		}()
		ctx := context.Background()
		seedRuns(b, st, n, func(cols []string, exprs []string) error {
			_, err := st.Pool().Exec(ctx, `INSERT INTO runs (`+strings.Join(cols, ", ")+`) OVERRIDING SYSTEM VALUE SELECT `+strings.Join(exprs, ", ")+`
FROM generate_series(1, $1) n, (SELECT * FROM runs WHERE run_id = 'seed') t`, n)
			if err == nil {
				_, err = st.Pool().Exec(ctx, `ANALYZE runs`)
			}
			return err
		}, func() ([]string, error) {
			rows, err := st.Pool().Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'runs'`, schema)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[string])
		}, "'seed-' || lpad(n::text, 7, '0')")
		benchCheck(b, spec, n)
	})
}

// seedRuns creates one run through st and copies it n times by SQL
// (insert), each copy's columns as the benchmark's mix says; id is the
// SQL expression of the n-th copy's id.
func seedRuns(b *testing.B, st store.Store, n int, insert func(cols, exprs []string) error, list func() ([]string, error), id string) {
	b.Helper()
	if err := st.CreateRun(context.Background(), store.Run{ID: "seed", WorkflowID: "wf", WorkflowVersion: "1", State: "INGEST"}); err != nil {
		b.Fatal(err)
	}
	cols, err := list()
	if err != nil {
		b.Fatal(err)
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		switch c {
		case "run_id":
			exprs[i] = id
		case "created_order":
			exprs[i] = "t.created_order + n"
		case "outcome":
			exprs[i] = "CASE WHEN n % 3 = 0 AND n % 1000 NOT IN (1, 2) THEN 'success' ELSE '' END"
		case "quarantine":
			exprs[i] = "CASE WHEN n % 1000 = 1 THEN 'checkpoint digest mismatch' ELSE '' END"
		case "lease_owner":
			exprs[i] = "CASE WHEN n % 1000 = 2 THEN 'dead-runner' ELSE '' END"
		case "lease_expires_at":
			exprs[i] = "CASE WHEN n % 1000 = 2 THEN 1 ELSE 0 END"
		default:
			exprs[i] = "t." + c
		}
	}
	if err := insert(cols, exprs); err != nil {
		b.Fatal(err)
	}
}

// columns reads one column of names.
func columns(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// headersOnly hides a store's census but not its open outbox: the check
// as it was before stores took a census, paging through every header.
type headersOnly struct {
	store.Store
	store.OutboxLister
}

// benchCheck times the check of the store at spec both ways, and holds
// the two to one report.
func benchCheck(b *testing.B, spec string, n int) {
	ctx := context.Background()
	st, err := openStore(ctx, spec, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ol, ok := store.OutboxListerOf(st)
	if !ok {
		b.Fatalf("the %s store does not list its open outbox", spec)
	}
	var reports [2]storeReport
	for i, way := range []struct {
		name string
		st   store.Store
	}{{"census", st}, {"walk", headersOnly{st, ol}}} {
		b.Run(way.name, func(b *testing.B) {
			for b.Loop() {
				reports[i] = storeReport{}
				if err := walkStore(ctx, way.st, time.Now(), 0, &reports[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The reads of a metrics scrape: the census by state, and the live
	// runs in one state from the live runs' index.
	ct, _ := store.CensusTakerOf(st)
	b.Run("scrape-reads", func(b *testing.B) {
		for b.Loop() {
			c, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: time.Now(), ByState: true})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ct.LiveIn(ctx, "INGEST"); err != nil || c.States["INGEST"] != int64(n+1) {
				b.Fatalf("%d runs in INGEST counted, %v", c.States["INGEST"], err)
			}
		}
	})
	// The same with the live runs listed as where each stands (four
	// columns, what a scrape compares), not as whole headers.
	live, err := ct.LiveIn(ctx, "INGEST")
	if err != nil || len(live) == 0 {
		b.Fatalf("%d live runs in INGEST: %v", len(live), err)
	}
	b.Run("scrape-heads", func(b *testing.B) {
		for b.Loop() {
			if _, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: time.Now(), ByState: true}); err != nil {
				b.Fatal(err)
			}
			if heads, err := store.LiveHeadsIn(ctx, st, "INGEST"); err != nil || len(heads) != len(live) {
				b.Fatalf("%d heads listed, %d live runs in INGEST: %v", len(heads), len(live), err)
			}
		}
	})
	// flrh run list --state WAIT_APPROVAL, which no run is in: the whole
	// store scanned, inside the database or a header at a time.
	waiting := store.RunFilter{State: "WAIT_APPROVAL"}
	for _, way := range []struct {
		name string
		st   store.RunLister
	}{{"list-filtered", st}, {"list-paged", storetest.PagesOnly{Store: st}}} {
		b.Run(way.name, func(b *testing.B) {
			for b.Loop() {
				if runs, next, err := store.MatchingRuns(ctx, way.st, "", 100, 0, waiting); err != nil || len(runs) != 0 || next != "" {
					b.Fatalf("%d runs listed, next %q: %v", len(runs), next, err)
				}
			}
		})
	}
	// What flrh store prune reads to find its runs when every ended run
	// qualifies (none pruned yet): every page of store.PrunableRuns, from
	// the store or paged through headers and prunings.
	pr, _ := store.PrunerOf(st)
	ended := 0
	for i := 1; i <= n; i++ {
		if i%3 == 0 && i%1000 != 1 && i%1000 != 2 {
			ended++
		}
	}
	for _, way := range []struct {
		name string
		st   store.Store
	}{{"prunable-listed", st}, {"prunable-paged", struct {
		store.Store
		store.Pruner
	}{st, pr}}} {
		b.Run(way.name, func(b *testing.B) {
			for b.Loop() {
				found, after := 0, ""
				for {
					runs, err := store.PrunableRuns(ctx, way.st, time.Now().Add(time.Hour), after, 500)
					if err != nil {
						b.Fatal(err)
					}
					found += len(runs)
					if len(runs) < 500 {
						break
					}
					after = runs[len(runs)-1].ID
				}
				if found != ended {
					b.Fatalf("%d runs prunable, want %d", found, ended)
				}
			}
		})
	}
	// The checks hold what ran (-bench may select some ways only).
	if r := reports[0]; r.Runs != 0 && (r.Runs != n+1 || len(r.Quarantined) != (n+999)/1000 || len(r.StuckLeases) != (n+998)/1000) {
		b.Fatalf("the census found %d runs, %d quarantined and %d stuck in %d", r.Runs, len(r.Quarantined), len(r.StuckLeases), n+1)
	}
	if reports[0].Runs != 0 && reports[1].Runs != 0 && !reflect.DeepEqual(reports[0], reports[1]) {
		b.Fatal("the census and the walk disagree")
	}
}
