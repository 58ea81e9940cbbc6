package mcp

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// fixture is the refund agent on a temporary store, paying through a real
// sandbox destination on loopback, wired as the demo wires it.
type fixture struct {
	st   store.Store
	r    *runner.Runner
	sb   *sandbox.Sandbox
	url  string // the sandbox's effect endpoint
	deps Deps
}

type fixtureOpts struct {
	background bool // advance runs with Runner.Run in the background
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { sb.Serve(sctx, ln, time.Second); close(served) }()
	t.Cleanup(func() { stop(); <-served })
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	ad, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", demo.HTTPAdapter(ad)); err != nil {
		t.Fatal(err)
	}
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "mcp-test",
		Poll: 20 * time.Millisecond, Reconcile: effect.Plan{Backoff: []time.Duration{0, 20 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if o.background {
		rctx, rstop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { r.Run(rctx); close(done) }()
		t.Cleanup(func() { rstop(); <-done })
	}
	return &fixture{st: st, r: r, sb: sb, url: url,
		deps: Deps{Store: st, Runner: r, Catalog: Workflows{wf}, Poll: 10 * time.Millisecond}}
}

// connect serves NewServer(d) over an in-memory transport and returns a
// client session of the SDK's own client.
func connect(t *testing.T, d Deps, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, stt := sdk.NewInMemoryTransports()
	ss, err := NewServer(d).Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls a tool and decodes its structured result into T. It fails
// the test on a protocol error or a tool error.
func call[T any](t *testing.T, cs *sdk.ClientSession, name string, args any) T {
	t.Helper()
	res := callRaw(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: result %s: %v", name, b, err)
	}
	return out
}

func callRaw(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

const (
	smallRefund = `{"refunds":[{"id":"r-1","amount":40,"payee":"alice","reason":"damaged item"}]}`
	largeRefund = `{"refunds":[{"id":"r-2","amount":900,"payee":"bob","reason":"cancelled order"}]}`
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
