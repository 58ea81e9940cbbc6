package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkGovernedStepWrites is the store's share of one governed step of
// the refund-agent workflow, one operation per step, one writer: the input
// submitted, the decision committed (7 events, the intent with its outbox
// row and first attempt, the input consumed, a checkpoint, 4 trace
// records), then the receipt committed (the attempt finished, the receipt,
// 6 events, a checkpoint, 4 trace records) — 28 rows in three commits, as
// in the bench/governedstep campaign. Besides wall time it reports
// server-cpu-ns/op, the CPU of the server backend serving the store (from
// /proc, so only for a server on this machine).
func BenchmarkGovernedStepWrites(b *testing.B) { benchGovernedStep(b, "") }

// BenchmarkGovernedStepWritesAsync is BenchmarkGovernedStepWrites with the
// session's synchronous_commit off: what remains is round trips and CPU.
func BenchmarkGovernedStepWritesAsync(b *testing.B) {
	benchGovernedStep(b, "synchronous_commit=off")
}

func benchGovernedStep(b *testing.B, param string) {
	s, l, app := benchRun(b, param)
	cp := []byte(strings.Repeat(`{"journey":"x"}`, 200))
	evs := func(i, n int) []store.Event {
		out := make([]store.Event, n)
		for j := range out {
			out[j] = storetest.Ev("transition", fmt.Sprintf(`{"step":%d,"i":%d}`, i, j))
		}
		return out
	}
	trace := func(i int) []store.TraceRecord {
		out := make([]store.TraceRecord, 4)
		for j := range out {
			out[j] = store.TraceRecord{Kind: "fhr", Body: []byte(fmt.Sprintf(`{"step":%d,"record":%d,"pad":"%s"}`, i, j, strings.Repeat("y", 300)))}
		}
		return out
	}
	var head int64
	step := func(i int) {
		in := store.Inbound{ID: fmt.Sprintf("in%d", i), RunID: "r", Kind: "input", ActorRole: "agent", Body: []byte(fmt.Sprintf(`{"refund":%d}`, i))}
		in.Digest = store.BodyDigest(in.Body)
		must(b, s.Submit(ctx, in))
		body := []byte(fmt.Sprintf(`{"pay":%d}`, i))
		intent := store.Intent{ID: fmt.Sprintf("i%d", i), EffectType: "refund.pay", IdempotencyKey: fmt.Sprintf("k%d", i),
			ContentDigest: store.BodyDigest(body), Body: body, Digest: store.BodyDigest(body)}
		must(b, s.Commit(ctx, l, store.Tick{ExpectHead: head, State: "EXECUTE", Events: evs(i, 7),
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Intents:    []store.Intent{intent}, Begin: []string{intent.ID}, Consume: []string{in.ID}, Trace: trace(i)}))
		head += 7
		rb := []byte(fmt.Sprintf(`{"applied":%d}`, i))
		must(b, s.Commit(ctx, l, store.Tick{ExpectHead: head, State: "AWAIT", Events: evs(i, 6),
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Results:    []store.AttemptResult{{IntentID: intent.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts:   []store.Receipt{{IntentID: intent.ID, Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}},
			Trace:      trace(i)}))
		head += 6
	}
	step(-1) // prepares the statements on the connection
	rows0 := rowCount(b, s)
	var lsn0 string
	must(b, s.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn0))
	b.ResetTimer()
	srv0 := serverCPU(b, s, app)
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(serverCPU(b, s, app)-srv0)/float64(b.N), "server-cpu-ns/op")
	// WAL written per step: the whole server's, so run it on a quiet one.
	var wal float64
	must(b, s.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::text::pg_lsn)::float8`, lsn0).Scan(&wal))
	b.ReportMetric(wal/float64(b.N), "WAL-B/op")
	b.ReportMetric(float64(rowCount(b, s)-rows0)/float64(b.N), "rows/op")
}

// rowCount is the number of rows in every table of the store's schema.
func rowCount(b *testing.B, s *Store) int64 {
	rows, err := s.pool.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables
WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`)
	must(b, err)
	var tables []string
	for rows.Next() {
		var t string
		must(b, rows.Scan(&t))
		tables = append(tables, t)
	}
	rows.Close()
	var n int64
	for _, t := range tables {
		var c int64
		must(b, s.pool.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&c))
		n += c
	}
	return n
}

// serverCPU sums the user and system CPU of the server backends whose
// application_name is app, from /proc (in clock ticks of 10 ms).
func serverCPU(b *testing.B, s *Store, app string) time.Duration {
	rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	must(b, err)
	var pids []int
	for rows.Next() {
		var pid int
		must(b, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	rows.Close()
	d, err := cputime.OfProcesses(pids)
	if err != nil {
		b.Skipf("the server's processes are not readable here: %v", err)
	}
	return d
}

// benchRun opens a store on a fresh schema over one connection, its
// session given param (a connection parameter such as
// synchronous_commit=off, or none) and an application_name serverCPU can
// find, and leases a new run "r" on it. The store closes with b.
func benchRun(b *testing.B, param string) (*Store, store.Lease, string) {
	d := dsn(b)
	if param != "" {
		sep := "?"
		if strings.Contains(d, "?") {
			sep = "&"
		}
		d += sep + param
	}
	schema := freshSchema(b)
	app := "flrh-bench-" + schema
	s, err := Open(ctx, withAppName(b, d, app), Options{Schema: schema, MaxConns: 1})
	must(b, err)
	b.Cleanup(func() { s.Close() })
	must(b, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(b, err)
	return s, l, app
}
