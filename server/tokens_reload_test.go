package server

import (
	"strings"
	"testing"
	"time"
)

// Tokens put in place by SetTokens authenticate every request from then
// on: a token added is accepted, one removed is refused, a role changed
// grants what the new role grants; an event stream opened with a token
// that is revoked ends with "event: revoked", while one whose token still
// stands reads on. A server started without tokens is not given any, nor
// one started with them left without.
func TestSetTokensReplacesWhoMayCall(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)
	if a := f.get("/v1/runs/held", tokUnknown); a.status != 401 {
		t.Fatalf("an unknown token: %d", a.status)
	}
	revokedStream := f.openStream("held", tokViewer)
	keptStream := f.openStream("held", tokOperator)

	// vera's token revoked; a new token for una; oscar now a viewer only.
	next, err := ParseTokens([]byte(`{"tokens":[
 {"actor":"oscar","roles":["viewer"],"token":"` + tokOperator + `"},
 {"actor":"alice","roles":["approver"],"token":"` + tokApprover + `"},
 {"actor":"una","roles":["viewer"],"token_sha256":"` + sha256hex(tokUnknown) + `"}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(next); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token  string
		path   string
		status int
	}{
		{tokViewer, "/v1/runs/held", 401},
		{tokReconciler, "/v1/runs/held", 401},
		{tokUnknown, "/v1/runs/held", 200},
		{tokOperator, "/v1/runs/held", 200},
	} {
		if a := f.get(c.path, c.token); a.status != c.status {
			t.Errorf("GET %s as %s: %d, want %d", c.path, c.token, a.status, c.status)
		}
	}
	if a := f.post("/v1/runs", tokOperator, startBody("another", smallRefund)); a.status != 403 {
		t.Fatalf("oscar, a viewer now, started a run: %d", a.status)
	}

	select {
	case msgs := <-revokedStream:
		if len(msgs) == 0 || msgs[len(msgs)-1].event != "revoked" {
			t.Fatalf("the revoked token's stream ended with %+v", msgs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream of a revoked token is still open")
	}
	// oscar may still read: his stream stays open until the run ends or
	// the server stops.
	select {
	case msgs := <-keptStream:
		t.Fatalf("the stream of a token that still reads ended: %+v", msgs)
	case <-time.After(300 * time.Millisecond):
	}
	f.server.Shutdown()
	select {
	case msgs := <-keptStream:
		if len(msgs) == 0 || msgs[len(msgs)-1].event != "shutdown" {
			t.Fatalf("the kept stream ended with %+v", msgs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the kept stream did not end on shutdown")
	}

	if err := f.server.SetTokens(nil); err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("tokens taken from a server started with them: %v", err)
	}
	open := newFixture(t, "")
	if err := open.server.SetTokens(next); err == nil {
		t.Fatal("tokens given to a server started without them")
	}
	if err := open.server.SetTokens(nil); err != nil {
		t.Fatalf("nothing put in place of nothing: %v", err)
	}
}
