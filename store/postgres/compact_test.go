package postgres

import (
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// Compact rewrites every table of the store's schema, and none of
// another's, into new files of its live rows: each table's file node
// changes, the pruned runs' dead rows no longer count in its size, the
// kept run reads back as before, and the store goes on writing.
func TestCompactRewritesEveryTable(t *testing.T) {
	s := openTest(t, Options{})
	other := openTest(t, Options{})
	const note = "PRUNED-PLAINTEXT-5b0e"
	write := func(id string) {
		t.Helper()
		must(t, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}))
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		must(t, err)
		body := `{"note":"` + strings.Repeat(note+" ", 40) + `"}`
		must(t, s.Commit(ctx, l, store.Tick{State: "SUCCEEDED", Outcome: "success",
			Events: []store.Event{storetest.Ev("NOTE", body), storetest.Ev("END", `{}`)},
			Trace:  []store.TraceRecord{{Kind: "note", Body: []byte(body)}}}))
	}
	for i := range 30 {
		write("gone-" + string(rune('a'+i)))
	}
	write("kept")
	for i := range 30 {
		a, err := archive.Read(ctx, s, "gone-"+string(rune('a'+i)))
		must(t, err)
		must(t, s.Prune(ctx, a.Pruning("")))
	}
	nodes := func(st *Store) map[string]int64 {
		t.Helper()
		rows, err := st.pool.Query(ctx, `SELECT tablename, pg_relation_filenode(quote_ident(schemaname) || '.' || quote_ident(tablename))::bigint
FROM pg_tables WHERE schemaname = current_schema()`)
		must(t, err)
		defer rows.Close()
		m := map[string]int64{}
		for rows.Next() {
			var name string
			var node int64
			must(t, rows.Scan(&name, &node))
			m[name] = node
		}
		must(t, rows.Err())
		return m
	}
	before, otherBefore := nodes(s), nodes(other)
	c, err := s.Compact(ctx)
	must(t, err)
	after := nodes(s)
	if len(c.Tables) != len(before) || len(before) < 10 {
		t.Fatalf("rewrote %d tables of %d: %v", len(c.Tables), len(before), c.Tables)
	}
	for name, node := range before {
		if after[name] == node {
			t.Errorf("table %s was not rewritten (file node %d)", name, node)
		}
	}
	for name, node := range nodes(other) {
		if otherBefore[name] != node {
			t.Errorf("another schema's table %s was rewritten", name)
		}
	}
	if c.Before <= 0 || c.After <= 0 || c.After >= c.Before {
		t.Fatalf("compacted %+v: the tables did not shrink", c)
	}
	evs, err := s.Events(ctx, "kept", 0)
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[0].Body), note) {
		t.Fatalf("the kept run after Compact: %d events (%v)", len(evs), err)
	}
	write("after")
	if r, err := s.Run(ctx, "after"); err != nil || r.Outcome != "success" {
		t.Fatalf("a run written after Compact: %+v (%v)", r, err)
	}
}
