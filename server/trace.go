package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/telemetry"
)

// Every request gets a server span when a tracer is configured. It
// continues the W3C trace context (traceparent) the caller sent, and the
// runner makes the tick that does the work a request handed it (a start,
// an input, an approval, a reconciliation) a child of this span: one trace
// from the HTTP request to the commit it caused.

var noSpan = trace.SpanFromContext(context.Background())

// newTracer returns the server's tracer, nil when tracing is off.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if !telemetry.Enabled(tp) {
		return nil
	}
	return tp.Tracer(telemetry.InstrumentationName + "/server")
}

// startSpan starts the request's span, named after its route
// ("POST /v1/runs/{id}/approve"), never after its path, so span names stay
// few.
func (s *Server) startSpan(ctx context.Context, rt route, r *http.Request, rid string) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, noSpan
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	method := rt.Method
	if method == "*" {
		method = r.Method
	}
	return s.tracer.Start(ctx, method+" "+rt.Pattern, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(telemetry.KeyHTTPMethod.String(r.Method), telemetry.KeyHTTPRoute.String(rt.Pattern),
			telemetry.KeyRequestID.String(rid)))
}

// endSpan records how the request ended: its status, the run it concerned,
// the error type of a refusal; a server error marks the span failed.
func endSpan(sp trace.Span, r *http.Request, status int, failure *Error) {
	if !sp.IsRecording() {
		return
	}
	sp.SetAttributes(telemetry.KeyHTTPStatus.Int(status))
	if id := r.PathValue("id"); id != "" {
		sp.SetAttributes(telemetry.KeyRunID.String(id))
	}
	if failure != nil {
		sp.SetAttributes(attribute.String("flrh.error.type", failure.Type))
		if status >= 500 {
			sp.SetStatus(codes.Error, failure.Message)
		}
	}
	sp.End()
}
