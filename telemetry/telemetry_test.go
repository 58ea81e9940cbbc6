package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"

	"flrh.dev/flrh/store"
)

func TestOffIsTheNoopProvider(t *testing.T) {
	for _, name := range []string{"", ExportOff} {
		tr, err := NewTracing(context.Background(), name, io.Discard, "flrh")
		if err != nil {
			t.Fatal(err)
		}
		if tr.Enabled() {
			t.Fatalf("%q: tracing enabled", name)
		}
		_, sp := tr.Provider.Tracer("x").Start(context.Background(), "s")
		if sp.IsRecording() || sp.SpanContext().IsValid() {
			t.Fatalf("%q: a span records", name)
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if Enabled(nil) || Enabled(noop.NewTracerProvider()) {
		t.Fatal("nil or no-op provider reported enabled")
	}
}

func TestUnknownExporterIsATypedError(t *testing.T) {
	_, err := NewTracing(context.Background(), "jaeger", io.Discard, "flrh")
	var ue *UnknownExporterError
	if !errors.As(err, &ue) || ue.Name != "jaeger" || !strings.Contains(err.Error(), "off, stdout or otlp") {
		t.Fatalf("err %v", err)
	}
}

// The stdout exporter writes each span as JSON with the service name.
func TestStdoutWritesSpans(t *testing.T) {
	var buf bytes.Buffer
	tr, err := NewTracing(context.Background(), ExportStdout, &buf, "flrh-test")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("stdout tracing is not enabled")
	}
	_, sp := tr.Provider.Tracer(InstrumentationName).Start(context.Background(), "flrh.tick")
	sp.SetAttributes(KeyRunID.String("run-1"))
	sp.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`"Name":"flrh.tick"`, `"flrh.run_id"`, `"run-1"`, `"flrh-test"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("stdout spans lack %s: %s", want, out)
		}
	}
}

// The OTLP exporter sends to OTEL_EXPORTER_OTLP_ENDPOINT over HTTP.
func TestOTLPSendsToTheConfiguredEndpoint(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		bodies += len(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tr, err := NewTracing(context.Background(), ExportOTLP, io.Discard, "flrh")
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tr.Provider.Tracer(InstrumentationName).Start(context.Background(), "flrh.tick")
	sp.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "POST /v1/traces application/x-protobuf" || bodies == 0 {
		t.Fatalf("requests %v (%d bytes)", paths, bodies)
	}
}

func TestMetricsRegisterOnceAndRefuseClashes(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(reg); err != nil {
		t.Fatalf("registering the same metrics again: %v", err)
	}
	if err := NewMetrics().Register(reg); err == nil {
		t.Fatal("a second set of flrh metrics registered over the first")
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, mm := range mf.GetMetric() {
			for _, l := range mm.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return mm.GetCounter().GetValue()
		}
	}
	return -1
}

// Store errors count by code; NOT_FOUND (an answer) and errors without a
// store code (a cancelled context) are not store failures.
func TestStoreErrorsCountOnlyStoreFailures(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	m.Register(reg)
	busy := store.Errorf(store.CodeUnavailable, "commit", "r", nil, "busy")
	for _, err := range []error{busy, fmt.Errorf("advance: %w", busy), store.Errorf(store.CodeNotFound, "run", "r", nil, "no"),
		context.Canceled, nil} {
		m.StoreError(SourceRunner, err)
	}
	m.StoreErrors(SourceAPI).WithLabelValues(string(store.CodeFenced)).Inc()
	for _, c := range []struct {
		source, code string
		want         float64
	}{{SourceRunner, "UNAVAILABLE", 2}, {SourceRunner, "FENCED", 0}, {SourceAPI, "FENCED", 1}, {SourceScrape, "CORRUPT", 0}} {
		if got := counterValue(t, reg, "flrh_store_errors_total", map[string]string{"source": c.source, "code": c.code}); got != c.want {
			t.Fatalf("%s/%s = %v, want %v", c.source, c.code, got, c.want)
		}
	}
	if got := counterValue(t, reg, "flrh_store_errors_total", map[string]string{"source": SourceRunner, "code": "NOT_FOUND"}); got != -1 {
		t.Fatalf("NOT_FOUND has a series: %v", got)
	}
}

// The cached counters count exactly what the vectors would, from many
// goroutines at once, for one- and two-label families.
func TestCachedCountersCountEveryCall(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	m.Register(reg)
	var wg sync.WaitGroup
	events := []string{"START", "EVENT_ACCEPTED", "EPOCH_STABLE"}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				m.Transition(events[(g+i)%len(events)])
				m.Tick("wf", []string{"committed", "failed"}[i%2])
				m.Attempt("pay", "succeeded")
			}
		}(g)
	}
	wg.Wait()
	for _, ev := range events {
		if got := counterValue(t, reg, "flrh_transitions_total", map[string]string{"event": ev}); got != 800 {
			t.Fatalf("%s: %v", ev, got)
		}
	}
	for _, oc := range []string{"committed", "failed"} {
		if got := counterValue(t, reg, "flrh_ticks_total", map[string]string{"workflow": "wf", "outcome": oc}); got != 1200 {
			t.Fatalf("ticks %s: %v", oc, got)
		}
	}
	if got := counterValue(t, reg, "flrh_effect_attempts_total", map[string]string{"effect_type": "pay", "outcome": "succeeded"}); got != 2400 {
		t.Fatalf("attempts %v", got)
	}
}
