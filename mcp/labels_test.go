package mcp

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

// An agent starts runs with labels and finds them again by them; labels
// the rules refuse, flrh's own among them, are a tool error that starts
// nothing.
func TestRunLabelsMCP(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cs := connect(t, f.deps, nil)
	for _, c := range []struct {
		id, input string
		labels    map[string]any
	}{
		{"l-1", smallRefund, map[string]any{"order": "A-1", "team": "payments"}},
		{"l-2", largeRefund, map[string]any{"order": "A-2", "team": "payments"}},
	} {
		call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": c.id, "input": obj(t, c.input), "labels": c.labels, "wait_seconds": 0})
	}
	call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "l-3", "input": obj(t, strings.Replace(smallRefund, `"r-1"`, `"r-3"`, 1)), "wait_seconds": 0})
	for _, c := range []struct {
		labels map[string]any
		want   []string
	}{
		{map[string]any{"team": "payments"}, []string{"l-1", "l-2"}},
		{map[string]any{"team": "payments", "order": "A-2"}, []string{"l-2"}},
		{map[string]any{"order": "A-3"}, nil},
	} {
		l := call[RunList](t, cs, "list_runs", map[string]any{"labels": c.labels})
		var got []string
		for _, r := range l.Runs {
			got = append(got, r.RunID)
			if !maps.Equal(r.Labels, map[string]string{"order": r.Labels["order"], "team": "payments"}) {
				t.Errorf("run %s bears %v", r.RunID, r.Labels)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("list_runs %v: %v, want %v", c.labels, got, c.want)
		}
	}
	if det := call[RunDetail](t, cs, "get_run", map[string]any{"run_id": "l-1"}); det.Run.Labels["order"] != "A-1" {
		t.Errorf("get_run shows labels %v", det.Run.Labels)
	}
	for _, bad := range []map[string]any{{"Team": "x"}, {"flrh.schedule": "x"}, {"team": ""}} {
		res := callRaw(t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "refused", "input": obj(t, smallRefund), "labels": bad, "wait_seconds": 0})
		if !res.IsError {
			t.Errorf("labels %v: no tool error", bad)
		}
	}
	if res := callRaw(t, cs, "list_runs", map[string]any{"labels": map[string]any{"Team": "x"}}); !res.IsError || !strings.Contains(text(res), `label "Team"`) {
		t.Errorf("list_runs with a bad label: %s", text(res))
	}
	if _, err := f.st.Run(context.Background(), "refused"); err == nil {
		t.Fatal("a start refused for its labels started a run")
	}
}
