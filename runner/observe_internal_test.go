package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"flrh.dev/flrh/effect"
)

// leaky fails every call with an error that repeats what it was given (as
// a transport error repeats a URL with a credential in it).
type leaky struct{ secret string }

func (l leaky) Execute(context.Context, effect.Intent) (effect.Receipt, error) {
	return effect.Receipt{}, fmt.Errorf(`Post "https://payments.example/%s/refunds": connection refused`, l.secret)
}

func (leaky) Lookup(context.Context, string, string) (effect.LookupResult, error) {
	return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
}

// An adapter's error text never reaches a span or the log: the execute span
// says the call failed and of what type, and the run waits for a person.
func TestAdapterErrorTextStaysOutOfSpansAndLogs(t *testing.T) {
	const secret = "cred-5e1f9a7b3c"
	h := newHarness(t)
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", leaky{secret}); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var logs bytes.Buffer
	r, err := New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Tracer: tp,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	h.start("leaky", `{"refunds":[{"id":"r1","amount":10,"payee":"p"}]}`)
	if s := h.run("leaky").State; s != "HUMAN_RECONCILIATION" {
		t.Fatalf("run in %s", s)
	}
	failed := 0
	for _, s := range rec.Ended() {
		texts := []string{s.Status().Description}
		for _, a := range s.Attributes() {
			texts = append(texts, a.Value.Emit())
		}
		for _, ev := range s.Events() {
			for _, a := range ev.Attributes {
				texts = append(texts, a.Value.Emit())
			}
		}
		for _, x := range texts {
			if strings.Contains(x, secret) {
				t.Fatalf("span %s carries the adapter's error text: %q", s.Name(), x)
			}
		}
		if s.Name() == "flrh.execute" && s.Status().Description == "adapter call failed (*errors.errorString)" {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no execute span records the failed call")
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatal("the log carries the adapter's error text")
	}
	if !strings.Contains(logs.String(), `"msg":"effect attempt ended"`) || !strings.Contains(logs.String(), `"outcome":"error"`) {
		t.Fatalf("the failed attempt is not logged: %s", logs.String())
	}
}
