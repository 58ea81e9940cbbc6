package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// byParts is what ReadRunRecord must return: each part as its own method
// reads it (and, without all, no header and no effects).
func byParts(t *testing.T, ctx context.Context, st *sqlite.Store, id string, all bool) store.RunRecord {
	t.Helper()
	var rec store.RunRecord
	var err error
	must := func(what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s: %v", what, id, err)
		}
	}
	rec.Events, err = st.Events(ctx, id, 0)
	must("events")
	if cp, err := st.Checkpoint(ctx, id); err == nil {
		rec.Checkpoint, rec.HasCheckpoint = cp, true
	} else if store.CodeOf(err) != store.CodeNotFound {
		t.Fatal(err)
	}
	rec.Intents, err = st.Intents(ctx, id)
	must("intents")
	if !all {
		return rec
	}
	rec.Run, err = st.Run(ctx, id)
	must("run")
	rec.Receipts, err = st.Receipts(ctx, id)
	must("receipts")
	rec.Attempts, err = st.RunAttempts(ctx, id)
	must("attempts")
	rec.Approvals, err = st.RunApprovals(ctx, id)
	must("approvals")
	return rec
}

// sameRecord fails unless ReadRunRecord reads run id as its parts' own
// methods do, in one statement (inOne) or not.
func sameRecord(t *testing.T, ctx context.Context, st *sqlite.Store, id string, inOne bool) {
	t.Helper()
	for _, all := range []bool{true, false} {
		want := byParts(t, ctx, st, id, all)
		got, err := st.ReadRunRecord(ctx, id, all)
		if err != nil {
			t.Fatalf("read %s (all %v): %v", id, all, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %s (all %v):\n got %+v\nwant %+v", id, all, got, want)
		}
		if _, ok := st.ReadRunRecordInOne(ctx, id, all); ok != inOne {
			t.Fatalf("run %s (all %v) read in one statement: %v, want %v", id, all, ok, inOne)
		}
		if _, ok := st.ReadRunRecordsInOne(ctx, []string{"absent", id}, all); ok[1] != inOne || ok[0] != !all {
			t.Fatalf("run %s (all %v) read in a batch: %v, want [%v %v]", id, all, ok, !all, inOne)
		}
	}
	sameRecords(t, ctx, st, []string{id})
}

// sameRecords fails unless ReadRunRecords reads each of the runs ids as
// ReadRunRecord reads it, record and error alike: the ids as given, each
// with a run that does not exist before it, and all of them twice over
// (more than one batch, a run repeated within one).
func sameRecords(t *testing.T, ctx context.Context, st *sqlite.Store, ids []string) {
	t.Helper()
	var mixed []string
	for _, id := range ids {
		mixed = append(mixed, "absent-"+id, id)
	}
	// ReadRunRecordsReusing is given one mem throughout, whose bytes are
	// written over before each call: its records are ReadRunRecords'.
	var mem [][]byte
	for _, list := range [][]string{ids, mixed, append(append(slices.Clone(ids), ids...), mixed...)} {
		for _, all := range []bool{true, false} {
			recs, errs := st.ReadRunRecords(ctx, list, all)
			scribble(mem)
			lrecs, lerrs := st.ReadRunRecordsReusing(ctx, list, all, &mem)
			if !reflect.DeepEqual(lrecs, recs) || fmt.Sprint(lerrs) != fmt.Sprint(errs) {
				t.Fatalf("runs %v (all %v) read into lent chunks:\n got %+v %v\nwant %+v %v", list, all, lrecs, lerrs, recs, errs)
			}
			if len(recs) != len(list) || len(errs) != len(list) {
				t.Fatalf("%d runs read as %d records, %d errors", len(list), len(recs), len(errs))
			}
			for i, id := range list {
				want, werr := st.ReadRunRecord(ctx, id, all)
				if fmt.Sprint(errs[i]) != fmt.Sprint(werr) || store.CodeOf(errs[i]) != store.CodeOf(werr) {
					t.Fatalf("run %s (all %v) in a batch: error %v, want %v", id, all, errs[i], werr)
				}
				if !reflect.DeepEqual(recs[i], want) {
					t.Fatalf("run %s (all %v) in a batch:\n got %+v\nwant %+v", id, all, recs[i], want)
				}
			}
		}
	}
}

// ReadRunRecord returns exactly what the reads of each table return, for
// runs that paid effects, one approved by a person (a grant), runs whose
// ticks wrote trace records, with checkpoints sealed or not.
func TestReadRunRecordMatchesEachRead(t *testing.T) {
	ctx := context.Background()
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]sqlite.Options{"clear": {}, "sealed": {Sealer: k}} {
		t.Run(name, func(t *testing.T) {
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ids := recordRuns(t, ctx, st, "", true)
			approvals := 0
			for _, id := range ids {
				sameRecord(t, ctx, st, id, true)
				rec, _ := st.ReadRunRecord(ctx, id, true)
				approvals += len(rec.Approvals)
				if len(rec.Events) < 2 || !rec.HasCheckpoint || len(rec.Intents) == 0 || len(rec.Attempts) == 0 || len(rec.Receipts) == 0 {
					t.Fatalf("run %s: too little to compare: %+v", id, rec)
				}
			}
			if approvals == 0 {
				t.Fatal("no run consumed a grant")
			}
			sameRecords(t, ctx, st, ids)
			// A batch read in one statement: every run of it plainly.
			if len(ids) > sqlite.RecordBatch {
				ids = ids[:sqlite.RecordBatch]
			}
			if _, ok := st.ReadRunRecordsInOne(ctx, ids, true); slices.Contains(ok, false) {
				t.Fatalf("a batch of %d runs read in one statement: %v", len(ids), ok)
			}
			// More runs than one statement holds are not read by it.
			more := append(slices.Clone(ids), make([]string, sqlite.RecordBatch+1-len(ids))...)
			if _, ok := st.ReadRunRecordsInOne(ctx, more, true); slices.Contains(ok, true) {
				t.Fatalf("%d runs read by one statement of %d: %v", len(more), sqlite.RecordBatch, ok)
			}
		})
	}
}

