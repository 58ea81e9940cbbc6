package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpConnect opens an MCP session at the fixture's server as token's
// bearer. A request the server refuses is not tried again: the caller
// sees the refusal.
func (f *fixture) mcpConnect(token string) (*sdk.ClientSession, error) {
	tr := &sdk.StreamableClientTransport{Endpoint: f.ts.URL + "/v1/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	return sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(context.Background(), tr, nil)
}

// mustMCP is mcpConnect, the session closed when the test ends.
func (f *fixture) mustMCP(token string) *sdk.ClientSession {
	f.t.Helper()
	cs, err := f.mcpConnect(token)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

// The MCP endpoint is served behind the API's authentication: an agent's
// token reaches the tools, and what it submits is recorded under the
// token's actor; tokens that may not submit inputs are refused.
func TestMCPBehindAuthentication(t *testing.T) {
	f := newFixture(t, tokenFileText)
	ctx := context.Background()
	cs, err := f.mcpConnect(tokAgent)
	if err != nil {
		t.Fatalf("agent cannot reach MCP: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools %v, %v", tools, err)
	}
	for _, tl := range tools.Tools {
		if strings.Contains(tl.Name, "approve") || strings.Contains(tl.Name, "reconcile") {
			t.Errorf("tool %s suggests authority", tl.Name)
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "start_run", Arguments: map[string]any{"workflow": "refund-agent", "run_id": "mcp-1",
		"input": map[string]any{"refunds": []any{map[string]any{"id": "m1", "amount": 500, "payee": "zoe", "reason": "r"}}}}})
	if err != nil || res.IsError {
		t.Fatalf("start_run: %v %+v", err, res)
	}
	f.waitFor("mcp-1", tokViewer, "WAIT_APPROVAL", func(p RunPage) bool { return p.Run.State == "WAIT_APPROVAL" })
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "submit_input", Arguments: map[string]any{"run_id": "mcp-1",
		"input": map[string]any{"note": "please hurry"}}})
	if err != nil || res.IsError {
		t.Fatalf("submit_input: %v %+v", err, res)
	}
	in, err := f.store.Inbox(ctx, "mcp-1", false)
	if err != nil || len(in) < 2 || in[0].Actor != "bot" || in[len(in)-1].Actor != "bot" || in[len(in)-1].ActorRole != "agent" {
		t.Fatalf("inbox %+v %v: the input is not recorded under the token's actor with the agent role", in, err)
	}
	if st := f.page("mcp-1", tokViewer); st.Run.State != "WAIT_APPROVAL" {
		t.Fatalf("an agent's input moved a run waiting for approval to %s", st.Run.State)
	}
	for _, tok := range []string{tokViewer, tokApprover, tokReconciler, tokUnknown} {
		if cs, err := f.mcpConnect(tok); err == nil {
			cs.Close()
			t.Errorf("token %s reached MCP", tok[:8])
		}
	}
}
