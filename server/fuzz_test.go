package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/workflow"
)

// bodyTarget returns a fresh destination for a request schema.
func bodyTarget(schema string) any {
	switch schema {
	case "start_run":
		return &StartRun{}
	case "submit_input":
		return &SubmitInput{}
	case "approve":
		return &Approve{}
	case "deny":
		return &Deny{}
	case "cancel":
		return &Cancel{}
	case "reconcile":
		return &Reconcile{}
	case "release":
		return &Release{}
	case "choose":
		return &Choose{}
	case "mrp":
		return &MRPTransition{}
	case "backfill":
		return &Backfill{}
	case "pause":
		return &Pause{}
	}
	return &tokenFile{}
}

// Every request decoder: arbitrary bytes never panic, a refusal is a 400
// or a 422 with a field, and an accepted body survives a round trip.
func FuzzDecodeBodies(f *testing.F) {
	for _, s := range []string{
		`{"workflow":"refund-agent","input":{"refunds":[]}}`,
		`{"workflow":"w","version":"1","run_id":"r-1","input":{}}`,
		`{"request_id":"approval:r-1","request_digest":"sha256:` + strings.Repeat("a", 64) + `","ttl_seconds":60}`,
		`{"request_id":"x","reason":"no"}`, `{}`, `{"reason":"stop"}`,
		`{"intent_id":"intent:r-1","resolution":"abandon"}`, `{"input":{"a":[1,2,{"b":null}]}}`,
		`{"proposal_id":"proposal:1","option":"path:store-credit"}`, `{"trigger":"pause","reason":"wait"}`,
		`{"trigger":"reject_all","proposal_id":"proposal:1"}`, `{"trigger":"PAUSE"}`,
		`{"a":1.5}`, `{"a":1,"a":2}`, `[`, "\xff", `{"input":{"x":"e\u0301"}}`,
		`{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T12:00:00Z"}`, `{"reason":"the ledger is being migrated"}`,
		`{"code":"c-1","code_verifier":"` + strings.Repeat("v", 43) + `","redirect_uri":"http://127.0.0.1:7700/ui/"}`,
		`{"issuer":"https://idp.example.com","audience":"flrh","login":{"client_id":"c"}}`, `{"refresh_token":"rt-1"}`,
	} {
		for i := range requestSchemas {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		schema := requestSchemas[int(which)%len(requestSchemas)]
		dst := bodyTarget(schema)
		err := decodeStrict(body, schema, dst)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || (ae.Status != 400 && ae.Status != 422) || ae.Type == "" || ae.Message == "" {
				t.Fatalf("%s: refusal %#v", schema, err)
			}
			return
		}
		again, err := json.Marshal(dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStrict(again, schema, bodyTarget(schema)); err != nil {
			t.Fatalf("%s: accepted %q but not its re-encoding %q: %v", schema, body, again, err)
		}
	})
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(tokenFileText))
	f.Add([]byte(`{"tokens":[{"actor":"a","roles":["viewer"],"token_sha256":"` + strings.Repeat("0", 64) + `"}]}`))
	f.Add([]byte(`{"tokens":[{"actor":"a","roles":["viewer","viewer"],"token":"0123456789abcdef"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := ParseTokens(data)
		if err == nil && tk.Len() == 0 {
			t.Fatal("a token file with no tokens was accepted")
		}
	})
}

// FuzzParseIdentityConfig: an identity provider's configuration is
// accepted with its defaults filled in, or refused with an error; never a
// panic.
func FuzzParseIdentityConfig(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://idp.example.com/realms/ops","audience":"flrh","actor_claim":"preferred_username","roles_claim":"/realm_access/roles","roles":{"sre":["operator"]}}`))
	f.Add([]byte(`{"issuer":"https://idp.example.com","audience":"a","jwks_file":"k.json","login":{"client_id":"c","authorization_endpoint":"https://idp.example.com/a","token_endpoint":"https://idp.example.com/t"}}`))
	f.Add([]byte(`{"issuer":"http://127.0.0.1:9","audience":"a","leeway_seconds":0,"algorithms":["EdDSA"]}`))
	f.Add([]byte(`{"issuer":"https://i.example","audience":"a","actor_claim":["preferred_username","client_id"],"introspection":{"endpoint":"https://i.example/x","client_id":"c","client_secret_env":"S","recheck_seconds":30},"token_file_roles":["agent"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseIdentityConfig(data, "/etc/flrh")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "identity provider: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if cfg.Issuer == "" || cfg.Audience == "" || len(cfg.ActorClaim) == 0 || cfg.RolesClaim == "" || cfg.verifier().Check() != nil {
			t.Fatalf("accepted %+v", cfg)
		}
		if cfg.Login != nil && (cfg.Login.Scope == "" || cfg.Login.Token == "") {
			t.Fatalf("login without defaults: %+v", cfg.Login)
		}
	})
}

// The whole API under arbitrary requests: never a panic, never a server
// error, and every failure is an error body.
func FuzzHandlers(f *testing.F) {
	fx := newFixture(f, tokenFileText)
	paths := []string{"/v1/runs", "/v1/runs/fz/inputs", "/v1/runs/fz/approve", "/v1/runs/fz/deny", "/v1/runs/fz/cancel", "/v1/runs/fz/reconcile",
		"/v1/runs/fz/choose", "/v1/runs/fz/mrp",
		"/v1/runs/fz", "/v1/runs/fz/events", "/v1/runs?state=X", "/v1/workflows", "/v1/runs/fz/tickets", "/v1/runs/fz/fhr", "/v1/runs/fz/scorecard",
		"/v1/runs/fz/why?proposal=p", "/v1/runs/fz/case", "/v1/login", "/v1/login/token", "/v1/login/refresh", "/v1/runs/fz/why?fact=blocked(%22x%22)", "/v1/approvals", "/v1/approvals?mine=true&limit=3",
		"/v1/hooks/fz", "/v1/schedules", "/v1/schedules/fz/trigger", "/v1/schedules/fz/backfill", "/v1/hooks/fz/parked?limit=2", "/v1/hooks/fz/parked/x/redeliver", "/v1/hooks", "/v1/schedules/fz/pause"}
	toks := []string{tokOperator, tokApprover, tokReconciler, tokViewer, tokAgent, tokUnknown, ""}
	f.Add(uint8(0), uint8(0), "application/json", []byte(`{"workflow":"refund-agent","run_id":"fz","input":{"refunds":[{"id":"r-9","amount":5,"payee":"z","reason":"r"}]}}`))
	f.Add(uint8(2), uint8(1), "application/json", []byte(`{"request_id":"approval:r-9","request_digest":"sha256:`+strings.Repeat("b", 64)+`"}`))
	f.Add(uint8(5), uint8(2), "application/json", []byte(`{"intent_id":"intent:r-9","resolution":"confirmed_success"}`))
	f.Add(uint8(1), uint8(4), "application/json; charset=utf-8", []byte(`{"input":{}}`))
	f.Add(uint8(4), uint8(0), "text/plain", []byte(`{}`))
	f.Add(uint8(7), uint8(3), "", []byte(nil))
	f.Add(uint8(6), uint8(0), "application/json", []byte(`{"proposal_id":"proposal:1","option":"path:store-credit"}`))
	f.Add(uint8(7), uint8(1), "application/json", []byte(`{"trigger":"pause"}`))
	f.Add(uint8(15), uint8(3), "", []byte(nil))
	f.Fuzz(func(t *testing.T, p, tk uint8, ctype string, body []byte) {
		path := paths[int(p)%len(paths)]
		method := "POST"
		if int(p)%len(paths) >= 8 {
			method = "GET"
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if tok := toks[int(tk)%len(toks)]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		fx.server.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var b errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error.Type == "" {
				t.Fatalf("%s %s: %d without an error body: %s", method, path, rec.Code, rec.Body)
			}
		} else if rec.Code != http.StatusOK && rec.Code != http.StatusCreated && rec.Code != http.StatusAccepted {
			t.Fatalf("%s %s: status %d", method, path, rec.Code)
		}
	})
}

// A person's acts on a run waiting in OPTIONS under arbitrary bodies and
// tokens: never a server error, every failure an error body, and never an
// accepted act from an agent, a viewer or a reconciler.
func FuzzSteerHandlers(f *testing.F) {
	fx := newBundleFixture(f)
	fx.startBundleRun("support-agent", "fz-steer", refundRequest("r-9001", 60, "carol", "goodwill"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := fx.runner.Inspect(context.Background(), "fz-steer")
		if v, ok := st.View.(workflow.View); err == nil && ok && v.MRPState == "OPTIONS" {
			break
		}
		if time.Now().After(deadline) {
			f.Fatal("the run never reached OPTIONS")
		}
		time.Sleep(20 * time.Millisecond)
	}
	toks := []string{tokDana, tokFinance, tokBot, tokVic, tokRita, ""}
	f.Add(false, uint8(2), []byte(`{"proposal_id":"proposal:1","option":"path:store-credit"}`))
	f.Add(true, uint8(2), []byte(`{"trigger":"pause"}`))
	f.Add(true, uint8(0), []byte(`{"trigger":"resume","reason":"r"}`))
	f.Add(true, uint8(1), []byte(`{"trigger":"reject_all","proposal_id":"proposal:x"}`))
	f.Add(false, uint8(0), []byte(`{"proposal_id":"p","option":"o","x":1}`))
	f.Fuzz(func(t *testing.T, steer bool, tk uint8, body []byte) {
		path := "/v1/runs/fz-steer/choose"
		if steer {
			path = "/v1/runs/fz-steer/mrp"
		}
		tok := toks[int(tk)%len(toks)]
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		fx.server.ServeHTTP(rec, req)
		switch {
		case rec.Code >= 500:
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		case rec.Code < 300 && tok != tokDana && tok != tokFinance:
			t.Fatalf("%s accepted from a caller who may not steer: %d", path, rec.Code)
		case rec.Code >= 400:
			var b errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error.Type == "" {
				t.Fatalf("%s: %d without an error body: %s", path, rec.Code, rec.Body)
			}
		}
	})
}
