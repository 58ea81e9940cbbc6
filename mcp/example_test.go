package mcp_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/mcp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
)

// An agent connects, sees what it may do, and starts a run. The refund
// is above the policy's automatic limit, so the run waits for a person.
func ExampleNewServer() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "flrh-mcp-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "flrh.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	wf := demo.Refunds{AutoLimit: 100, Destination: "payments-sandbox"}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}})
	if err != nil {
		log.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }() // advance runs in the background
	defer func() { stop(); <-done }()

	server := mcp.NewServer(mcp.Deps{Store: st, Runner: r, Catalog: mcp.Workflows{wf}, Agent: "example-agent"})
	clientEnd, serverEnd := sdk.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
		log.Fatal(err)
	}
	session, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Printf("%-15s read-only=%-5v destructive=%v\n", t.Name, t.Annotations.ReadOnlyHint, *t.Annotations.DestructiveHint)
	}
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "start_run", Arguments: map[string]any{
		"workflow": "refund-agent", "run_id": "example-1",
		"input": map[string]any{"refunds": []any{map[string]any{"id": "r-1", "amount": 900, "payee": "bob", "reason": "cancelled order"}}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	run := res.StructuredContent.(map[string]any)["run"].(map[string]any)
	fmt.Println(run["state"], "—", run["waits_for"].([]any)[0])
	// Output:
	// get_journey     read-only=true  destructive=false
	// get_run         read-only=true  destructive=false
	// list_runs       read-only=true  destructive=false
	// list_workflows  read-only=true  destructive=false
	// start_run       read-only=false destructive=false
	// submit_input    read-only=false destructive=false
	// WAIT_APPROVAL — a person's approval or denial of request approval:r-1 (Pay refund r-1: 900 to bob (cancelled order) via payments-sandbox); an agent cannot give it
}
