package runner

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// inspectFresh is Inspect with nothing remembered.
func (h *harness) inspectFresh(id string) (Status, error) {
	return h.runner(nil).Inspect(ctx, id)
}

// Differential: at every point of a run's life, Inspect through the cache
// (a miss, then a hit) says exactly what a runner that never saw the run
// says.
func TestInspectCacheAgreesWithADecode(t *testing.T) {
	h := newHarness(t)
	check := func(when string) {
		t.Helper()
		want, werr := h.inspectFresh("run-1")
		for i := range 2 {
			got, err := h.r.Inspect(ctx, "run-1")
			if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, read %d: got %+v, %v; a fresh decode gives %+v, %v", when, i, got, err, want, werr)
			}
		}
	}
	if err := h.r.Start(ctx, "run-1", "refunds", "1", []byte(`{"refunds":[{"id":"a","amount":900,"payee":"bob"},{"id":"b","amount":950,"payee":"eve"}]}`)); err != nil {
		t.Fatal(err)
	}
	check("started")
	h.idle()
	check("waiting for the first approval")
	for n := 0; n < 2; n++ {
		st, _ := h.r.Inspect(ctx, "run-1")
		if len(st.Waiting) != 1 {
			t.Fatalf("approval %d: waiting on %+v", n, st.Waiting)
		}
		if err := h.r.Approve(ctx, "run-1", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("approval %d submitted", n))
		h.idle()
		check(fmt.Sprintf("approval %d consumed", n))
	}
	if st, _ := h.r.Inspect(ctx, "run-1"); st.Run.Outcome != "success" || st.Open != 0 || len(st.Waiting) != 0 {
		t.Fatalf("end: %+v", st)
	}
}

// A checkpoint whose bytes change under the same digest is refused on the
// next read, although its status was remembered.
func TestInspectCacheRefusesAlteredBytes(t *testing.T) {
	h := newHarness(t)
	h.start("run-2", large)
	if st, err := h.r.Inspect(ctx, "run-2"); err != nil || len(st.Waiting) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	db := h.store.DB()
	if _, err := db.Exec(`DROP TRIGGER checkpoints_no_update`); err != nil {
		t.Fatal(err)
	}
	cp, _ := h.store.Checkpoint(ctx, "run-2")
	altered := bytes.Replace(cp.Body, []byte(`"amount":900`), []byte(`"amount":9000`), 1)
	if bytes.Equal(altered, cp.Body) {
		t.Fatal("the checkpoint does not hold the amount")
	}
	if _, err := db.Exec(`UPDATE checkpoints SET body = ? WHERE run_id = ? AND seq = ?`, altered, "run-2", cp.Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Inspect(ctx, "run-2"); err == nil {
		t.Fatal("altered checkpoint read without error")
	}
}

// What Inspect hands out is the caller's: changing it changes nothing the
// next caller sees.
func TestInspectResultsAreTheCallers(t *testing.T) {
	h := newHarness(t)
	h.start("run-3", large)
	st, _ := h.r.Inspect(ctx, "run-3")
	if len(st.Waiting) != 1 {
		t.Fatalf("%+v", st)
	}
	st.Waiting[0].Preview = "something else"
	again, _ := h.r.Inspect(ctx, "run-3")
	if again.Waiting[0].Preview != "Refund 900 to bob" {
		t.Fatalf("a caller's change leaked: %q", again.Waiting[0].Preview)
	}
}

// The cache stays within its bound however many runs are read.
func TestStatusCacheIsBounded(t *testing.T) {
	var c statusCache
	for i := range maxStatuses + 100 {
		c.put(fmt.Sprintf("run-%d", i), derived{seq: int64(i)})
	}
	if len(c.m) != maxStatuses {
		t.Fatalf("%d entries", len(c.m))
	}
	// A run already present is updated in place, evicting nothing.
	var id string
	for k := range c.m {
		id = k
		break
	}
	c.put(id, derived{seq: -1})
	if len(c.m) != maxStatuses || c.m[id].seq != -1 {
		t.Fatalf("update: %d entries, %+v", len(c.m), c.m[id])
	}
}

// movingStore runs the next of its moves just before each checkpoint read:
// a commit landing between Inspect's read of a run's header and its read
// of the checkpoint.
type movingStore struct {
	store.Store
	moves []func()
}

func (m *movingStore) Unwrap() store.Store { return m.Store }

func (m *movingStore) Checkpoint(ctx context.Context, id string) (store.Checkpoint, error) {
	if len(m.moves) > 0 {
		move := m.moves[0]
		m.moves = m.moves[1:]
		move()
	}
	return m.Store.Checkpoint(ctx, id)
}

// A run that moves while Inspect reads it is shown as of one commit: the
// header and the status derived from the checkpoint never come from
// different moments (a run still waiting beside no approval it waits for,
// or WAIT_APPROVAL beside an outcome). Inspect answers what a read after
// the moves answers.
func TestInspectHeaderAndCheckpointAgreeWhileTheRunMoves(t *testing.T) {
	both := `{"refunds":[{"id":"a","amount":900,"payee":"bob"},{"id":"b","amount":950,"payee":"eve"}]}`
	for _, tc := range []struct {
		name  string
		input string
		moves int // approvals granted and consumed, one per checkpoint read
	}{
		{"still", large, 0},
		{"one commit between the reads", large, 1},
		{"a commit between every read", both, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start("run-m", tc.input)
			approveNext := func() {
				st, err := h.r.Inspect(ctx, "run-m")
				if err != nil || len(st.Waiting) == 0 {
					t.Fatalf("nothing to approve: %+v %v", st, err)
				}
				if err := h.r.Approve(ctx, "run-m", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
					t.Fatal(err)
				}
				h.idle()
			}
			ms := &movingStore{Store: h.store}
			for range tc.moves {
				ms.moves = append(ms.moves, approveNext)
			}
			reg := &effect.Registry{}
			if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
				t.Fatal(err)
			}
			reader, err := New(Config{Store: ms, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg,
				Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
			if err != nil {
				t.Fatal(err)
			}
			before := h.run("run-m")
			got, err := reader.Inspect(ctx, "run-m")
			if err != nil {
				t.Fatal(err)
			}
			if len(ms.moves) != 0 {
				t.Fatalf("%d moves never made", len(ms.moves))
			}
			want, werr := h.inspectFresh("run-m")
			if werr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("while moving Inspect gave %+v\nafter the moves it gives %+v (%v)", got, want, werr)
			}
			if moved := h.run("run-m").Head != before.Head; moved != (tc.moves > 0) {
				t.Fatalf("the run moved: %v, want %v", moved, tc.moves > 0)
			}
			if tc.moves == 2 && (got.Run.Outcome != "success" || len(got.Waiting) != 0) {
				t.Fatalf("after both approvals: %+v", got)
			}
		})
	}
}
