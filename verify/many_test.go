package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flrh.dev/flrh/control"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
)

// refundAgent loads the refund-agent example bundle the way the flrh
// binary does for example:refund-agent.
func refundAgent(tb testing.TB) (*bundle.Workflow, *bundle.Adapters) {
	tb.Helper()
	wf, ads, err := bundle.LoadExample("refund-agent")
	if err != nil {
		tb.Fatal(err)
	}
	return wf, ads
}

// manyRuns records n ordinary runs of the refund-agent bundle in one
// SQLite store, each one refund paid through a sandbox destination on
// loopback: most are small and authorized outright, every fifth is above
// the approval limit and approved by a person, every twentieth names a
// blocked payee, is found ineligible and rests without an effect. It returns the closed database's path, the
// workflow and the run ids in creation order.
func manyRuns(tb testing.TB, n int) (string, *bundle.Workflow, []string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "many.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	wf, ids := recordMany(tb, st, n)
	return path, wf, ids
}

// recordMany records the runs manyRuns describes in st.
func recordMany(tb testing.TB, st store.Store, n int) (*bundle.Workflow, []string) {
	tb.Helper()
	wf, ads := refundAgent(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go sb.Serve(sctx, ln, time.Second)
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	reg, err := ads.Registry(func(name string) string {
		if strings.HasPrefix(name, "FLRH_") {
			return url
		}
		return ""
	})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "bench",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 20 * time.Millisecond}}})
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close(context.Background())
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("refund-%04d", i)
		amount, payee := 10+i%80, fmt.Sprintf("payee-%d", i%13)
		switch {
		case i%20 == 19:
			payee = "mallory"
		case i%5 == 4:
			amount = 150 + i
		}
		in, _ := json.Marshal(map[string]any{"type": "refund.requested/1", "payload": map[string]any{
			"refund_id": fmt.Sprintf("r-%04d", i), "amount": amount, "payee": payee, "reason": "damaged item"}})
		if err := r.Start(ctx, ids[i], wf.ID(), wf.Version(), in); err != nil {
			tb.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	approver := runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	for _, id := range ids {
		s, err := r.Inspect(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		for _, w := range s.Waiting {
			if err := r.Approve(ctx, id, w.RequestID, approver, time.Hour); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	for i, id := range ids {
		run, err := st.Run(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		if want := i%20 != 19; (run.Outcome == "success") != want {
			tb.Fatalf("run %s is %s %q", id, run.State, run.Outcome)
		}
	}
	return wf, ids
}

// TestManyRunsVerifyAndReplay keeps the many-runs benchmark honest: every
// run of each shape is found clean, approvals were consumed, refusals
// left the run without an effect.
func TestManyRunsVerifyAndReplay(t *testing.T) {
	path, wf, ids := manyRuns(t, 20)
	st := open(t, path, true)
	approvals, intents := 0, 0
	for _, id := range ids {
		rep, err := Run(ctx, st, nil, id)
		if err != nil || !rep.OK() {
			t.Fatalf("%s verify: %v %+v", id, err, rep)
		}
		rp, err := Replay(ctx, st, wf, id)
		if err != nil || !rp.OK() || rp.Inputs == 0 {
			t.Fatalf("%s replay: %v %+v", id, err, rp)
		}
		approvals += rep.Approvals
		intents += rep.Intents
	}
	// 20 runs: refunds 4, 9 and 14 need approval, 19 is ineligible.
	if approvals != 3 || intents != 19 {
		t.Fatalf("%d approvals consumed and %d intents, want 3 and 19", approvals, intents)
	}
}

// Checking runs in parallel, and verifying and replaying from one read,
// finds exactly what Run and Replay find one run after the other: the
// same reports in the same order, on a store where several runs were
// tampered with in different ways.
func TestCheckManyMatchesSequential(t *testing.T) {
	path, wf, ids := manyRuns(t, 20)
	tamper(t, path,
		"DROP TRIGGER IF EXISTS receipts_no_delete", "DROP TRIGGER IF EXISTS checkpoints_no_update",
		`UPDATE events SET body = CAST(replace(body, 'INGEST', 'INGESX') AS BLOB) WHERE run_id = 'refund-0001' AND seq = 1`,
		`UPDATE receipts SET body = CAST(replace(body, 'confirmed_success', 'confirmed_failure') AS BLOB) WHERE run_id = 'refund-0002'`,
		`UPDATE approvals SET status = 'granted', consumed_by = '' WHERE run_id = 'refund-0004'`,
		`UPDATE attempts SET status = 'failed_permanent' WHERE intent_id IN (SELECT intent_id FROM intents WHERE run_id = 'refund-0006')`,
		`UPDATE runs SET outcome = 'failure' WHERE run_id = 'refund-0007'`,
		`UPDATE events SET generation = 99 WHERE run_id = 'refund-0008' AND seq = 2`,
		`UPDATE intents SET approval_id = (SELECT approval_id FROM approvals WHERE run_id = 'refund-0009') WHERE run_id = 'refund-0014'`,
		`UPDATE checkpoints SET body = CAST(replace(body, '"SUCCEEDED"', '"FAILED"') AS BLOB) WHERE run_id = 'refund-0011'`,
		`DELETE FROM receipts WHERE run_id = 'refund-0012'`,
		`UPDATE receipts SET run_id = 'refund-0013' WHERE run_id = 'refund-0015'`,
	)
	st := open(t, path, true)
	if _, ok := runReaderOf(st); !ok {
		t.Fatal("the SQLite store has no bulk reads")
	}
	var jobs []Job
	var want []Checked
	for i, id := range ids {
		job := Job{RunID: id}
		if i%3 != 2 { // some jobs verify only
			job.Workflow = wf
		}
		jobs = append(jobs, job)
		rep, err := Run(ctx, st, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		c := Checked{Report: rep}
		if job.Workflow != nil {
			if c.Replay, err = Replay(ctx, st, wf, id); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, c)
	}
	got, err := CheckMany(ctx, st, nil, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// Batches of runs read at once, of every size from one run to more
	// than the jobs, on one worker or several, tapered towards the end or
	// not, check the same.
	for _, ws := range [][2]int{{1, 1}, {1, 3}, {2, 2}, {2, 7}, {3, 16}, {2, 25}} {
		for _, taper := range []bool{false, true} {
			got, err := checkMany(ctx, st, nil, jobs, ws[0], ws[1], taper)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d workers taking %d runs at a time (tapered %v): the results differ", ws[0], ws[1], taper)
			}
		}
	}
	failed := map[string]bool{}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s:\n got %+v %+v\nwant %+v %+v", ids[i], got[i].Report, got[i].Replay, want[i].Report, want[i].Replay)
		}
		if !want[i].Report.OK() || (want[i].Replay != nil && !want[i].Replay.OK()) {
			failed[ids[i]] = true
		}
	}
	for _, id := range []string{"refund-0001", "refund-0002", "refund-0004", "refund-0006", "refund-0007", "refund-0008", "refund-0011", "refund-0012", "refund-0013", "refund-0014", "refund-0015"} {
		if !failed[id] {
			t.Errorf("tampering with %s went unnoticed", id)
		}
	}
	if len(failed) != 11 {
		t.Errorf("findings in %d runs, want 11: %v", len(failed), failed)
	}
	// A store without the bulk reads is asked per intent, to the same
	// effect, but for the grants an intent consumed beside the one it
	// names, which it cannot list (refund-0014's own grant, consumed by
	// its intent, which was made to name another run's).
	for i, id := range ids {
		rep, err := Run(ctx, perIntent{st}, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rep, withoutConcurring(want[i].Report)) {
			t.Fatalf("per intent, %s: %+v, want %+v", id, rep, want[i].Report)
		}
	}
	reps, err := Many(ctx, st, nil, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reps {
		if !reflect.DeepEqual(reps[i], want[i].Report) {
			t.Fatalf("Many, %s: %+v, want %+v", ids[i], reps[i], want[i].Report)
		}
	}
}

// A run that cannot be read fails CheckMany with the error the sequential
// loop would meet first, whichever worker meets it.
func TestCheckManyReportsTheFirstError(t *testing.T) {
	path, _, ids := manyRuns(t, 6)
	st := open(t, path, true)
	ids = append(ids[:3:3], "no-such-run", "nor-this-one", ids[3])
	_, want := Run(ctx, st, nil, "no-such-run")
	if want == nil {
		t.Fatal("a missing run verified")
	}
	for range 5 {
		reps, err := Many(ctx, st, nil, ids)
		if err == nil || err.Error() != want.Error() {
			t.Fatalf("error %v, want %v", err, want)
		}
		if len(reps) != 3 || reps[2].RunID != ids[2] || !reps[2].OK() {
			t.Fatalf("%d reports before the error, want those of the 3 runs before it", len(reps))
		}
	}
	// The same with runs read several at a time: the missing run in the
	// middle of a batch, at its start, or in a batch of its own.
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i].RunID = id
	}
	for _, ws := range [][2]int{{1, 2}, {2, 2}, {2, 3}, {1, 4}, {2, 5}, {2, 16}} {
		for _, taper := range []bool{false, true} {
			out, err := checkMany(ctx, st, nil, jobs, ws[0], ws[1], taper)
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("%d workers taking %d runs at a time (tapered %v): error %v, want %v", ws[0], ws[1], taper, err, want)
			}
			if len(out) != 3 || out[2].Report.RunID != ids[2] || !out[2].Report.OK() {
				t.Fatalf("%d workers taking %d runs at a time (tapered %v): %d reports before the error, want 3", ws[0], ws[1], taper, len(out))
			}
		}
	}
}

// A batch is up to a statement's sixteen runs, and small enough that each
// worker has several.
func TestBatchSize(t *testing.T) {
	for _, c := range []struct{ jobs, workers, want int }{
		{0, 0, 1}, {1, 1, 1}, {7, 2, 1}, {8, 2, 1}, {16, 2, 2}, {200, 2, 16}, {200, 4, 12}, {1000, 1, 16}, {10, 64, 1},
	} {
		if got := batchSize(c.jobs, c.workers); got != c.want {
			t.Errorf("batchSize(%d, %d) = %d, want %d", c.jobs, c.workers, got, c.want)
		}
	}
}

// Tapered batches cover the jobs in order, none above the size asked for
// or empty, and end in batches of one run where there are more jobs than
// workers; over 200 jobs on two workers sixteen at a time they are
// sixteen runs while a quarter of what is left is at least that.
func TestTapered(t *testing.T) {
	for _, c := range []struct{ jobs, workers, size int }{
		{1, 1, 1}, {7, 2, 3}, {200, 2, 16}, {200, 4, 12}, {1000, 1, 16}, {10, 64, 1}, {25, 3, 16},
	} {
		var sizes []int
		for left := c.jobs; left > 0; {
			n := tapered(left, c.workers, c.size)
			if n < 1 || n > c.size || n > max(1, left) {
				t.Fatalf("%+v: %d of %d left", c, n, left)
			}
			sizes = append(sizes, n)
			left -= n
		}
		if c.jobs > c.workers && sizes[len(sizes)-1] != 1 {
			t.Errorf("%+v: batches %v end in more than one run", c, sizes)
		}
		if c.jobs == 200 && c.workers == 2 && !slices.Equal(sizes[:9], []int{16, 16, 16, 16, 16, 16, 16, 16, 16}) {
			t.Errorf("%+v: batches %v", c, sizes)
		}
	}
}

// postgresStore opens a PostgreSQL store in a schema of its own, dropped
// when the test ends, at the DSN in FLRH_TEST_POSTGRES; it skips the test
// when that is unset.
func postgresStore(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	return postgresStoreWith(t, postgres.Options{})
}

// postgresStoreWith is postgresStore with opts (its Schema is set here).
func postgresStoreWith(t *testing.T, opts postgres.Options) (*postgres.Store, string) {
	t.Helper()
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("FLRH_TEST_POSTGRES is unset")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "flrh_test_" + hex.EncodeToString(b[:])
	opts.Schema = schema
	st, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := st.Pool().Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		st.Close()
	})
	return st, schema
}