// A run with no checkpoint, no intents, or none at all; hashes kept as
// text (as a store written before they were packed holds them); several
// intents of one run, committed out of id order, with several attempts.
func TestReadRunRecordEdges(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// No such run: with its header, Run's error; without, nothing, as
	// Events, Checkpoint and Intents find nothing.
	_, want := st.Run(ctx, "absent")
	if _, err := st.ReadRunRecord(ctx, "absent", true); store.CodeOf(err) != store.CodeNotFound || err.Error() != want.Error() {
		t.Fatalf("absent run: %v, want %v", err, want)
	}
	if rec, err := st.ReadRunRecord(ctx, "absent", false); err != nil || !reflect.DeepEqual(rec, store.RunRecord{}) {
		t.Fatalf("absent run without its header: %+v, %v", rec, err)
	}
	if err := st.CreateRun(ctx, store.Run{ID: "bare", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, ctx, st, "bare", true)

	if err := st.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("E", `{"a":1}`), storetest.Ev("E", `{"a":2}`)}}); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, ctx, st, "r", true) // no checkpoint, no intents
	tick := store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("E", `{"a":3}`)},
		Intents: []store.Intent{storetest.In("z-intent", "kz", "cz"), storetest.In("a-intent", "ka", "ca"), storetest.In("m-intent", "km", "cm")}}
	if err := st.Commit(ctx, l, tick); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m-intent", "z-intent", "a-intent", "z-intent"} {
		at, err := st.BeginAttempt(ctx, l, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, l, store.Tick{ExpectHead: 3, Results: []store.AttemptResult{
			{IntentID: id, N: at.N, Status: store.AttemptFailedTransient, Detail: "again", Outbox: store.OutboxRetry, Route: "transient"}}}); err != nil {
			t.Fatal(err)
		}
	}
	sameRecord(t, ctx, st, "r", true)
	sameRecords(t, ctx, st, []string{"r", "bare", "absent"})
	rec, _ := st.ReadRunRecord(ctx, "r", true)
	if len(rec.Intents) != 3 || rec.Intents[0].ID != "z-intent" || len(rec.Attempts) != 4 || rec.Attempts[0].IntentID != "a-intent" {
		t.Fatalf("intents %+v, attempts %+v", rec.Intents, rec.Attempts)
	}
	if _, err := st.DB().Exec(`DROP TRIGGER events_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(`UPDATE events SET digest = 'sha256:' || lower(hex(digest)) WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, ctx, st, "r", true)
}

