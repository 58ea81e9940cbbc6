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

	if last := f.streamEnd(revokedStream, 30*time.Second, "the stream of a revoked token"); last.event != "revoked" {
		t.Fatalf("the revoked token's stream ended with %+v", last)
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

// A token with expires_at is accepted until then and refused from then
// on, saying so; an event stream it opened ends with "event: expired" at
// that instant, without a request or a reload to notice.
func TestTokensExpire(t *testing.T) {
	soon := time.Now().Add(1500 * time.Millisecond).UTC()
	f := newFixture(t, `{"tokens":[
 {"actor":"oscar","roles":["operator"],"token":"`+tokOperator+`"},
 {"actor":"vera","roles":["viewer"],"token":"`+tokViewer+`","expires_at":"`+soon.Format(time.RFC3339Nano)+`"},
 {"actor":"old","roles":["viewer"],"token":"`+tokReconciler+`","expires_at":"2020-01-01T00:00:00Z"}
]}`)
	if a := f.get("/v1/runs", tokReconciler); a.status != 401 || !strings.Contains(string(a.body), "the token expired at 2020-01-01T00:00:00Z") {
		t.Fatalf("a token expired long ago: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)
	stream := f.openStream("held", tokViewer)
	if last := f.streamEnd(stream, 30*time.Second, "the stream of an expired token"); last.event != "expired" || last.at.Before(soon) {
		t.Fatalf("the stream ended with %q at %v, the token expiring at %v", last.event, last.at, soon)
	}
	if a := f.get("/v1/runs/held", tokViewer); a.status != 401 || !strings.Contains(string(a.body), "the token expired at") {
		t.Fatalf("after expiry: %d %s", a.status, a.body)
	}
	if a := f.get("/v1/runs/held", tokOperator); a.status != 200 {
		t.Fatalf("a token without expiry: %d", a.status)
	}
}
