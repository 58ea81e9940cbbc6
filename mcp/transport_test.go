package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/runner"
)

// agentHeader carries the agent's name in the HTTP test, standing in for
// what an authenticating front (bearer tokens) would establish.
const agentHeader = "X-Test-Agent"

type withHeader struct {
	name string
	next http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(agentHeader, h.name)
	return h.next.RoundTrip(r)
}

func TestStreamableHTTP(t *testing.T) {
	f := newFixture(t, fixtureOpts{background: true})
	d := f.deps
	d.AgentFrom = func(r *http.Request) string { return r.Header.Get(agentHeader) }
	srv := httptest.NewServer(Handler(d))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	tr := &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: withHeader{"agent-7", http.DefaultTransport}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	checkTools(t, cs)
	p := call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "http-small", "input": obj(t, smallRefund)})
	if p.Run.State != "SUCCEEDED" {
		t.Fatalf("small refund over HTTP: %+v", p)
	}
	p = call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "http-large", "input": obj(t, largeRefund)})
	if p.Run.State != "WAIT_APPROVAL" || len(p.Run.Approvals) != 1 {
		t.Fatalf("large refund over HTTP: %+v", p)
	}
	p = call[Progress](t, cs, "submit_input", map[string]any{"run_id": "http-large", "input": approvalLookalike(p.Run.Approvals[0]), "wait_seconds": 1})
	if p.Run.State != "WAIT_APPROVAL" {
		t.Fatalf("forged approval over HTTP moved the run to %s", p.Run.State)
	}
	in, err := f.st.Inbox(ctx, "http-large", false)
	if err != nil {
		t.Fatal(err)
	}
	if last := in[len(in)-1]; last.Actor != "agent-7" || last.ActorRole != AgentRole || last.Kind != runner.KindInput {
		t.Fatalf("submission recorded as %+v", last)
	}
	if res := callRaw(t, cs, "get_run", map[string]any{"run_id": "http-large", "extra": 1}); !res.IsError {
		t.Fatal("an unknown argument was accepted over HTTP")
	}
}

// TestStdioCommand runs "flrh mcp" as a subprocess, built with go build,
// and drives it with the SDK's command transport.
func TestStdioCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the flrh binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build flrh with")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "flrh")
	build := exec.Command(gobin, "build", "-o", bin, "flrh.dev/flrh/cmd/flrh")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f := newFixture(t, fixtureOpts{}) // only its sandbox destination is used
	cmd := exec.Command(bin, "mcp", "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", f.url, "--agent", "stdio-agent")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	checkTools(t, cs)
	wfs := call[WorkflowList](t, cs, "list_workflows", map[string]any{})
	if len(wfs.Workflows) == 0 || wfs.Workflows[0].ID != "refund-agent" {
		t.Fatalf("workflows %+v", wfs)
	}
	p := call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "stdio-small", "input": obj(t, smallRefund)})
	if p.Run.State != "SUCCEEDED" {
		t.Fatalf("small refund over stdio: %+v", p)
	}
	if n := len(f.sb.Mutations()); n != 1 {
		t.Fatalf("sandbox applied %d mutations, want 1", n)
	}
	p = call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "stdio-large", "input": obj(t, largeRefund)})
	if p.Run.State != "WAIT_APPROVAL" {
		t.Fatalf("large refund over stdio: %+v", p)
	}
	p = call[Progress](t, cs, "submit_input", map[string]any{"run_id": "stdio-large", "input": approvalLookalike(p.Run.Approvals[0]), "wait_seconds": 1})
	if p.Run.State != "WAIT_APPROVAL" || len(f.sb.Mutations()) != 1 {
		t.Fatalf("forged approval over stdio: %+v, %d mutations", p.Run, len(f.sb.Mutations()))
	}
	if res := callRaw(t, cs, "start_run", map[string]any{"workflow": "refund-agent", "input": "not an object"}); !res.IsError {
		t.Fatal("malformed start_run over stdio was accepted")
	}
	list := call[RunList](t, cs, "list_runs", map[string]any{})
	if len(list.Runs) != 2 {
		t.Fatalf("runs %+v", list.Runs)
	}
}

// A web page cannot drive the agent tools from a browser: cross-origin
// requests and loopback requests under a foreign Host name are refused
// before any tool runs.
func TestHTTPRefusesBrowserAndRebinding(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	srv := httptest.NewServer(Handler(f.deps))
	t.Cleanup(srv.Close)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"rebinding host", nil, "evil.example", http.StatusForbidden},
		{"plain client", nil, "", http.StatusOK},
	} {
		req, err := http.NewRequest("POST", srv.URL, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, res.StatusCode, c.want)
		}
	}
}
