package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/telemetry"
)

func withTracer(tp trace.TracerProvider) fixtureOption {
	return func(rc *runner.Config, sc *Config) {
		rc.Tracer = tp
		sc.Tracer = tp
	}
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

// postTraced posts with a W3C traceparent naming the caller's span.
func (f *fixture) postTraced(path, token, body string, tid trace.TraceID, sid trace.SpanID) answer {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", fmt.Sprintf("00-%s-%s-01", tid, sid))
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	return answer{status: resp.StatusCode, header: resp.Header}
}

// Requests get server spans that continue the caller's trace context, and
// the runner's ticks that do what a request asked (start the run, act on
// an approval) are children of that request's span: one trace from the
// caller through the HTTP request to the commit.
func TestRequestSpansParentTheirTicks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, tokenFileText, withTracer(tp))

	startTrace, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	callerSpan, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	if a := f.postTraced("/v1/runs", tokOperator, startBody("traced", largeRefund), startTrace, callerSpan); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	p := f.waitFor("traced", tokViewer, "an approval wait", waiting)
	approveTrace, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	body := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, p.Waiting[0].RequestID, p.Waiting[0].RequestDigest)
	if a := f.postTraced("/v1/runs/traced/approve", tokApprover, body, approveTrace, callerSpan); a.status != 202 {
		t.Fatalf("approve: %d", a.status)
	}
	f.waitFor("traced", tokViewer, "its end", ended)

	// The last tick's span ends just after its commit; give it a moment.
	var spans []sdktrace.ReadOnlySpan
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = rec.Ended()
		ticks := 0
		for _, s := range spans {
			if s.Name() == "flrh.tick" && spanAttr(s, telemetry.KeyRunOutcome).AsString() != "" {
				ticks++
			}
		}
		if ticks > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d %q spans", len(byName[name]), name)
		}
		return byName[name][0]
	}
	start := one("POST /v1/runs")
	approve := one("POST /v1/runs/{id}/approve")
	for _, c := range []struct {
		s      sdktrace.ReadOnlySpan
		trace  trace.TraceID
		status int64
		route  string
	}{{start, startTrace, 201, "/v1/runs"}, {approve, approveTrace, 202, "/v1/runs/{id}/approve"}} {
		if c.s.SpanContext().TraceID() != c.trace || c.s.Parent().SpanID() != callerSpan || !c.s.Parent().IsRemote() {
			t.Fatalf("%s does not continue the caller's trace: %v parent %v", c.s.Name(), c.s.SpanContext().TraceID(), c.s.Parent())
		}
		if c.s.SpanKind() != trace.SpanKindServer || spanAttr(c.s, telemetry.KeyHTTPStatus).AsInt64() != c.status ||
			spanAttr(c.s, telemetry.KeyHTTPRoute).AsString() != c.route || spanAttr(c.s, telemetry.KeyRequestID).AsString() == "" {
			t.Fatalf("%s: kind %v attributes %v", c.s.Name(), c.s.SpanKind(), c.s.Attributes())
		}
	}
	if spanAttr(approve, telemetry.KeyRunID).AsString() != "traced" {
		t.Fatalf("approve span attributes %v", approve.Attributes())
	}
	// Every tick of the run descends from the request that handed it work:
	// the ticks up to the approval wait from the start, the rest from the
	// approval.
	// A loaded machine may split the work before the approval wait into
	// more than one tick; the first of them starts from INIT.
	var fromStart, fromApproval int
	var first sdktrace.ReadOnlySpan
	for _, s := range byName["flrh.tick"] {
		if spanAttr(s, telemetry.KeyRunID).AsString() != "traced" {
			continue
		}
		switch s.Parent().SpanID() {
		case start.SpanContext().SpanID():
			fromStart++
			if s.SpanContext().TraceID() != startTrace {
				t.Fatalf("tick after the start in trace %v: %v", s.SpanContext().TraceID(), s.Attributes())
			}
			if first == nil || s.StartTime().Before(first.StartTime()) {
				first = s
			}
		case approve.SpanContext().SpanID():
			fromApproval++
			if s.SpanContext().TraceID() != approveTrace {
				t.Fatalf("tick after the approval in trace %v", s.SpanContext().TraceID())
			}
		default:
			t.Fatalf("tick %v has parent %v, neither request", s.Attributes(), s.Parent())
		}
	}
	if fromStart < 1 || fromApproval < 2 {
		t.Fatalf("%d ticks from the start, %d from the approval", fromStart, fromApproval)
	}
	if from := spanAttr(first, telemetry.KeyStateFrom).AsString(); from != "INIT" {
		t.Fatalf("the run's first tick starts from %q, not INIT: %v", from, first.Attributes())
	}
	// A request without trace context starts its own trace.
	f.get("/v1/runs/traced", tokViewer)
	for _, s := range rec.Ended() {
		if s.Name() == "GET /v1/runs/{id}" && s.Parent().IsValid() {
			t.Fatalf("GET span has parent %v", s.Parent())
		}
	}
}
