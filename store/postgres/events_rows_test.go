package postgres

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A tick's events are one row of events (migration 20): one statement
// inserts them, as one row numbered from the head's next position to the
// tick's last, and a tick without events writes no row. They read back
// each at its own seq, with its kind, body and hashes, in order, for one
// event and for several, and from after any position.
func TestEventsOneRowATick(t *testing.T) {
	schema := freshSchema(t)
	s := openNamed(t, schema, "flrh-events-"+schema, Options{MaxConns: 1})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	var want []store.Event
	var wantRows []string
	head := int64(0)
	for round, n := range []int{1, 3, 0, 1, 5} {
		var evs []store.Event
		for i := range n {
			evs = append(evs, storetest.Ev(fmt.Sprintf("K%d.%d", round, i), fmt.Sprintf(`{"round":%d,"i":%d}`, round, i)))
		}
		tick := store.Tick{ExpectHead: head, Events: evs}
		if n == 0 {
			tick.State = "S2"
		}
		sent := sentWrites(t, func() error { return s.Commit(ctx, l, tick) })
		inserts := 0
		for _, c := range sent {
			for _, q := range c {
				inserts += strings.Count(q, "INSERT INTO events")
			}
		}
		if want := min(n, 1); inserts != want {
			t.Fatalf("round %d: %d inserts into events, want %d: %q", round, inserts, want, sent)
		}
		if n > 0 {
			wantRows = append(wantRows, fmt.Sprintf("%d..%d", head+1, head+int64(n)))
		}
		want = append(want, evs...)
		head += int64(n)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq || '..' || last_seq FROM events WHERE run_id = 'r' ORDER BY last_seq`)
	must(t, err)
	var gotRows []string
	for rows.Next() {
		var r string
		must(t, rows.Scan(&r))
		gotRows = append(gotRows, r)
	}
	must(t, rows.Err())
	if strings.Join(gotRows, " ") != strings.Join(wantRows, " ") {
		t.Fatalf("events rows %q, want %q", gotRows, wantRows)
	}
	all, err := s.Events(ctx, "r", 0)
	must(t, err)
	for after := int64(0); after <= head+1; after++ {
		got, err := s.Events(ctx, "r", after)
		must(t, err)
		if wantN := max(0, head-after); int64(len(got)) != wantN || wantN > 0 && !reflect.DeepEqual(got, all[after:]) {
			t.Fatalf("after %d: %d events, want the last %d of %d", after, len(got), wantN, len(all))
		}
	}
	got, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("%d events read back, %d committed", len(got), len(want))
	}
	prev := ""
	for i, e := range got {
		w := want[i]
		if e.Seq != int64(i+1) || e.Kind != w.Kind || !bytes.Equal(e.Body, w.Body) || e.Digest != w.Digest || e.Generation != l.Generation {
			t.Fatalf("event %d read back as seq %d %q %s %s gen %d, committed as %q %s %s", i+1, e.Seq, e.Kind, e.Body, e.Digest, e.Generation, w.Kind, w.Body, w.Digest)
		}
		if i > 0 && e.PrevHash != prev {
			t.Fatalf("event %d's previous hash %s, the chain before it %s", i+1, e.PrevHash, prev)
		}
		if e.ChainHash != store.ChainHash(e.PrevHash, e.Seq, e.Digest) {
			t.Fatalf("event %d's chain hash %s is not its own", i+1, e.ChainHash)
		}
		prev = e.ChainHash
	}
}
