package server

import (
	"strings"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/policytest"
)

// GET /v1/runs/{id}/case: a run a person chose a path for comes back as a
// case that passes against its bundle, under the run's id and the name
// asked for; what cannot be answered is refused with a typed error.
func TestRunCaseEndpoint(t *testing.T) {
	f := newBundleFixture(t)
	f.chosenRun("case-1", "r-9001", "path:partial-refund")
	a := f.get("/v1/runs/case-1/case?name=carol%27s+goodwill+refund", tokVic)
	if a.status != 200 || !strings.Contains(string(a.body), `"name": "carol's goodwill refund"`) || !strings.Contains(string(a.body), `"run": "case-1"`) ||
		!strings.Contains(string(a.body), `"choose": "path:partial-refund"`) {
		t.Fatalf("case: %d %s", a.status, a.body)
	}
	wf, _, err := bundle.LoadExample("support-agent")
	if err != nil {
		t.Fatal(err)
	}
	res, err := policytest.Run(wf.Workflow, "case-1.test.json", a.body)
	if err != nil || len(res) != 1 || !res[0].Passed() || res[0].Steps != 3 {
		t.Fatalf("%v %+v\n%s", err, res, a.body)
	}
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/runs/nobody/case", 404, "nobody"},
		{"/v1/runs/case-1/case?colour=red", 400, "colour"},
		{"/v1/runs/case-1/case?name=" + strings.Repeat("x", maxCaseName+1), 400, "name is longer than"},
	} {
		if a := f.get(c.path, tokVic); a.status != c.status || !strings.Contains(string(a.body), c.want) {
			t.Errorf("%s: %d %s", c.path, a.status, a.body)
		}
	}
	if a := f.get("/v1/runs/case-1/case", ""); a.status != 401 {
		t.Errorf("no token: %d %s", a.status, a.body)
	}
}