// Wherever the one statement meets what a part's own read refuses, the
// error is that read's: a damaged hash (Events), a sealed checkpoint
// without its key (Checkpoint).
func TestReadRunRecordErrorsAreTheParts(t *testing.T) {
	ctx := context.Background()
	k, err := sealed.New(bytes.Repeat([]byte{3}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Sealer: k})
	if err != nil {
		t.Fatal(err)
	}
	ids := recordRuns(t, ctx, st, "", false)
	st.Close()
	unsealed, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer unsealed.Close()
	_, want := unsealed.Checkpoint(ctx, ids[0])
	if want == nil {
		t.Fatal("a sealed checkpoint opened without its key")
	}
	for _, all := range []bool{true, false} {
		if _, err := unsealed.ReadRunRecord(ctx, ids[0], all); err == nil || err.Error() != want.Error() || store.CodeOf(err) != store.CodeOf(want) {
			t.Fatalf("read without the key (all %v): %v, want %v", all, err, want)
		}
	}
	if _, err := unsealed.DB().Exec(`DROP TRIGGER events_no_update; UPDATE events SET chain_hash = x'00ff' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	_, want = unsealed.Events(ctx, ids[1], 0)
	if store.CodeOf(want) != store.CodeCorrupt {
		t.Fatalf("damaged hash read as %v", want)
	}
	for _, all := range []bool{true, false} {
		if _, err := unsealed.ReadRunRecord(ctx, ids[1], all); err == nil || err.Error() != want.Error() {
			t.Fatalf("read of a damaged hash (all %v): %v, want %v", all, err, want)
		}
	}
	// In a batch, the damaged runs are read by ReadRunRecord and give its
	// errors; the others are read with them.
	sameRecords(t, ctx, unsealed, ids)
	if _, ok := unsealed.ReadRunRecordsInOne(ctx, ids[:2], true); ok[0] || ok[1] {
		t.Fatalf("damaged runs read plainly in a batch: %v", ok)
	}
}

// The kinds the runtime writes are selected as small integers and read
// back as their names; every other kind, however close to one of them,
// is read as its own text.
func TestReadRunRecordEventKinds(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "k", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "k", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"control", "accepted", "control.rejected", "Control", "accepted ", "control.", "1", "2", "x"}
	var tick store.Tick
	for i, k := range kinds {
		tick.Events = append(tick.Events, storetest.Ev(k, fmt.Sprintf(`{"i":%d}`, i)))
	}
	if err := st.Commit(ctx, l, tick); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, ctx, st, "k", true)
	rec, err := st.ReadRunRecord(ctx, "k", true)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range rec.Events {
		if e.Kind != kinds[i] {
			t.Fatalf("event %d read as kind %q, want %q", i+1, e.Kind, kinds[i])
		}
	}
}

// The batch statement finds each run's rows through the tables' run
// indexes, never by scanning a whole table.
func TestReadRunRecordsPlan(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	args := make([]any, sqlite.RecordBatch)
	plan := sqlite.QueryPlan(t, st.DB(), sqlite.RecordBatchQuery, args...)
	for _, detail := range plan {
		if strings.HasPrefix(detail, "SCAN ") && !strings.HasPrefix(detail, "SCAN b") && !strings.Contains(detail, "CONSTANT ROW") {
			t.Errorf("the batch statement scans a table: %q", detail)
		}
	}
	if t.Failed() {
		t.Log(strings.Join(plan, "\n"))
	}
}

// scribble writes over every byte of the chunks lent.
func scribble(mem [][]byte) {
	for _, c := range mem {
		c = c[:cap(c)]
		for i := range c {
			c[i] = 0xa5
		}
	}
}

// ReadRunRecordsReusing cuts the bodies of a batch read in one statement
// from the chunks lent, and a second read of the batch reuses them: it
// adds no chunk, writes over the first read's bodies (which is why a
// caller must be done with them), and still returns ReadRunRecords'
// records.
func TestReadRunRecordsReusingLendsTheChunks(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := recordRuns(t, ctx, st, "", true)
	ids = ids[:min(len(ids), sqlite.RecordBatch)]
	want, _ := st.ReadRunRecords(ctx, ids, true)
	var mem [][]byte
	first, _ := st.ReadRunRecordsReusing(ctx, ids, true, &mem)
	if !reflect.DeepEqual(first, want) || len(mem) == 0 {
		t.Fatalf("read into %d lent chunks: the records differ", len(mem))
	}
	// Writing over the chunks writes over every body read into them.
	n, body := len(mem), first[0].Events[0].Body
	scribble(mem)
	for _, r := range first {
		for _, e := range r.Events {
			if len(e.Body) > 0 && e.Body[0] != 0xa5 {
				t.Fatalf("event %d's body is not cut from the chunks lent", e.Seq)
			}
		}
		if r.Checkpoint.Body[0] != 0xa5 || r.Intents[0].Body[0] != 0xa5 || r.Receipts[0].Body[0] != 0xa5 {
			t.Fatal("a checkpoint's, intent's or receipt's body is not cut from the chunks lent")
		}
	}
	second, _ := st.ReadRunRecordsReusing(ctx, ids, true, &mem)
	if !reflect.DeepEqual(second, want) || len(mem) != n {
		t.Fatalf("a second read: %d chunks, %d before; records equal %v", len(mem), n, reflect.DeepEqual(second, want))
	}
	if &second[0].Events[0].Body[0] != &body[0] {
		t.Fatal("a second read did not reuse the chunks lent")
	}
}
