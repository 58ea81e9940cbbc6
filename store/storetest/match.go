package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"flrh.dev/flrh/store"
)

// PagesOnly shows a store as a RunLister alone, so that MatchingRuns and
// TakeCensus page through it: the oracle of what the store does inside
// the database.
type PagesOnly struct{ Store store.Store }

// Runs implements store.RunLister.
func (p PagesOnly) Runs(ctx context.Context, after string, limit int) ([]store.Run, error) {
	return p.Store.Runs(ctx, after, limit)
}

// testMatchRuns holds a store's filtered listing to paging through every
// header with the same filter: the same runs and the same next, for every
// filter, cursor, limit and scan bound drawn from a small grid.
func testMatchRuns(t *testing.T, s store.Store, _ *Clock) {
	m, ok := store.As[store.RunMatcher](s)
	if !ok {
		t.Skip("this store does not filter its runs")
	}
	// Forty runs whose ids are not in creation order, in three states,
	// two workflows and two versions; three in four labelled, with a team
	// and, most of them, an order.
	states := []string{"INGEST", "WAIT_APPROVAL", "SUCCEEDED"}
	for i := range 40 {
		r := store.Run{ID: fmt.Sprintf("m-%02d", i*7%40), WorkflowID: []string{"wf-a", "wf-b"}[i%2], WorkflowVersion: []string{"1", "2"}[i/3%2], State: states[i*5%7%3]}
		if i%4 != 0 {
			r.Labels = map[string]string{"team": []string{"pay", "ops", `it's "quoted" <&>`}[i%3]}
			if i%5 != 0 {
				r.Labels["order"] = fmt.Sprint(i % 7 % 3)
			}
		}
		must(t, s.CreateRun(ctx, r))
	}
	filters := []store.RunFilter{{}, {State: "WAIT_APPROVAL"}, {State: "SUCCEEDED", WorkflowID: "wf-b"}, {WorkflowID: "wf-a", WorkflowVersion: "2"},
		{State: "INGEST", WorkflowID: "wf-a", WorkflowVersion: "1"}, {WorkflowVersion: "1"}, {State: "NOWHERE"}, {WorkflowID: "wf-c"},
		{WorkflowIDs: []string{"wf-a", "wf-c"}}, {WorkflowIDs: []string{}}, {State: "SUCCEEDED", WorkflowIDs: []string{"wf-b", "wf-a"}},
		{WorkflowID: "wf-a", WorkflowIDs: []string{"wf-b"}}, {WorkflowVersion: "2", WorkflowIDs: []string{"wf-b", `it's "quoted"`}},
		{Labels: map[string]string{"team": "pay"}}, {Labels: map[string]string{"team": "ops", "order": "1"}}, {Labels: map[string]string{"order": "2"}},
		{State: "WAIT_APPROVAL", Labels: map[string]string{"team": "ops"}}, {WorkflowIDs: []string{"wf-b"}, Labels: map[string]string{"order": "0"}},
		{WorkflowID: "wf-a", WorkflowVersion: "1", Labels: map[string]string{"team": `it's "quoted" <&>`}}, {Labels: map[string]string{"team": "nobody"}},
		{Labels: map[string]string{"team": "pay", "order": "nothing"}}, {Labels: map[string]string{"team": "pay", "order": "2"}}, {Labels: map[string]string{"zz": "1"}}}
	queries, nonEmpty := 0, 0
	for _, f := range filters {
		for _, after := range []string{"", "m-00", "m-07", "m-33", "m-39", "no-such-run"} {
			for _, limit := range []int{1, 2, 5, 100} {
				for _, scan := range []int{0, 1, 3, 13, 40, 100} {
					want, wantNext, err := store.MatchingRuns(ctx, PagesOnly{s}, after, limit, scan, f)
					must(t, err)
					got, next, err := m.MatchRuns(ctx, after, limit, scan, f)
					must(t, err)
					if !reflect.DeepEqual(got, want) || next != wantNext {
						t.Fatalf("filter %+v after %q limit %d scan %d:\n got %v next %q\nwant %v next %q", f, after, limit, scan, ids(got), next, ids(want), wantNext)
					}
					queries++
					if len(got) > 0 {
						nonEmpty++
					}
				}
			}
		}
	}
	if nonEmpty < queries/3 {
		t.Fatalf("only %d of %d queries found a run: the grid tests too little", nonEmpty, queries)
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 0}, {1, -1}} {
		_, _, err := m.MatchRuns(ctx, "", bad[0], bad[1], store.RunFilter{})
		mustCode(t, err, store.CodeInvalidInput)
	}
}

func ids(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}
