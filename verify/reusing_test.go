package verify

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"

	"flrh.dev/flrh/store"
)

// scribbler hands CheckMany's reads of several runs to the store's
// reusing read, writing over every byte of the memory lent before each
// read: whatever a worker kept of a batch's records past the read of its
// next batch would then hold other bytes. It keeps every memory lent, to
// write over it at the end as well.
type scribbler struct {
	store.Store
	inner interface {
		recordsReader
		reusingReader
	}
	mu    sync.Mutex
	mems  []*[][]byte
	reads int
}

func (s *scribbler) Unwrap() store.Store { return s.Store }

func (s *scribbler) ReadRunRecords(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []error) {
	return s.inner.ReadRunRecords(ctx, ids, all)
}

func (s *scribbler) ReadRunRecordsReusing(ctx context.Context, ids []string, all bool, mem *[][]byte) ([]store.RunRecord, []error) {
	s.mu.Lock()
	if !slices.Contains(s.mems, mem) {
		s.mems = append(s.mems, mem)
	}
	s.reads++
	s.mu.Unlock()
	scribbleOver(*mem)
	return s.inner.ReadRunRecordsReusing(ctx, ids, all, mem)
}

// scribbleOver writes over every byte of the chunks of a memory lent.
func scribbleOver(mem [][]byte) {
	for _, c := range mem {
		c = c[:cap(c)]
		for i := range c {
			c[i] = 0xa5
		}
	}
}

// hidesReusing is a store whose reads of several runs come only from
// ReadRunRecords (fresh memory each time): the oracle.
type hidesReusing struct {
	store.Store
	rr recordsReader
	ru runReader
}

func (h hidesReusing) ReadRunRecords(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []error) {
	return h.rr.ReadRunRecords(ctx, ids, all)
}

func (h hidesReusing) RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	return h.ru.RunAttempts(ctx, runID)
}

func (h hidesReusing) RunApprovals(ctx context.Context, runID string) ([]store.Approval, error) {
	return h.ru.RunApprovals(ctx, runID)
}

// CheckMany on a store that reuses the memory of a worker's last batch
// for the next finds exactly what it finds reading every batch into fresh
// memory, on runs tampered with in many ways, even when every byte lent
// is written over before each read and after CheckMany returns: no
// worker holds a batch's bytes past its next read, and no result holds
// them at all.
func TestCheckManyReusingMatchesFreshReads(t *testing.T) {
	path, wf, ids := manyRuns(t, 20)
	tamper(t, path,
		"DROP TRIGGER IF EXISTS receipts_no_delete", "DROP TRIGGER IF EXISTS checkpoints_no_update",
		`UPDATE events SET body = CAST(replace(body, 'INGEST', 'INGESX') AS BLOB) WHERE run_id = 'refund-0001' AND seq = 1`,
		`UPDATE receipts SET body = CAST(replace(body, 'confirmed_success', 'confirmed_failure') AS BLOB) WHERE run_id = 'refund-0002'`,
		`UPDATE intents SET body = CAST(replace(body, '"refund.pay"', '"refund.pax"') AS BLOB) WHERE run_id = 'refund-0003'`,
		`UPDATE events SET generation = 99 WHERE run_id = 'refund-0008' AND seq = 2`,
		`UPDATE checkpoints SET body = CAST(replace(body, '"SUCCEEDED"', '"FAILED"') AS BLOB) WHERE run_id = 'refund-0011'`,
		`DELETE FROM receipts WHERE run_id = 'refund-0012'`,
	)
	st := open(t, path, true)
	rr, _ := recordsReaderOf(st)
	inner, ok := rr.(interface {
		recordsReader
		reusingReader
	})
	if !ok {
		t.Fatal("the SQLite store has no reusing read")
	}
	ru, _ := runReaderOf(st)
	oracle := hidesReusing{Store: st, rr: rr, ru: ru}
	if rr, _ := recordsReaderOf(oracle); func() bool { _, ok := rr.(reusingReader); return ok }() {
		t.Fatal("the oracle reuses memory")
	}
	var jobs []Job
	for i, id := range ids {
		job := Job{RunID: id}
		if i%3 != 2 { // some jobs verify only
			job.Workflow = wf
		}
		jobs = append(jobs, job)
	}
	failed := 0
	for _, ws := range [][2]int{{1, 2}, {1, 3}, {2, 2}, {2, 5}, {1, 16}, {2, 16}} {
		for _, taper := range []bool{false, true} {
			want, err := checkMany(ctx, oracle, nil, jobs, ws[0], ws[1], taper)
			if err != nil {
				t.Fatal(err)
			}
			s := &scribbler{Store: st, inner: inner}
			got, err := checkMany(ctx, s, nil, jobs, ws[0], ws[1], taper)
			if err != nil {
				t.Fatal(err)
			}
			if s.reads < 2 {
				t.Fatalf("%d workers taking %d runs at a time: %d reads into lent memory", ws[0], ws[1], s.reads)
			}
			for _, mem := range s.mems {
				scribbleOver(*mem)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range want {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%d workers taking %d runs at a time (tapered %v), %s:\n got %+v %+v\nwant %+v %+v", ws[0], ws[1], taper,
							ids[i], got[i].Report, got[i].Replay, want[i].Report, want[i].Replay)
					}
				}
				t.Fatalf("%d workers taking %d runs at a time (tapered %v): the results differ", ws[0], ws[1], taper)
			}
			failed = 0
			for _, c := range want {
				if !c.Report.OK() || (c.Replay != nil && !c.Replay.OK()) {
					failed++
				}
			}
		}
	}
	if failed < 6 {
		t.Fatalf("findings in %d runs, want at least 6: the tampering went unnoticed", failed)
	}
}

// wrapsReads is a store whose reads of several runs are its own (here,
// the wrapped store's ReadRunRecords): CheckMany lends no memory to the
// store it wraps, whose reusing read would pass over them.
type wrapsReads struct {
	store.Store
	rr recordsReader
}

func (w wrapsReads) Unwrap() store.Store { return w.Store }

func (w wrapsReads) ReadRunRecords(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []error) {
	return w.rr.ReadRunRecords(ctx, ids, all)
}

// CheckMany lends memory only to the store whose reads of several runs it
// uses, never to one a wrapper of it passes over.
func TestCheckManyLendsOnlyTheStoreThatReads(t *testing.T) {
	path, _, ids := manyRuns(t, 4)
	st := open(t, path, true)
	rr, _ := recordsReaderOf(st)
	inner := rr.(interface {
		recordsReader
		reusingReader
	})
	s := &scribbler{Store: st, inner: inner}
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i].RunID = id
	}
	if _, err := checkMany(ctx, wrapsReads{Store: s, rr: rr}, nil, jobs, 1, 2, false); err != nil {
		t.Fatal(err)
	}
	if s.reads != 0 {
		t.Fatalf("%d reads into lent memory past the store's own reads", s.reads)
	}
	if _, err := checkMany(ctx, s, nil, jobs, 1, 2, false); err != nil || s.reads != 2 {
		t.Fatalf("%d reads into lent memory of 2, %v", s.reads, err)
	}
}