// perIntent hides a store's bulk reads.
type perIntent struct{ store.Store }

// withoutConcurring is rep as a reader that cannot list the grants an
// intent consumed beside the one it names reports it.
func withoutConcurring(rep *Report) *Report {
	if rep == nil || rep.Concurring == 0 {
		return rep
	}
	out := *rep
	out.Concurring = 0
	out.Findings = slices.DeleteFunc(slices.Clone(rep.Findings), func(f Finding) bool { return strings.HasPrefix(f.Detail, "concurring grant ") })
	return &out
}

// PostgreSQL's bulk reads of attempts and grants give the reports reading
// per intent gives, on runs that consumed approvals and runs that were
// refused.
func TestBulkReadsOnPostgres(t *testing.T) {
	st, _ := postgresStore(t)
	if _, ok := runReaderOf(st); !ok {
		t.Fatal("the PostgreSQL store has no bulk reads")
	}
	_, ids := recordMany(t, st, 10)
	approvals := 0
	for _, id := range ids {
		bulk, err := Run(ctx, st, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		each, err := Run(ctx, perIntent{st}, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(bulk, each) || !bulk.OK() {
			t.Fatalf("%s: bulk %+v, per intent %+v", id, bulk, each)
		}
		approvals += bulk.Approvals
	}
	if approvals != 2 {
		t.Fatalf("%d approvals consumed, want 2", approvals)
	}
}

// TestKnownBuffersComeBackZero holds the pooled vouched buffers to what a
// fresh slice gives: a buffer released dirty is handed out again with
// every entry zero, whether the next run is shorter or as long.
func TestKnownBuffersComeBackZero(t *testing.T) {
	for _, n := range []int{10, 5, 10, 0, 12} {
		var r record
		k := r.takeKnown(n)
		if len(k) != n {
			t.Fatalf("takeKnown(%d) gave %d entries", n, len(k))
		}
		for i := range k {
			if k[i].ok || k[i].canonical || k[i].inputRead || k[i].rec.Event != "" || k[i].rec.Evidence != nil {
				t.Fatalf("entry %d of a taken buffer is not zero: %+v", i, k[i])
			}
			k[i] = vouched{ok: true, canonical: true, inputRead: true, rec: control.Record{Event: "E", Evidence: map[string]string{"a": "b"}}}
		}
		r.releaseKnown()
		if r.known != nil || r.knownBuf != nil {
			t.Fatal("a released record still holds its buffer")
		}
	}
}

// BenchmarkReadMany measures the store's part of a CheckMany pass alone:
// every run of manyRuns' store read in consecutive batches of sixteen,
// into memory lent back batch after batch, as a worker reads them, in
// events a second of wall and of CPU time (see measure). In
// "recorded" the events lie as the runner wrote them (a run's mostly
// together); in "interleaved" they are rewritten ordered by sequence
// number and then run, so that no two events of a run are neighbours,
// as runs recorded at once leave them at the most.
func BenchmarkReadMany(b *testing.B) {
	path, _, ids := manyRuns(b, 200)
	mixed := filepath.Join(b.TempDir(), "interleaved.db")
	interleave(b, path, mixed)
	for _, c := range []struct{ name, path string }{{"recorded", path}, {"interleaved", mixed}} {
		b.Run(c.name, func(b *testing.B) {
			st, err := sqlite.Open(ctx, c.path, sqlite.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			events := eventsOf(b, st, ids)
			var mem [][]byte
			measure(b, events, func() {
				for lo := 0; lo < len(ids); lo += 16 {
					_, errs := st.ReadRunRecordsReusing(ctx, ids[lo:min(lo+16, len(ids))], true, &mem)
					for _, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}

// interleave writes a copy of the store at path to dst with its events
// rewritten in the order of (seq, run_id): the same rows, each run's
// events as far apart as the runs' number makes them.
func interleave(tb testing.TB, path, dst string) {
	tb.Helper()
	copyFile(tb, path, dst)
	st, err := sqlite.Open(ctx, dst, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	for _, q := range []string{
		`DROP TRIGGER events_no_delete`,
		`CREATE TEMP TABLE mixed AS SELECT * FROM events ORDER BY seq, run_id`,
		`DELETE FROM events`,
		`INSERT INTO events SELECT * FROM mixed ORDER BY seq, run_id`,
		`DROP TABLE mixed`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := st.DB().ExecContext(ctx, q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}
