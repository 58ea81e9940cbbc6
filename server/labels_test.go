package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Runs started with labels show them, and are listed by them: one label,
// several (every one borne), with a state, paged. Labels the rules
// refuse, flrh's own keys among them, are a 400 naming /labels and start
// nothing; a malformed ?label is a 400 naming it.
func TestRunLabelsAPI(t *testing.T) {
	f := newFixture(t, tokenFileText)
	teams := []string{"payments", "ops", "payments", "payments", "ops"}
	for i, team := range teams {
		input := fmt.Sprintf(`{"refunds":[{"id":"r-40%02d","amount":40,"payee":"erin","reason":"r"}]}`, i)
		body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":"lab-%d","input":%s,"labels":{"team":%q,"order":"A-%d"}}`, i, input, team, i%2)
		if a := f.post("/v1/runs", tokOperator, body); a.status != 201 || !strings.Contains(string(a.body), `"team":"`+team+`"`) {
			t.Fatalf("start: %d %s", a.status, a.body)
		}
	}
	if a := f.post("/v1/runs", tokOperator, startBody("unlabelled", `{"refunds":[{"id":"r-4099","amount":40,"payee":"erin","reason":"r"}]}`)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	for i := range teams {
		f.waitFor(fmt.Sprintf("lab-%d", i), tokViewer, "an end", ended)
	}
	var one struct {
		Run RunView `json:"run"`
	}
	a := f.get("/v1/runs/lab-1", tokViewer)
	if json.Unmarshal(a.body, &one) != nil || !maps.Equal(one.Run.Labels, map[string]string{"team": "ops", "order": "A-1"}) {
		t.Fatalf("a run's labels: %s", a.body)
	}
	if a := f.get("/v1/runs/unlabelled", tokViewer); strings.Contains(string(a.body), `"labels"`) {
		t.Fatalf("an unlabelled run shows labels: %s", a.body)
	}
	list := func(query string) []string {
		t.Helper()
		var ids []string
		after := ""
		for range 10 {
			a := f.get("/v1/runs?limit=2&"+query+"&after="+after, tokViewer)
			var l struct {
				Runs []RunView `json:"runs"`
				Next string    `json:"next_after"`
			}
			if a.status != 200 || json.Unmarshal(a.body, &l) != nil {
				t.Fatalf("%s: %d %s", query, a.status, a.body)
			}
			for _, r := range l.Runs {
				ids = append(ids, r.ID)
			}
			if l.Next == "" {
				return ids
			}
			after = l.Next
		}
		t.Fatalf("%s: paging does not end", query)
		return nil
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"label=team=payments", []string{"lab-0", "lab-2", "lab-3"}},
		{"label=team=ops&label=order=A-1", []string{"lab-1"}},
		{"label=order=A-0&label=team=payments", []string{"lab-0", "lab-2"}},
		{"label=team=payments&state=SUCCEEDED", []string{"lab-0", "lab-2", "lab-3"}},
		{"label=team=payments&state=FAILED", nil},
		{"label=team=nobody", nil},
		{"label=" + url.QueryEscape("team=ops") + "&workflow=refund-agent", []string{"lab-1", "lab-4"}},
	} {
		if got := list(c.query); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
	}

	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	manyJSON, _ := json.Marshal(many)
	for _, c := range []struct{ labels, field string }{
		{`{"Team":"x"}`, "/labels/Team"}, {`{"team":""}`, "/labels/team"}, {`{"flrh.schedule":"nightly"}`, "/labels/flrh.schedule"},
		{`{"team":"a\nb"}`, "/labels/team"}, {`{"team":1}`, "/labels/team"}, {`{"a/b~":"x"}`, "/labels/a~1b~0"}, {string(manyJSON), "/labels"},
	} {
		body := `{"workflow":"refund-agent","run_id":"refused","input":{"refunds":[]},"labels":` + c.labels + `}`
		a := f.post("/v1/runs", tokOperator, body)
		var e struct {
			Error struct{ Type, Field string }
		}
		if json.Unmarshal(a.body, &e) != nil || a.status != 422 || e.Error.Type != "invalid" || e.Error.Field != c.field {
			t.Errorf("labels %s: %d %s, want 422 at %s", c.labels, a.status, a.body, c.field)
		}
	}
	if a := f.get("/v1/runs/refused", tokViewer); a.status != 404 {
		t.Fatalf("a start refused for its labels started a run: %d %s", a.status, a.body)
	}
	for _, bad := range []string{"label=team", "label=Team=x", "label=team=a&label=team=b", "label=team="} {
		for _, path := range []string{"/v1/runs?", "/v1/approvals?"} {
			if a := f.get(path+bad, tokViewer); a.status != 400 || !strings.Contains(string(a.body), "?label") {
				t.Errorf("%s%s: %d %s", path, bad, a.status, a.body)
			}
		}
	}

	// The approvals waiting, by label: only the runs bearing it, each
	// approval with its run's labels.
	for i, labels := range []string{`{"team":"payments","order":"B-1"}`, `{"team":"ops"}`} {
		input := fmt.Sprintf(`{"refunds":[{"id":"r-41%02d","amount":900,"payee":"erin","reason":"r"}]}`, i)
		body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":"big-%d","input":%s,"labels":%s}`, i, input, labels)
		if a := f.post("/v1/runs", tokOperator, body); a.status != 201 {
			t.Fatalf("start: %d %s", a.status, a.body)
		}
		f.waitFor(fmt.Sprintf("big-%d", i), tokViewer, "a wait", waiting)
	}
	var approvals struct {
		Approvals []WaitingApproval `json:"approvals"`
	}
	a = f.get("/v1/approvals?label=team=payments", tokApprover)
	if json.Unmarshal(a.body, &approvals) != nil || len(approvals.Approvals) != 1 || approvals.Approvals[0].RunID != "big-0" ||
		!maps.Equal(approvals.Approvals[0].Labels, map[string]string{"team": "payments", "order": "B-1"}) {
		t.Fatalf("approvals labelled team=payments: %s", a.body)
	}
	if a := f.get("/v1/approvals", tokApprover); strings.Count(string(a.body), `"run_id"`) != 2 {
		t.Fatalf("every approval: %s", a.body)
	}
}
