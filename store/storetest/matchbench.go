package storetest

import (
	"context"
	"fmt"
	"testing"

	"flrh.dev/flrh/store"
)

// BenchMatchRuns finds the runs of one order among 20,000 in s, one in
// 1,000 of which bear its label: by the label index, by two labels, by
// state (headers read inside the database, as a filter without labels
// is), and by the label paging through every header (store.MatchingRuns
// over PagesOnly, what a store without the index would do). Each store's
// BenchmarkMatchRuns calls it, so that the two are measured alike.
func BenchMatchRuns(b *testing.B, s store.Store) {
	ctx := context.Background()
	const runs = 20000
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
		{"label/pages", PagesOnly{Store: s}, store.RunFilter{Labels: map[string]string{"order": "A-wanted"}}},
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
