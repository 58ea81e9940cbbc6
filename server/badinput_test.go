package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Every bad request gets the right status and error type, and changes
// nothing: no run is created and the waiting run still waits.
func TestBadRequestsChangeNothing(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	p := f.waitFor("held", tokViewer, "an approval wait", waiting)
	need := p.Waiting[0]
	goodApprove := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)
	big := `{"workflow":"refund-agent","input":{"pad":"` + strings.Repeat("x", DefaultMaxBody) + `"}}`

	cases := []struct {
		name, method, path, token, ctype, body string
		status                                 int
		typ, field                             string
	}{
		{"no token", "GET", "/v1/runs", "", "", "", 401, TypeUnauthenticated, ""},
		{"unknown token", "GET", "/v1/runs", tokUnknown, "", "", 401, TypeUnauthenticated, ""},
		{"viewer starts", "POST", "/v1/runs", tokViewer, "application/json", startBody("x1", smallRefund), 403, TypeForbidden, ""},
		{"approver starts", "POST", "/v1/runs", tokApprover, "application/json", startBody("x2", smallRefund), 403, TypeForbidden, ""},
		{"agent approves", "POST", "/v1/runs/held/approve", tokAgent, "application/json", goodApprove, 403, TypeForbidden, ""},
		{"reconciler approves", "POST", "/v1/runs/held/approve", tokReconciler, "application/json", goodApprove, 403, TypeForbidden, ""},
		{"agent reconciles", "POST", "/v1/runs/held/reconcile", tokAgent, "application/json", `{"intent_id":"intent:r-2001","resolution":"abandon"}`, 403, TypeForbidden, ""},
		{"malformed JSON", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":`, 400, TypeMalformed, "/workflow"},
		{"duplicate key", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"a","workflow":"b","input":{}}`, 400, TypeMalformed, ""},
		{"float", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"refund-agent","input":{"amount":1.5}}`, 400, TypeMalformed, "/input/amount"},
		{"unknown field", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"refund-agent","input":{},"priority":1}`, 422, TypeInvalid, "/"},
		{"missing field", "POST", "/v1/runs", tokOperator, "application/json", `{"input":{}}`, 422, TypeInvalid, "/"},
		{"wrong type", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"refund-agent","input":[]}`, 422, TypeInvalid, "/input"},
		{"bad run id", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"refund-agent","run_id":"../x","input":{}}`, 422, TypeInvalid, "/run_id"},
		{"unknown workflow", "POST", "/v1/runs", tokOperator, "application/json", `{"workflow":"nope","input":{}}`, 422, TypeInvalid, "/workflow"},
		{"run id taken", "POST", "/v1/runs", tokOperator, "application/json", startBody("held", smallRefund), 409, TypeConflict, "/run_id"},
		{"too large", "POST", "/v1/runs", tokOperator, "application/json", big, 413, TypeTooLarge, ""},
		{"no content type", "POST", "/v1/runs", tokOperator, "", startBody("x3", smallRefund), 415, TypeUnsupportedMedia, ""},
		{"form content type", "POST", "/v1/runs", tokOperator, "application/x-www-form-urlencoded", startBody("x4", smallRefund), 415, TypeUnsupportedMedia, ""},
		{"text content type", "POST", "/v1/runs/held/approve", tokApprover, "text/plain", goodApprove, 415, TypeUnsupportedMedia, ""},
		{"bad resolution", "POST", "/v1/runs/held/reconcile", tokReconciler, "application/json", `{"intent_id":"intent:r-2001","resolution":"maybe"}`, 422, TypeInvalid, "/resolution"},
		{"not waiting to reconcile", "POST", "/v1/runs/held/reconcile", tokReconciler, "application/json", `{"intent_id":"intent:r-2001","resolution":"abandon"}`, 409, TypeConflict, ""},
		{"unknown request", "POST", "/v1/runs/held/approve", tokApprover, "application/json", `{"request_id":"approval:nope","request_digest":"` + need.RequestDigest + `"}`, 409, TypeConflict, "/request_id"},
		{"bad digest syntax", "POST", "/v1/runs/held/approve", tokApprover, "application/json", `{"request_id":"x","request_digest":"md5:1"}`, 422, TypeInvalid, "/request_digest"},
		{"ttl too long", "POST", "/v1/runs/held/approve", tokApprover, "application/json", `{"request_id":"x","request_digest":"` + need.RequestDigest + `","ttl_seconds":999999}`, 422, TypeInvalid, "/ttl_seconds"},
		{"unknown run", "GET", "/v1/runs/nope", tokViewer, "", "", 404, TypeNotFound, ""},
		{"unknown run events", "GET", "/v1/runs/nope/events", tokViewer, "", "", 404, TypeNotFound, ""},
		{"unknown run stream", "GET", "/v1/runs/nope/stream", tokViewer, "", "", 404, TypeNotFound, ""},
		{"unknown run approve", "POST", "/v1/runs/nope/approve", tokApprover, "application/json", goodApprove, 404, TypeNotFound, ""},
		{"unknown run input", "POST", "/v1/runs/nope/inputs", tokOperator, "application/json", `{"input":{}}`, 404, TypeNotFound, ""},
		{"unknown run cancel", "POST", "/v1/runs/nope/cancel", tokOperator, "application/json", `{}`, 404, TypeNotFound, ""},
		{"unknown path", "GET", "/v1/nothing", tokViewer, "", "", 404, TypeNotFound, ""},
		{"wrong method", "DELETE", "/v1/runs/held", tokViewer, "", "", 405, TypeMethodNotAllowed, ""},
		{"unknown query", "GET", "/v1/runs?sort=desc", tokViewer, "", "", 400, TypeMalformed, "?sort"},
		{"bad limit", "GET", "/v1/runs?limit=0", tokViewer, "", "", 400, TypeMalformed, "?limit"},
		{"bad state", "GET", "/v1/runs?state=wait", tokViewer, "", "", 400, TypeMalformed, "?state"},
		{"bad after", "GET", "/v1/runs/held/events?after=-1", tokViewer, "", "", 400, TypeMalformed, "?after"},
		{"agent chooses", "POST", "/v1/runs/held/choose", tokAgent, "application/json", `{"proposal_id":"p-1","option":"o"}`, 403, TypeForbidden, ""},
		{"agent pauses", "POST", "/v1/runs/held/mrp", tokAgent, "application/json", `{"trigger":"pause"}`, 403, TypeForbidden, ""},
		{"reconciler pauses", "POST", "/v1/runs/held/mrp", tokReconciler, "application/json", `{"trigger":"pause"}`, 403, TypeForbidden, ""},
		{"choice without an option", "POST", "/v1/runs/held/choose", tokOperator, "application/json", `{"proposal_id":"p-1"}`, 422, TypeInvalid, "/"},
		{"choice naming an actor", "POST", "/v1/runs/held/choose", tokOperator, "application/json", `{"proposal_id":"p-1","option":"o","actor":"alice"}`, 422, TypeInvalid, "/"},
		{"unknown trigger", "POST", "/v1/runs/held/mrp", tokOperator, "application/json", `{"trigger":"approve"}`, 422, TypeInvalid, "/trigger"},
		{"choice with no deliberation", "POST", "/v1/runs/held/choose", tokOperator, "application/json", `{"proposal_id":"p-1","option":"o"}`, 409, TypeConflict, ""},
		{"pause with no deliberation", "POST", "/v1/runs/held/mrp", tokApprover, "application/json", `{"trigger":"pause"}`, 409, TypeConflict, ""},
		{"unknown run choose", "POST", "/v1/runs/nope/choose", tokOperator, "application/json", `{"proposal_id":"p-1","option":"o"}`, 404, TypeNotFound, ""},
		{"unknown run mrp", "POST", "/v1/runs/nope/mrp", tokOperator, "application/json", `{"trigger":"pause"}`, 404, TypeNotFound, ""},
		{"unknown run tickets", "GET", "/v1/runs/nope/tickets", tokViewer, "", "", 404, TypeNotFound, ""},
		{"why without a question", "GET", "/v1/runs/held/why", tokViewer, "", "", 400, TypeMalformed, "?proposal"},
		{"mrp form content type", "POST", "/v1/runs/held/mrp", tokOperator, "application/x-www-form-urlencoded", `trigger=pause`, 415, TypeUnsupportedMedia, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.do(c.method, c.path, c.token, c.ctype, []byte(c.body))
			if a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
			}
			typ, field := a.errorOf(t)
			if typ != c.typ || (c.field != "" && field != c.field) {
				t.Fatalf("error %s at %q, want %s at %q: %s", typ, field, c.typ, c.field, a.body)
			}
			if c.status == 401 && a.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			if c.status == 405 && a.header.Get("Allow") != "GET" {
				t.Fatalf("405 Allow %q", a.header.Get("Allow"))
			}
		})
	}
	runs, err := f.store.Runs(context.Background(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("bad requests created runs: %d", len(runs))
	}
	if p := f.page("held", tokViewer); p.Run.State != "WAIT_APPROVAL" || len(p.Waiting) != 1 || len(f.sb.Mutations()) != 0 {
		t.Fatalf("bad requests moved the run: %+v", p)
	}
	in, _ := f.store.Inbox(context.Background(), "held", false)
	if len(in) != 1 {
		t.Fatalf("bad requests reached the inbox: %d entries", len(in))
	}
	// Logs hold who was refused, never a token.
	logs := f.logs.String()
	for _, tok := range allTokens {
		if strings.Contains(logs, tok) {
			t.Fatalf("a token reached the logs: %s", tok)
		}
	}
	if !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, `"actor":"bot"`) {
		t.Fatal("a refused agent act was not logged with its actor")
	}
}

// Without a token file only loopback callers with a loopback Host are
// served, all as the actor "local".
func TestNoTokensServesLoopbackOnly(t *testing.T) {
	f := newFixture(t, "")
	a := f.get("/v1/whoami", "")
	if a.status != 200 || a.json(t)["actor"] != "local" {
		t.Fatalf("whoami: %d %s", a.status, a.body)
	}
	r2, _ := newRequest("GET", f.ts.URL+"/v1/runs")
	r2.Host = "flrh.attacker.example"
	resp, err := f.ts.Client().Do(r2)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("rebound Host: %d", resp.StatusCode)
	}
	// The local actor may act: start and approve.
	if a := f.post("/v1/runs", "", startBody("local-1", largeRefund)); a.status != 201 {
		t.Fatalf("local start: %d %s", a.status, a.body)
	}
	p := f.waitFor("local-1", "", "an approval wait", waiting)
	if a := f.post("/v1/runs/local-1/approve", "", fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, p.Waiting[0].RequestID, p.Waiting[0].RequestDigest)); a.status != 202 {
		t.Fatalf("local approve: %d %s", a.status, a.body)
	}
	if p := f.waitFor("local-1", "", "its end", ended); p.Run.State != "SUCCEEDED" {
		t.Fatalf("local run ended %s", p.Run.State)
	}
}

func TestListenCheck(t *testing.T) {
	tk, err := ParseTokens([]byte(tokenFileText))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr   string
		tokens *Tokens
		ok     bool
	}{
		{"127.0.0.1:7700", nil, true},
		{"[::1]:7700", nil, true},
		{"localhost:7700", nil, true},
		{"0.0.0.0:7700", nil, false},
		{":7700", nil, false},
		{"10.1.2.3:7700", nil, false},
		{"[::]:7700", nil, false},
		{"0.0.0.0:7700", tk, true},
		{":7700", tk, true},
		{"nonsense", nil, false},
	} {
		if err := ListenCheck(c.addr, c.tokens.Len() > 0); (err == nil) != c.ok {
			t.Errorf("ListenCheck(%q, %d tokens) = %v", c.addr, c.tokens.Len(), err)
		}
	}
}

func TestParseTokens(t *testing.T) {
	tk, err := ParseTokens([]byte(tokenFileText))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := tk.lookup(tokApprover); !ok || g.p.Actor != "alice" || !g.p.may(permApprove) || g.p.may(permReconcile) || !g.expires.IsZero() {
		t.Fatalf("approver: %+v %v", g, ok)
	}
	if g, ok := tk.lookup(tokAgent); !ok || g.p.may(permApprove) || g.p.may(permCancel) || g.p.may(permReconcile) || !g.p.may(permSubmit) || !g.p.isAgentOnly() {
		t.Fatalf("agent: %+v", g)
	}
	if _, ok := tk.lookup(tokUnknown); ok {
		t.Fatal("an unknown token authenticated")
	}
	// token_sha256 of "hashed-token-0123456789"
	hashed := `{"tokens":[{"actor":"h","roles":["viewer"],"token_sha256":"` + sha256hex("hashed-token-0123456789") + `"}]}`
	tk, err = ParseTokens([]byte(hashed))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := tk.lookup("hashed-token-0123456789"); !ok || g.p.Actor != "h" {
		t.Fatal("a hashed token did not authenticate")
	}
	for _, bad := range []string{
		``, `[]`, `{"tokens":[]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"]}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"short"}]}`,
		`{"tokens":[{"actor":"a","roles":["root"],"token":"0123456789abcdef"}]}`,
		`{"tokens":[{"actor":"a","roles":[],"token":"0123456789abcdef"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef","token_sha256":"` + sha256hex("x") + `"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef"},{"actor":"b","roles":["agent"],"token":"0123456789abcdef"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef","extra":1}]}`,
		`{"tokens":[{"actor":"a b","roles":["viewer"],"token":"0123456789abcdef"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef with a space"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef","expires_at":"next week"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef","expires_at":"2027-03-01"}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef","expires_at":7}]}`,
		`{"tokens":[{"actor":"a","roles":["viewer"],"token":"0123456789abcdef` + strings.Repeat("x", 600) + `"}]}`,
	} {
		if _, err := ParseTokens([]byte(bad)); err == nil {
			t.Errorf("ParseTokens accepted %s", bad)
		} else if strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
}
