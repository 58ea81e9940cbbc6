package telemetry

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Exporters a command line may name with --otel.
const (
	ExportOff    = "off"    // no spans: a no-op tracer (the default)
	ExportStdout = "stdout" // spans as JSON to a writer
	ExportOTLP   = "otlp"   // spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
)

// Exporters lists the accepted --otel values, for help texts.
var Exporters = []string{ExportOff, ExportStdout, ExportOTLP}

// InstrumentationName names flrh's tracers.
const InstrumentationName = "flrh.dev/flrh"

// UnknownExporterError reports an --otel value that names no exporter.
type UnknownExporterError struct{ Name string }

func (e *UnknownExporterError) Error() string {
	return fmt.Sprintf("telemetry: unknown span exporter %q (want off, stdout or otlp)", e.Name)
}

// Tracing is a tracer provider and the function that flushes and stops it.
type Tracing struct {
	Provider trace.TracerProvider
	// Shutdown exports what is buffered and stops the exporter. It is safe
	// to call on the no-op provider.
	Shutdown func(context.Context) error
}

// Enabled reports whether spans go anywhere.
func (t Tracing) Enabled() bool { return Enabled(t.Provider) }

// Enabled reports whether a provider records spans at all: nil and the
// OpenTelemetry no-op provider do not.
func Enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// NewTracing builds the tracer provider an --otel value names. stdout is
// where the stdout exporter writes; service names the process in every
// span's resource (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override
// it). For otlp the exporter reads the standard OTEL_EXPORTER_OTLP_*
// variables; nothing is sent until the first span ends.
func NewTracing(ctx context.Context, exporter string, stdout io.Writer, service string) (Tracing, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch exporter {
	case "", ExportOff:
		return Tracing{Provider: noop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}, nil
	case ExportStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stdout))
	case ExportOTLP:
		exp, err = otlptracehttp.New(ctx)
	default:
		return Tracing{}, &UnknownExporterError{Name: exporter}
	}
	if err != nil {
		return Tracing{}, fmt.Errorf("telemetry: %s exporter: %w", exporter, err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return Tracing{}, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return Tracing{Provider: tp, Shutdown: tp.Shutdown}, nil
}

// Attribute keys on flrh's spans. The HTTP ones follow the OpenTelemetry
// semantic conventions.
const (
	KeyRunID           = attribute.Key("flrh.run_id")
	KeyWorkflow        = attribute.Key("flrh.workflow")
	KeyWorkflowVersion = attribute.Key("flrh.workflow.version")
	KeyTick            = attribute.Key("flrh.tick")
	KeyTickFirstSeq    = attribute.Key("flrh.tick.first_seq")
	KeyTickEvents      = attribute.Key("flrh.tick.events")
	KeyOutcome         = attribute.Key("flrh.outcome")
	KeyRunOutcome      = attribute.Key("flrh.run.outcome")
	KeyStateFrom       = attribute.Key("flrh.state.from")
	KeyStateTo         = attribute.Key("flrh.state.to")
	KeyLeaseGeneration = attribute.Key("flrh.lease.generation")
	KeyPhaseTimed      = attribute.Key("flrh.phase.timed")
	KeyRequestID       = attribute.Key("flrh.request_id")
	// KeyLabelPrefix begins the attribute of each of a run's labels on
	// its ticks' spans (flrh.label.order), so a tracing backend finds
	// the ticks of order A-1042 as the API finds its run.
	KeyLabelPrefix = "flrh.label."

	KeyHTTPMethod = attribute.Key("http.request.method")
	KeyHTTPRoute  = attribute.Key("http.route")
	KeyHTTPStatus = attribute.Key("http.response.status_code")
)
