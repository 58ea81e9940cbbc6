package runner

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"
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
