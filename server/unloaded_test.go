package server

import (
	"context"
	"testing"

	"flrh.dev/flrh/store"
)

// A run of a workflow this server does not load is still shown (its header,
// with why its status is missing) and verified, but not replayed.
func TestRunOfUnloadedWorkflow(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if err := f.store.CreateRun(context.Background(), store.Run{ID: "foreign", WorkflowID: "elsewhere", WorkflowVersion: "3", State: "INIT"}); err != nil {
		t.Fatal(err)
	}
	p := f.page("foreign", tokViewer)
	if p.Run.Workflow != "elsewhere" || p.StatusError == "" {
		t.Fatalf("page %+v", p)
	}
	if a := f.get("/v1/runs/foreign/verify", tokViewer); a.status != 200 {
		t.Fatalf("verify: %d %s", a.status, a.body)
	}
	a := f.get("/v1/runs/foreign/replay", tokViewer)
	if a.status != 409 {
		t.Fatalf("replay: %d %s", a.status, a.body)
	}
	if typ, _ := a.errorOf(t); typ != TypeConflict {
		t.Fatalf("replay error %s", typ)
	}
	// Nothing here can judge a person's act on it, nor explain it: 409,
	// never a server error. Its record lists are still read.
	for _, c := range []struct{ method, path, token, body string }{
		{"POST", "/v1/runs/foreign/choose", tokOperator, `{"proposal_id":"p-1","option":"o"}`},
		{"POST", "/v1/runs/foreign/mrp", tokOperator, `{"trigger":"pause"}`},
		{"GET", "/v1/runs/foreign/why?proposal=p-1", tokViewer, ""},
	} {
		ctype := ""
		if c.method == "POST" {
			ctype = "application/json"
		}
		a := f.do(c.method, c.path, c.token, ctype, []byte(c.body))
		if typ, _ := a.errorOf(t); a.status != 409 || typ != TypeConflict {
			t.Fatalf("%s %s: %d %s", c.method, c.path, a.status, a.body)
		}
	}
	if a := f.get("/v1/runs/foreign/tickets", tokViewer); a.status != 200 {
		t.Fatalf("tickets: %d %s", a.status, a.body)
	}
}
