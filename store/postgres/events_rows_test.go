package postgres

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A tick's events are inserted from their arrays unnested side by side in
// the select list (one ProjectSet node, each array read an element at a
// time), not through a function scan of the arrays WITH ORDINALITY, which
// set up a function and a tuple descriptor per array at every execution
// and copied every element into a tuplestore first. The rows are the
// same: each event at its own seq (the head plus its 1-based position),
// its kind, body and hashes, in order, for one event and for several.
func TestEventsInsertedFromArraysSideBySide(t *testing.T) {
	schema := freshSchema(t)
	s := openNamed(t, schema, "flrh-events-"+schema, Options{MaxConns: 1})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	var want []store.Event
	head := int64(0)
	for round, n := range []int{1, 3, 1, 5} {
		var evs []store.Event
		for i := range n {
			evs = append(evs, storetest.Ev(fmt.Sprintf("K%d.%d", round, i), fmt.Sprintf(`{"round":%d,"i":%d}`, round, i)))
		}
		sent := sentWrites(t, func() error { return s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: evs}) })
		var ins string
		for _, c := range sent {
			for _, q := range c {
				if strings.Contains(q, "INSERT INTO events") {
					ins = q
				}
			}
		}
		if ins == "" {
			t.Fatalf("round %d: no statement inserted the events: %q", round, sent)
		}
		plan := genericPlan(t, ins)
		if !strings.Contains(plan, "ProjectSet") || strings.Contains(plan, "Function Scan") {
			t.Fatalf("round %d: the events are not inserted from their arrays side by side:\n%s", round, plan)
		}
		want = append(want, evs...)
		head += int64(n)
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
