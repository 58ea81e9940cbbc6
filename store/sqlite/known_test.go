package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// TestKnownRunMatchesReadRow holds a tick's fence taken from the row the
// tick before it left known (decision 1188) to the fence read from the
// database. Random sequences over two runs, on two stores at the same
// clock readings, one of which reads every row: lagging and durable ticks
// (which join each other's open transactions), ticks that expect the
// inbox empty, consume what was submitted or submit their own, change the
// state, end the run or are refused (a stale head, a stale lease); and
// between them submissions, lease renewals, quarantines and reads, each
// of which changes the row or the inbox or ends the transaction, and
// changes to the row through another connection once the lagging
// transaction is committed (the row a committed tick left known, which
// the next transaction takes when nothing was committed since, is then
// stale). Every
// caller's outcome and, at the end, every row of every table must be the
// same.
func TestKnownRunMatchesReadRow(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, noKnown bool) *Store {
		s := openLingering(t, filepath.Join(dir, name+".db"))
		s.testNoKnown = noKnown
		return s
	}
	read, known := open("read", true), open("known", false)
	defer read.Close()
	defer known.Close()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		runs := []string{fmt.Sprintf("a%d", n), fmt.Sprintf("b%d", n)}
		type op struct {
			kind        string
			run         int
			events      int
			lag, expect bool
			state       string
		}
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op {
			return op{
				kind:   rapid.SampledFrom([]string{"tick", "tick", "tick", "tick", "consume", "consume", "own", "stale", "fenced", "end", "submit", "submit", "renew", "quarantine", "read", "outside", "outside"}).Draw(t, "kind"),
				run:    rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "run"),
				events: rapid.IntRange(0, 2).Draw(t, "events"),
				lag:    rapid.IntRange(0, 2).Draw(t, "lag") > 0,
				expect: rapid.IntRange(0, 2).Draw(t, "expect") > 0,
				state:  rapid.SampledFrom([]string{"", "S", "T"}).Draw(t, "state"),
			}
		}), 1, 30).Draw(rt, "ops")

		play := func(s *Store) ([]string, map[string][]string) {
			ctx := context.Background()
			leases := leaseRuns(rt, s, runs)
			heads := make([]int64, len(runs))
			pending := make([][]string, len(runs))
			var out []string
			submitted := 0
			for i, o := range ops {
				id, l := runs[o.run], leases[o.run]
				tk := store.Tick{ExpectHead: heads[o.run], MayLag: o.lag, ExpectInboxEmpty: o.expect, State: o.state}
				for e := 0; e < o.events; e++ {
					tk.Events = append(tk.Events, storetest.Ev("E", fmt.Sprintf(`{"op":%d,"e":%d}`, i, e)))
				}
				tk.Trace = []store.TraceRecord{{Kind: "t", Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}}
				tk.Checkpoint = &store.Checkpoint{FormatVersion: 1, Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}
				tk.Checkpoint.Digest = store.BodyDigest(tk.Checkpoint.Body)
				var err error
				switch o.kind {
				case "submit":
					submitted++
					in := storetest.Inb(id, fmt.Sprintf("in%d", submitted), "approval", fmt.Sprintf(`{"op":%d}`, i))
					if err = s.Submit(ctx, in); err == nil {
						pending[o.run] = append(pending[o.run], in.ID)
					}
					out = append(out, fmt.Sprintf("%d submit %s: %s", i, id, store.CodeOf(err)))
					continue
				case "renew":
					var nl store.Lease
					if nl, err = s.RenewLease(ctx, l, time.Duration(i+1)*time.Hour); err == nil {
						leases[o.run] = nl
					}
					out = append(out, fmt.Sprintf("%d renew %s: %s", i, id, store.CodeOf(err)))
					continue
				case "quarantine":
					err = s.Quarantine(ctx, id, "test")
					out = append(out, fmt.Sprintf("%d quarantine %s: %s", i, id, store.CodeOf(err)))
					continue
				case "outside":
					// Through another connection, once the lagging
					// transaction is committed: the row a committed
					// tick left known is stale now.
					s.settle(ctx)
					q := `UPDATE runs SET state = 'X' WHERE run_id = ?`
					if i%3 == 0 {
						q = `UPDATE runs SET lease_generation = lease_generation + 1 WHERE run_id = ?`
					}
					_, err = s.DB().ExecContext(ctx, q, id)
					out = append(out, fmt.Sprintf("%d outside %s: %v", i, id, err))
					continue
				case "read":
					_, err = s.Run(ctx, id)
					out = append(out, fmt.Sprintf("%d read %s: %s", i, id, store.CodeOf(err)))
					continue
				case "consume", "own", "stale", "fenced", "end":
					shapeTwinTick(o.kind, id, i, &submitted, pending[o.run], &tk, &l)
				}
				err = s.Commit(ctx, l, tk)
				out = append(out, fmt.Sprintf("%d %s %s: %s", i, o.kind, id, store.CodeOf(err)))
				if err == nil {
					heads[o.run] += int64(len(tk.Events))
					if o.kind == "consume" {
						pending[o.run] = nil
					}
				}
			}
			return out, dumpTables(rt, s)
		}
		wantOut, want := play(read)
		gotOut, got := play(known)
		sameOutcomesAndTables(rt, "with the row known", "read", gotOut, wantOut, got, want)
	})
}

