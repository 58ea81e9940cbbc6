package storetest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testRunLabels holds a store to a run's labels: given on every way a run
// is created, they read back from the header, from the run lists and from
// the run's record as given; a run without any reads none (nil); labels
// the rules refuse are refused, typed, on every way, and nothing is
// written, not even the run.
func testRunLabels(t *testing.T, s store.Store, c *Clock) {
	const ttl = 10 * time.Second
	labels := map[string]string{"order": "A-1042", "team": "payments", "flrh.schedule": "nightly", "note": `it's "quoted" <&> 日本`}
	mk := func(id string, l map[string]string) (store.Run, store.Inbound) {
		return store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED", Labels: maps.Clone(l)}, Inb(id, "input:1", "INPUT", `{"a":1}`)
	}
	created := map[string]map[string]string{"plain": labels, "bare": nil, "one": {"k": "v"}}
	for _, id := range []string{"plain", "bare", "one"} {
		run, in := mk(id, created[id])
		must(t, s.CreateRun(ctx, run, in))
	}
	if lc, ok := s.(store.LeasedCreator); ok {
		run, in := mk("leased", labels)
		_, err := lc.CreateRunLeased(ctx, run, "w", ttl, in)
		must(t, err)
		created["leased"] = labels
	}
	if sc, ok := s.(store.StartCommitter); ok {
		run, in := mk("committed", labels)
		_, err := sc.CreateRunCommit(ctx, run, "w", ttl, []store.Inbound{in}, store.Tick{ExpectHead: 0, Consume: []string{"input:1"}, Events: []store.Event{Ev("E", `{"n":1}`)}})
		must(t, err)
		created["committed"] = labels
	}
	type recordReader interface {
		ReadRunRecord(ctx2 context.Context, runID string, all bool) (store.RunRecord, error)
	}
	rr, hasRecords := s.(recordReader)
	for id, want := range created {
		r, err := s.Run(ctx, id)
		must(t, err)
		if !reflect.DeepEqual(r.Labels, want) {
			t.Fatalf("run %s reads labels %v, want %v", id, r.Labels, want)
		}
		if hasRecords {
			rec, err := rr.ReadRunRecord(ctx, id, true)
			must(t, err)
			if !reflect.DeepEqual(rec.Run, r) {
				t.Fatalf("run %s: the record's header %+v is not the header read alone %+v", id, rec.Run, r)
			}
		}
	}
	all, err := s.Runs(ctx, "", 100)
	must(t, err)
	for _, r := range all {
		if !reflect.DeepEqual(r.Labels, created[r.ID]) {
			t.Fatalf("the list reads run %s with labels %v, want %v", r.ID, r.Labels, created[r.ID])
		}
	}

	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for i, bad := range []map[string]string{many, {"Team": "x"}, {"team": ""}, {"team": "a\nb"}, {"-x": "y"}} {
		id := fmt.Sprintf("bad-%d", i)
		run, in := mk(id, bad)
		mustCode(t, s.CreateRun(ctx, run, in), store.CodeInvalidInput)
		if lc, ok := s.(store.LeasedCreator); ok {
			_, err := lc.CreateRunLeased(ctx, run, "w", ttl, in)
			mustCode(t, err, store.CodeInvalidInput)
		}
		if sc, ok := s.(store.StartCommitter); ok {
			_, err := sc.CreateRunCommit(ctx, run, "w", ttl, []store.Inbound{in}, store.Tick{ExpectHead: 0, Consume: []string{"input:1"}, Events: []store.Event{Ev("E", `{"n":1}`)}})
			mustCode(t, err, store.CodeInvalidInput)
		}
		if _, err := s.Run(ctx, id); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("labels %v refused, yet the run was written: %v", bad, err)
		}
	}
	// A refused run left no label behind: a filter by the refused run's
	// label finds nothing.
	if m, ok := store.As[store.RunMatcher](s); ok {
		runs, _, err := m.MatchRuns(ctx, "", 10, 0, store.RunFilter{Labels: map[string]string{"k0": "v"}})
		must(t, err)
		if len(runs) != 0 {
			t.Fatalf("a refused run's labels were indexed: %v", ids(runs))
		}
		runs, _, err = m.MatchRuns(ctx, "", 10, 0, store.RunFilter{Labels: map[string]string{"team": "payments", "flrh.schedule": "nightly"}})
		must(t, err)
		if got := ids(runs); len(got) != len(created)-2 {
			t.Fatalf("the runs labelled team=payments: %v", got)
		}
	}
}
