package mcp

import (
	"context"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchRun leaves one paid refund in the fixture's store.
func benchRun(b *testing.B) *fixture {
	f := newFixture(b, fixtureOpts{})
	ctx := context.Background()
	if err := f.r.Start(ctx, "bench", "refund-agent", "1", []byte(smallRefund)); err != nil {
		b.Fatal(err)
	}
	if err := f.r.RunToIdle(ctx); err != nil {
		b.Fatal(err)
	}
	return f
}

func benchSession(b *testing.B, d Deps) *sdk.ClientSession {
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := NewServer(d).Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func benchCall(b *testing.B, cs *sdk.ClientSession, name string, args any) {
	ctx := context.Background()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
}

func BenchmarkNewServer(b *testing.B) {
	f := benchRun(b)
	for b.Loop() {
		NewServer(f.deps)
	}
}

func BenchmarkListTools(b *testing.B) {
	cs := benchSession(b, benchRun(b).deps)
	for b.Loop() {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetRun(b *testing.B) {
	benchCall(b, benchSession(b, benchRun(b).deps), "get_run", map[string]any{"run_id": "bench"})
}

func BenchmarkGetJourney(b *testing.B) {
	benchCall(b, benchSession(b, benchRun(b).deps), "get_journey", map[string]any{"run_id": "bench", "all_trace": true})
}

func BenchmarkGetRunHTTP(b *testing.B) {
	f := benchRun(b)
	srv := httptest.NewServer(Handler(f.deps))
	b.Cleanup(srv.Close)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	benchCall(b, cs, "get_run", map[string]any{"run_id": "bench"})
}
