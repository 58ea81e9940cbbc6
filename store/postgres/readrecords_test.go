package postgres

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/storetest"
)

// sameRecords fails unless ReadRunRecords reads each run of ids as the
// run's read by parts does, record and error alike: the ids as given,
// each after a run that does not exist, and all of them twice over (more
// than one batch, runs repeated within one).
func sameRecords(t *testing.T, st *Store, ids []string) {
	t.Helper()
	var mixed []string
	for _, id := range ids {
		mixed = append(mixed, "absent-"+id, id)
	}
	lists := [][]string{ids, mixed, append(append(slices.Clone(ids), ids...), mixed...)}
	for _, list := range lists {
		for _, all := range []bool{true, false} {
			recs, errs := st.ReadRunRecords(ctx, list, all)
			if len(recs) != len(list) || len(errs) != len(list) {
				t.Fatalf("%d runs read as %d records, %d errors", len(list), len(recs), len(errs))
			}
			for i, id := range list {
				want, werr := store.ReadRunRecordByParts(ctx, st, id, all)
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

// Runs the runner wrote — effects paid, a grant consumed, a run with no
// checkpoint or no intents — read many at a time are read as each alone,
// sealed or not; a batch of distinct runs that exist is read in one go,
// and a missing run, a repeat or a batch too large is left to the read by
// parts.
func TestReadRunRecordsMatchesByParts(t *testing.T) {
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	must(t, err)
	for name, opts := range map[string]Options{"clear": {}, "sealed": {Sealer: k}} {
		t.Run(name, func(t *testing.T) {
			st := openTest(t, opts)
			ids := refundruns.Record(t, st, "", true, 12, 30, 5, 800, 7)
			// A run with events only, and one with nothing but its header.
			must(t, st.CreateRun(ctx, store.Run{ID: "bare", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}))
			l, err := st.AcquireLease(ctx, "bare", "A", time.Minute)
			must(t, err)
			must(t, st.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("control", `{"a":1}`)}}))
			must(t, st.CreateRun(ctx, store.Run{ID: "empty", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}))
			ids = append(ids, "bare", "empty")

			var effects, grants int
			for _, id := range ids {
				rec, err := store.ReadRunRecordByParts(ctx, st, id, true)
				must(t, err)
				effects += len(rec.Attempts) + len(rec.Receipts)
				grants += len(rec.Approvals)
			}
			if effects == 0 || grants == 0 {
				t.Fatalf("too little to compare: %d effects, %d grants", effects, grants)
			}
			sameRecords(t, st, ids)

			for _, all := range []bool{true, false} {
				recs := make([]store.RunRecord, len(ids))
				if ok := st.readRunRecords(ctx, ids, all, recs); slices.Contains(ok, false) {
					t.Fatalf("distinct runs (all %v) not read in one go: %v", all, ok)
				}
				list := []string{ids[0], "absent", ids[0]}
				ok := st.readRunRecords(ctx, list, all, make([]store.RunRecord, len(list)))
				if want := []bool{true, !all, false}; !slices.Equal(ok, want) {
					t.Fatalf("a missing run and a repeat (all %v) read in one go: %v, want %v", all, ok, want)
				}
				more := make([]string, RecordBatch+1)
				if ok := st.readRunRecords(ctx, more, all, make([]store.RunRecord, len(more))); slices.Contains(ok, true) {
					t.Fatalf("%d runs read in one go of %d: %v", len(more), RecordBatch, ok)
				}
			}
		})
	}
}
