package postgres

import (
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func benchTick(i int64, cp []byte) store.Tick {
	return store.Tick{ExpectHead: i, Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"i":%d}`, i))},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
}

// BenchmarkCommitTick measures one fenced tick commit with one event and a
// checkpoint, one writer (the server's fsync settings apply).
func BenchmarkCommitTick(b *testing.B) { benchCommitTick(b, dsn(b)) }

// BenchmarkCommitTickAsync is BenchmarkCommitTick with the session's
// synchronous_commit off: what remains is round trips and CPU, the part
// of a commit the store's code decides.
func BenchmarkCommitTickAsync(b *testing.B) {
	d := dsn(b)
	sep := "?"
	if strings.Contains(d, "?") {
		sep = "&"
	}
	benchCommitTick(b, d+sep+"synchronous_commit=off")
}

func benchCommitTick(b *testing.B, dsn string) {
	s, err := Open(ctx, dsn, Options{Schema: freshSchema(b)})
	must(b, err)
	defer s.Close()
	must(b, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(b, err)
	cp := []byte(`{"state":"x"}`)
	var lsn0 string
	must(b, s.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn0))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Commit(ctx, l, benchTick(int64(i), cp)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// WAL written per tick (the whole server's, so run it on a quiet one).
	var wal float64
	must(b, s.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::text::pg_lsn)::float8`, lsn0).Scan(&wal))
	b.ReportMetric(wal/float64(b.N), "WAL-B/op")
}

// BenchmarkCommitTickParallel commits ticks of 8 runs at once, one writer
// per run, as 8 runners sharing one database would.
func BenchmarkCommitTickParallel(b *testing.B) {
	const writers = 8
	s := openTest(b, Options{MaxConns: writers})
	leases := make([]store.Lease, writers)
	for w := range leases {
		id := fmt.Sprintf("r%d", w)
		must(b, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}))
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		must(b, err)
		leases[w] = l
	}
	cp := []byte(`{"state":"x"}`)
	var next atomic.Int64
	b.SetParallelism((writers + 1) / 2) // GOMAXPROCS is 2 here; 8 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := next.Add(1) - 1
		if w >= writers {
			for pb.Next() {
				b.Error("more goroutines than runs")
				return
			}
			return
		}
		l := leases[w]
		var head int64
		for pb.Next() {
			if err := s.Commit(ctx, l, benchTick(head, cp)); err != nil {
				b.Error(err)
				return
			}
			head++
		}
	})
}

// BenchmarkDriver compares pgx's native pool with pgx behind database/sql
// on the shape of a tick: begin, lock a row, one insert, one update,
// commit.
func BenchmarkDriver(b *testing.B) {
	s := openTest(b, Options{})
	must(b, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	var seq int64 // trace sequence numbers stay unique across calibration runs
	b.Run("pgxpool", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			seq++
			tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			must(b, err)
			var h int64
			must(b, tx.QueryRow(ctx, `SELECT head_seq FROM runs WHERE run_id = 'r' FOR NO KEY UPDATE`).Scan(&h))
			_, err = tx.Exec(ctx, `INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ('r', $1, $1, ARRAY['k'], ARRAY[$2::bytea], 0)`, seq, []byte(`{}`))
			must(b, err)
			_, err = tx.Exec(ctx, `UPDATE runs SET updated_at = $1 WHERE run_id = 'r'`, int64(i))
			must(b, err)
			must(b, tx.Commit(ctx))
		}
	})
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	b.Run("database-sql", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			seq++
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
			must(b, err)
			var h int64
			must(b, tx.QueryRow(`SELECT head_seq FROM runs WHERE run_id = 'r' FOR NO KEY UPDATE`).Scan(&h))
			_, err = tx.Exec(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ('r', $1, $1, ARRAY['k'], ARRAY[$2::bytea], 0)`, seq, []byte(`{}`))
			must(b, err)
			_, err = tx.Exec(`UPDATE runs SET updated_at = $1 WHERE run_id = 'r'`, int64(i))
			must(b, err)
			must(b, tx.Commit())
		}
	})
}

// BenchmarkMatchRuns is storetest.BenchMatchRuns on PostgreSQL.
func BenchmarkMatchRuns(b *testing.B) {
	s, err := Open(ctx, dsn(b), Options{Schema: freshSchema(b)})
	must(b, err)
	defer s.Close()
	storetest.BenchMatchRuns(b, s)
}