// A governed step's input tick joining its previous step's lagging
// receipt tick takes the run's row from it: no read of the row.
func TestJoiningTickTakesTheKnownRow(t *testing.T) {
	ctx := context.Background()
	s, l := lingeringRun(t)
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatal(err)
	}
	if k := s.w.known; k.run.ID != "r" || !k.pending || k.run.Head != 1 {
		t.Fatalf("after a lagging tick the writer knows %+v; want run r at head 1 with its pending count", k)
	}
	reads := 0
	s.testRowRead = func() { reads++ }
	next := lagTick(1, `{"n":2}`, false)
	next.ExpectInboxEmpty = true
	if err := s.Commit(ctx, l, next); err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Fatalf("the joining tick read the run's row %d times, want none", reads)
	}
}

// A write between two ticks of a run inside one batch (each in its own
// savepoint) leaves nothing known: a lagging tick's batch is held while a
// submission and then a tick expecting the inbox empty are queued behind
// it in that order, to form the next batch, which joins the lagging
// tick's transaction. The tick must see the entry submitted before it and
// be refused, as a tick reading the row is.
func TestWriteBetweenTicksInABatchForgetsTheRow(t *testing.T) {
	ctx := context.Background()
	s, l := lingeringRun(t)
	release := make(chan struct{})
	held := make(chan struct{})
	first := true
	s.setTestBatch(func([]context.Context) {
		if first {
			first = false
			close(held)
			<-release
		}
	})
	lagErr := make(chan error, 1)
	go func() { lagErr <- s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)) }()
	<-held
	var subErr, tickErr error
	done := make(chan struct{}, 2)
	go func() { subErr = s.Submit(ctx, storetest.Inb("r", "x", "approval", `{"x":1}`)); done <- struct{}{} }()
	for s.queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	next := lagTick(1, `{"n":2}`, false)
	next.ExpectInboxEmpty = true
	go func() { tickErr = s.Commit(ctx, l, next); done <- struct{}{} }()
	for s.queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-done
	<-done
	if err := <-lagErr; err != nil {
		t.Fatal(err)
	}
	if subErr != nil {
		t.Fatalf("submission: %v", subErr)
	}
	if store.CodeOf(tickErr) != store.CodeHeadMismatch {
		t.Fatalf("the tick after the submission: %v, want %s (the inbox holds an entry it did not see)", tickErr, store.CodeHeadMismatch)
	}
}

// A commit under a lease naming no run, or a run that does not exist,
// finds no run, as PostgreSQL's store answers: the zero row that stands
// for "nothing known" must never be taken for a run's (its id is empty,
// as a zero lease's is).
func TestCommitForNoRunIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	for _, lease := range []store.Lease{{}, {RunID: "absent"}, {RunID: "absent", Owner: "B"}} {
		if err := s.Commit(ctx, lease, lagTick(0, `{"n":1}`, false)); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("commit under %+v: %v, want %s", lease, err, store.CodeNotFound)
		}
	}
}

// A tick that begins a transaction after the COMMIT of its run's previous
// tick takes the row that tick left, when nothing was committed since:
// no read of the row. A commit by another process in between (a second
// store on the file quarantining the run) makes the next tick read the
// row, and be refused as quarantined.
func TestTickAfterACommitTakesTheCarriedRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s := openAt(t, path, time.Now)
	defer s.Close()
	l := leasedRun(t, s)
	reads := 0
	s.testRowRead = func() { reads++ }
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, false)); err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Fatalf("the first tick read the run's row %d times, want once", reads)
	}
	if err := s.Commit(ctx, l, lagTick(1, `{"n":2}`, false)); err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Fatalf("the tick after a committed one read the run's row: %d reads, want 1", reads)
	}
	other := openAt(t, path, time.Now)
	if err := other.Quarantine(ctx, l.RunID, "elsewhere"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := s.Commit(ctx, l, lagTick(2, `{"n":3}`, false)); store.CodeOf(err) != store.CodeQuarantined {
		t.Fatalf("the tick after another process's commit: %v, want %s", err, store.CodeQuarantined)
	}
	if reads != 2 {
		t.Fatalf("the tick after another process's commit read the run's row %d times in all, want 2", reads)
	}
}

// leaseRuns creates each of runs on s, in state S, and leases it to "w":
// the start of a differential sequence.
func leaseRuns(rt *rapid.T, s *Store, runs []string) []store.Lease {
	leases := make([]store.Lease, len(runs))
	for i, id := range runs {
		if err := s.CreateRun(context.Background(), store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			rt.Fatal(err)
		}
		l, err := s.AcquireLease(context.Background(), id, "w", time.Hour)
		if err != nil {
			rt.Fatal(err)
		}
		leases[i] = l
	}
	return leases
}

// shapeTwinTick applies to tk (and its lease l) the kinds of step both
// differential sequences draw that only shape a tick of run at step i:
// consume what was submitted (pending), submit and consume an input of its
// own (counted in *submitted), a stale head, a stale lease, an end.
func shapeTwinTick(kind, run string, i int, submitted *int, pending []string, tk *store.Tick, l *store.Lease) {
	switch kind {
	case "consume":
		tk.Consume = slices.Clone(pending)
	case "own":
		*submitted++
		in := storetest.Inb(run, fmt.Sprintf("in%d", *submitted), "approval", fmt.Sprintf(`{"own":%d}`, i))
		tk.Submit, tk.Consume, tk.MayLag = []store.Inbound{in}, []string{in.ID}, false
	case "stale":
		tk.ExpectHead++
	case "fenced":
		l.Generation++
	case "end":
		tk.Outcome, tk.MayLag = "done", false
	}
}
