package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkMatchRuns finds the runs of one order among 20,000, one in
// 1,000 of which bear its label: by the label index, by state (read
// header by header inside the database, as a filter without labels is),
// and by the label paging through every header (store.MatchingRuns over
// PagesOnly, what a store without the index would do).
func BenchmarkMatchRuns(b *testing.B) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	const runs = 20000
	// Created in batches through the fused start so that making them
	// takes seconds, not minutes of one fsync each.
	for i := range runs {
		r := store.Run{ID: fmt.Sprintf("run-%05d", i), WorkflowID: "wf", WorkflowVersion: "1", State: "INGEST",
			Labels: map[string]string{"order": fmt.Sprintf("A-%d", i%20), "team": "payments"}}
		if i%1000 == 7 {
			r.State, r.Labels["order"] = "WAIT_APPROVAL", "A-wanted"
		}
		if err := s.CreateRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		st   store.RunLister
		f    store.RunFilter
	}{
		{"label/index", s, store.RunFilter{Labels: map[string]string{"order": "A-wanted"}}},
		{"label+team/index", s, store.RunFilter{Labels: map[string]string{"order": "A-wanted", "team": "payments"}}},
		{"state/scan", s, store.RunFilter{State: "WAIT_APPROVAL"}},
		{"label/pages", storetest.PagesOnly{Store: s}, store.RunFilter{Labels: map[string]string{"order": "A-wanted"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				got, _, err := store.MatchingRuns(ctx, c.st, "", 100, 0, c.f)
				if err != nil || len(got) != runs/1000 {
					b.Fatalf("%d runs, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkRunHeader reads a run's header, as every lease and pass does:
// bare, and bearing four labels, which each read decodes.
func BenchmarkRunHeader(b *testing.B) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	labels := map[string]string{"order": "A-1042", "team": "payments", "region": "eu-west-1", "ticket": "OPS-7781"}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{{"bare", nil}, {"labelled", labels}} {
		if err := s.CreateRun(ctx, store.Run{ID: c.name, WorkflowID: "wf", WorkflowVersion: "1", State: "INGEST", Labels: c.labels}); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Run(ctx, c.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
