package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/tripwire"
)

// discard is a span exporter that drops what it is given: the benchmark
// measures making and ending spans, not shipping them.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkGovernedStepTracing is BenchmarkGovernedStep with the tracer
// off (nil), the OpenTelemetry no-op provider, and the SDK recording every
// span into a batch processor whose exporter drops them. Logs are
// discarded and metrics counted in every case.
func BenchmarkGovernedStepTracing(b *testing.B) {
	for _, c := range []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"off", func() trace.TracerProvider { return nil }},
		{"noop", func() trace.TracerProvider { return noop.NewTracerProvider() }},
		{"sdk", func() trace.TracerProvider { return sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{})) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp := c.tp()
			if s, ok := tp.(*sdktrace.TracerProvider); ok {
				defer s.Shutdown(context.Background())
			}
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			dest := newDestination()
			reg := &effect.Registry{}
			reg.Register("refund.pay", "fake/1", dest)
			r, err := New(Config{Store: st, Workflows: []Workflow{counter{refunds{limit: 1 << 40}}}, Adapters: reg, Tracer: tp, Contract: unboundedContract(b),
				Reconcile: effect.Plan{Backoff: []time.Duration{0}}, MaxTransitions: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Start(ctx, "bench", "counter", "1", []byte(`{"id":"r0","amount":1,"payee":"p"}`)); err != nil {
				b.Fatal(err)
			}
			if _, err := r.Advance(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
			inputs := make([][]byte, b.N)
			for i := range inputs {
				inputs[i] = []byte(fmt.Sprintf(`{"amount":%d,"id":"r%d","payee":"p"}`, i+1, i+1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				benchStep(b, r, inputs[i], Usage{})
			}
			b.StopTimer()
			if dest.count() != b.N+1 {
				b.Fatalf("%d mutations for %d steps", dest.count(), b.N+1)
			}
		})
	}
}

// capture keeps a copy of every tick a runner commits: the runner may
// write over a tick's slices once Commit returns (store.Store.Commit).
type capture struct {
	store.Store
	ticks []store.Tick
}

func (c *capture) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	c.ticks = append(c.ticks, store.CloneTick(t))
	return c.Store.Commit(ctx, l, t)
}

// BenchmarkObserveStep measures the observation of one governed step
// alone, without the store or the adapter: the two ticks the step commits
// replayed through the hooks the runner calls (decide, execute and commit
// spans, the tick span, transition and tick logs below the handler's
// level, metrics), with tracing off and on (SDK, batch processor, dropping
// exporter). This is the overhead the side-by-side step benchmark cannot
// resolve under the store's fsync.
func BenchmarkObserveStep(b *testing.B) {
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cs := &capture{Store: st}
	dest := newDestination()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "fake/1", dest)
	wf := counter{refunds{limit: 1 << 40}}
	r0, err := New(Config{Store: cs, Workflows: []Workflow{wf}, Adapters: reg, Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := r0.Start(ctx, "bench", "counter", "1", []byte(`{"id":"r0","amount":1,"payee":"p"}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := r0.Advance(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	cs.ticks = nil
	body := []byte(`{"amount":2,"id":"r1","payee":"p"}`)
	st.Submit(ctx, store.Inbound{ID: "in:1", RunID: "bench", Kind: KindInput, ActorRole: "agent", Actor: "bench",
		Capability: "run.input", Body: body, Digest: store.BodyDigest(body)})
	if _, err := r0.Advance(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	step := cs.ticks
	if len(step) != 2 {
		b.Fatalf("a governed step committed %d ticks", len(step))
	}
	run, _ := st.Run(ctx, "bench")
	cp, _ := st.Checkpoint(ctx, "bench")
	checkpoint, err := decodeCheckpoint(cp, wf)
	if err != nil {
		b.Fatal(err)
	}
	// The wires' view of each tick's events, as fireAs and accept build it.
	wires := make([][]tripwire.Event, len(step))
	for i, tk := range step {
		for _, ev := range tk.Events {
			w := tripwire.Event{Kind: ev.Kind, Digest: ev.Digest}
			if ev.Kind == EventControl {
				var rec control.Record
				if err := json.Unmarshal(ev.Body, &rec); err != nil {
					b.Fatal(err)
				}
				w.Record = &rec
			}
			wires[i] = append(wires[i], w)
		}
	}
	state := []byte(`{"paid":1}`)
	in := Accepted{Seq: 2, Kind: KindInput, Body: body, Digest: store.BodyDigest(body)}
	intent := effect.Intent{Payload: body}
	intent.Effect.EffectType = "refund.pay"
	// bare is the same work without the hooks: the pure step and the
	// adapter call. The hooks' cost is the difference.
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := wf.Decide(state, in); err != nil {
				b.Fatal(err)
			}
			if _, err := (noopAdapter{}).Execute(ctx, intent); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", nil}, {"sdk", sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := New(Config{Store: st, Workflows: []Workflow{wf}, Adapters: reg, Tracer: c.tp})
			if err != nil {
				b.Fatal(err)
			}
			oe := &openEffect{IntentID: "intent:r1"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := &tick{run: run, wf: wf, cp: checkpoint}
				r.beginTick(t)
				if _, err := r.decide(t, state, in); err != nil {
					b.Fatal(err)
				}
				for k := range step {
					t.wire = wires[k]
					_, sp := r.phase(ctx, t, "flrh.commit")
					endSpan(sp, nil)
					r.committed(ctx, t, &step[k], time.Millisecond)
					if k == 0 {
						if _, _, err := r.dispatch(ctx, t, oe, noopAdapter{}, intent, 1); err != nil {
							b.Fatal(err)
						}
					}
				}
				r.endPass(t, nil)
			}
		})
		if s, ok := c.tp.(*sdktrace.TracerProvider); ok {
			s.Shutdown(context.Background())
		}
	}
}

// noopAdapter answers every attempt with success at once.
type noopAdapter struct{}

func (noopAdapter) Execute(context.Context, effect.Intent) (effect.Receipt, error) {
	return effect.Receipt{Outcome: effect.Succeeded, Code: "OK"}, nil
}

func (noopAdapter) Lookup(context.Context, string, string) (effect.LookupResult, error) {
	return effect.LookupResult{Status: effect.ConfirmedSuccess}, nil
}
