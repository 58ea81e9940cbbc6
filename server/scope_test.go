package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/internal/testidp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/store"
)

const (
	tokRefunds = "tok-refunds-team-5a1c9e0b"
	tokOps     = "tok-ops-team-3d7f2b8e41"
)

// scopedTokens adds to the fixture's tokens a refunds team's, scoped to
// refund-agent, and an operations team's, scoped to ops-agent, each with
// every role.
var scopedTokens = strings.Replace(tokenFileText, `]}`, `,
 {"actor":"rhea","roles":["operator","approver","reconciler","viewer","agent"],"token":"`+tokRefunds+`","workflows":["refund-agent"]},
 {"actor":"otto","roles":["operator","approver","reconciler","viewer","agent"],"token":"`+tokOps+`","workflows":["ops-agent"]}
]}`, 1)

// A principal scoped to some workflows sees and acts on their runs
// alone: every route of a run of another workflow answers as for a run
// that does not exist, word for word; lists, the approvals inbox, the
// workflows, schedules and webhooks leave the others out; a run of
// another workflow is not started; the metrics, which span every
// workflow, are refused; and MCP's tools hold an agent to the same.
func TestScopedPrincipals(t *testing.T) {
	specs, err := ParseWebhooks([]byte(webhooksText), false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeSecret(t, dir)
	hooks, err := LoadWebhooks(specs, dir, func(k string) string {
		return map[string]string{"SHOP_SECRET": "whsec_" + "c2hvcC1zZWNyZXQtMDEyMzQ1Njc4OWFiY2RlZg==", "STRIPE_NEW": string(stripeNew), "STRIPE_OLD": string(stripeOld),
			"SHOPIFY_SECRET": string(shopifySecret), "GITLAB_TOKEN": string(gitlabToken)}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, scopedTokens, func(_ *runner.Config, c *Config) { c.Webhooks = hooks })
	sched, err := schedule.Parse([]byte(`{"schedules":[{"name":"m","cron":"0 3 * * *","workflow":"refund-agent",
 "input":{"refunds":[{"id":"m-{$date}","amount":10,"payee":"dan","reason":"sweep"}]}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	pauses, _ := store.SchedulePausingOf(f.store)
	sc, err := schedule.New(sched, schedule.Config{Runner: f.runner, Workflows: Static{f.server.cfg.Catalog.Workflows()[0]}.Workflows, Pauses: pauses})
	if err != nil {
		t.Fatal(err)
	}
	f.server.SetSchedules(sc)

	if a := f.post("/v1/runs", tokRefunds, startBody("refund-large", largeRefund)); a.status != 201 {
		t.Fatalf("the refunds team starts a refund: %d %s", a.status, a.body)
	}
	p := f.waitFor("refund-large", tokRefunds, "an approval wait", waiting)

	// Every route of a run answers the operations team as for no run.
	message := func(a answer) string {
		var e struct {
			Error struct{ Type, Message string }
		}
		json.Unmarshal(a.body, &e)
		return fmt.Sprintf("%d %s %s", a.status, e.Error.Type, e.Error.Message)
	}
	checked := 0
	for _, rt := range routes {
		if rt.scope != scopeRun {
			continue
		}
		path := strings.Replace(rt.Pattern, "{id}", "refund-large", 1)
		other := message(f.do(rt.Method, path, tokOps, "application/json", []byte(`{}`)))
		none := message(f.do(rt.Method, strings.Replace(rt.Pattern, "{id}", "no-such-run", 1), tokOps, "application/json", []byte(`{}`)))
		if other != strings.Replace(none, "no-such-run", "refund-large", 1) || !strings.HasPrefix(other, "404 not_found no run refund-large") {
			t.Fatalf("%s %s by the operations team: %q; of a run that does not exist %q", rt.Method, rt.Pattern, other, none)
		}
		checked++
	}
	if checked < 15 {
		t.Fatalf("only %d routes of a run checked", checked)
	}

	lists := []struct {
		path, member string
		refunds      int // what the refunds team sees; the operations team sees none
	}{
		{"/v1/runs", "runs", 1},
		{"/v1/runs?workflow=refund-agent", "runs", 1},
		{"/v1/runs?state=WAIT_APPROVAL", "runs", 1},
		{"/v1/approvals", "approvals", 1},
		{"/v1/workflows", "workflows", 1},
		{"/v1/schedules", "schedules", 1},
		{"/v1/hooks", "webhooks", 5},
	}
	for _, l := range lists {
		for _, who := range []struct {
			token string
			want  int
		}{{tokRefunds, l.refunds}, {tokOps, 0}, {tokOperator, l.refunds}} {
			a := f.get(l.path, who.token)
			var body map[string][]any
			if a.status != 200 || json.Unmarshal(a.body, &body) != nil || len(body[l.member]) != who.want {
				t.Fatalf("GET %s as %s: %d %s; want %d %s", l.path, who.token, a.status, a.body, who.want, l.member)
			}
		}
	}

	for _, c := range []struct {
		name, method, path, body, other, none string
	}{
		{"a schedule of another workflow", "POST", "/v1/schedules/m/trigger", ``, "/v1/schedules/m/trigger", "/v1/schedules/zz/trigger"},
		{"a schedule paused", "POST", "/v1/schedules/m/pause", `{}`, "/v1/schedules/m/pause", "/v1/schedules/zz/pause"},
		{"a webhook's parked deliveries", "GET", "/v1/hooks/shop/parked", ``, "/v1/hooks/shop/parked", "/v1/hooks/zz/parked"},
		{"a parked delivery dropped", "DELETE", "/v1/hooks/shop/parked/m-1", ``, "/v1/hooks/shop/parked/m-1", "/v1/hooks/zz/parked/m-1"},
	} {
		other := message(f.do(c.method, c.other, tokOps, "application/json", []byte(c.body)))
		none := message(f.do(c.method, c.none, tokOps, "application/json", []byte(c.body)))
		if other != strings.Replace(none, "zz", map[bool]string{true: "m", false: "shop"}[strings.Contains(c.other, "schedules")], 1) || !strings.HasPrefix(other, "404") {
			t.Fatalf("%s: %q; of none %q", c.name, other, none)
		}
	}
	if a := f.post("/v1/schedules/m/trigger", tokRefunds, ``); a.status != 201 {
		t.Fatalf("the refunds team triggers its schedule: %d %s", a.status, a.body)
	}

	// Starting a run of another workflow is refused as for one not loaded.
	other := message(f.post("/v1/runs", tokOps, startBody("ops-1", largeRefund)))
	none := message(f.post("/v1/runs", tokOps, strings.Replace(startBody("ops-1", largeRefund), "refund-agent", "no-such-agent", 1)))
	if other != strings.Replace(none, "no-such-agent", "refund-agent", 1) || !strings.HasPrefix(other, "422") {
		t.Fatalf("a run of another workflow: %q; of none %q", other, none)
	}
	if _, err := f.store.Run(context.Background(), "ops-1"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("the refused start wrote a run: %v", err)
	}

	// The metrics span every workflow: refused to both teams.
	for _, tok := range []string{tokRefunds, tokOps} {
		if a := f.get("/metrics", tok); a.status != 403 || !strings.Contains(string(a.body), "spans every workflow") {
			t.Fatalf("metrics: %d %s", a.status, a.body)
		}
	}
	if a := f.get("/v1/whoami", tokOps); a.status != 200 || !strings.Contains(string(a.body), `"workflows":["ops-agent"]`) {
		t.Fatalf("whoami: %d %s", a.status, a.body)
	}
	if a := f.get("/v1/whoami", tokOperator); strings.Contains(string(a.body), "workflows") {
		t.Fatalf("an unscoped whoami: %s", a.body)
	}

	// MCP holds the operations team's agent to its workflows.
	ctx := context.Background()
	call := func(cs *sdk.ClientSession, tool string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		b, _ := json.Marshal(res.Content)
		return fmt.Sprintf("%v %s %s", res.IsError, b, mustJSON(res.StructuredContent))
	}
	ops, refunds := f.mustMCP(tokOps), f.mustMCP(tokRefunds)
	run := map[string]any{"run_id": "refund-large"}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		words string
	}{
		{"list_runs", map[string]any{}, `"runs":[]`},
		{"list_workflows", map[string]any{}, `"workflows":[]`},
		{"get_run", run, `no run \"refund-large\"`},
		{"get_journey", run, `no run \"refund-large\"`},
		{"submit_input", map[string]any{"run_id": "refund-large", "input": map[string]any{"note": "x"}}, `no run \"refund-large\"`},
	} {
		if got := call(ops, c.tool, c.args); !strings.Contains(got, c.words) {
			t.Fatalf("%s by the operations team: %s", c.tool, got)
		}
	}
	if got := call(ops, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "ops-2", "input": map[string]any{"refunds": []any{}}}); !strings.HasPrefix(got, "true") || !strings.Contains(got, "no workflow refund-agent@1") {
		t.Fatalf("start_run by the operations team: %s", got)
	}
	if got := call(refunds, "get_run", map[string]any{"run_id": "refund-large"}); strings.HasPrefix(got, "true") || !strings.Contains(got, "WAIT_APPROVAL") {
		t.Fatalf("get_run by the refunds team: %s", got)
	}

	// The refunds team approves its run, which pays.
	need := p.Waiting[0]
	if a := f.post("/v1/runs/refund-large/approve", tokRefunds, fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if p := f.waitFor("refund-large", tokRefunds, "its end", ended); p.Run.Outcome != "success" {
		t.Fatalf("outcome %s", p.Run.Outcome)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An identity provider's groups scope their callers: the union of the
// workflows their groups map to, every one for a group mapped to "*",
// none for a caller whose groups map to none; without a workflows map,
// every caller sees every workflow.
func TestIdentityScopes(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	scoped := newIdentity(t, identityConfig(t, p, `,"workflows":{"payments-approvers":["refund-agent"],"sre":["ops-agent","deploy-agent"],"admins":["*"]}`))
	open := newIdentity(t, identityConfig(t, p, ""))
	for _, c := range []struct {
		name   string
		id     *Identity
		groups []string
		want   string
	}{
		{"one group", scoped, []string{"payments-approvers"}, "[refund-agent]"},
		{"two groups", scoped, []string{"sre", "payments-approvers"}, "[deploy-agent ops-agent refund-agent]"},
		{"an admin", scoped, []string{"sre", "admins"}, "every"},
		{"a group mapped to none", scoped, []string{"staff"}, "[]"},
		{"no workflows map", open, []string{"sre"}, "every"},
	} {
		g, aerr := c.id.grant(context.Background(), idToken(p, k1, "sam", time.Hour, c.groups...), time.Now())
		if aerr != nil {
			t.Fatalf("%s: %v", c.name, aerr)
		}
		got := fmt.Sprint(g.p.Workflows)
		if g.p.Workflows == nil {
			got = "every"
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if _, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"flrh","workflows":{"sre":["not an id"]}}`), t.TempDir()); err == nil || !strings.Contains(err.Error(), "/workflows/sre/0") {
		t.Fatalf("a workflow that is no id: %v", err)
	}
}

// A token file's workflows scope its token; an empty list or one that is
// no id is refused.
func TestTokenFileScopes(t *testing.T) {
	tk, err := ParseTokens([]byte(scopedTokens))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := tk.lookup(tokRefunds)
	if !ok || fmt.Sprint(g.p.Workflows) != "[refund-agent]" {
		t.Fatalf("the refunds team's token: %+v %v", g.p, ok)
	}
	if g, _ := tk.lookup(tokOperator); g.p.Workflows != nil {
		t.Fatalf("an unscoped token scoped: %+v", g.p)
	}
	for _, bad := range []string{`[]`, `["not an id"]`, `["a","a"]`} {
		_, err := ParseTokens([]byte(`{"tokens":[{"actor":"x","roles":["viewer"],"token":"` + tokRefunds + `","workflows":` + bad + `}]}`))
		if err == nil || !strings.Contains(err.Error(), "/tokens/0/workflows") {
			t.Errorf("workflows %s: %v", bad, err)
		}
	}
}

// A stream opened by a token whose scope a reload narrows past the run's
// workflow ends as a revoked one does; one whose scope still holds the
// run stays open.
func TestScopeNarrowedEndsStreams(t *testing.T) {
	f := newFixture(t, scopedTokens)
	if a := f.post("/v1/runs", tokRefunds, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("held", tokRefunds, "an approval wait", waiting)
	narrowed := f.openStream("held", tokRefunds)
	kept := f.openStream("held", tokOperator)
	next, err := ParseTokens([]byte(strings.Replace(scopedTokens, `"workflows":["refund-agent"]`, `"workflows":["ops-agent"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(next); err != nil {
		t.Fatal(err)
	}
	if last := f.streamEnd(narrowed, 30*time.Second, "the stream of a token narrowed"); last.event != "revoked" {
		t.Fatalf("the narrowed token's stream ended with %+v", last)
	}
	if a := f.get("/v1/runs/held", tokRefunds); a.status != 404 {
		t.Fatalf("the narrowed token reads the run: %d", a.status)
	}
	select {
	case msgs := <-kept:
		t.Fatalf("an unscoped token's stream ended: %+v", msgs)
	case <-time.After(300 * time.Millisecond):
	}
}

// An MCP session is bound to the principal that opened it: once a reload
// narrows its token's scope, the session is refused (as an MCP session
// the server does not know, which its client opens anew), and a new one
// holds the agent to the scope the token has now.
func TestMCPSessionBoundToItsPrincipal(t *testing.T) {
	f := newFixture(t, scopedTokens)
	if a := f.post("/v1/runs", tokRefunds, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	ctx := context.Background()
	runs := func(cs *sdk.ClientSession) (string, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_runs", Arguments: map[string]any{}})
		if err != nil {
			return "", err
		}
		return mustJSON(res.StructuredContent), nil
	}
	old := f.mustMCP(tokRefunds)
	if got, err := runs(old); err != nil || !strings.Contains(got, `"run_id":"held"`) {
		t.Fatalf("before the reload: %s, %v", got, err)
	}
	next, err := ParseTokens([]byte(strings.Replace(scopedTokens, `"workflows":["refund-agent"]`, `"workflows":["ops-agent"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(next); err != nil {
		t.Fatal(err)
	}
	if got, err := runs(old); err == nil {
		t.Fatalf("the session opened under the wider scope still lists: %s", got)
	}
	if got, err := runs(f.mustMCP(tokRefunds)); err != nil || got != `{"runs":[]}` {
		t.Fatalf("a new session: %s, %v", got, err)
	}
}
