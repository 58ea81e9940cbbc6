// Package telemetry sets up what flrh reports about itself: the
// OpenTelemetry tracer provider (off by default; stdout or OTLP when asked)
// and the Prometheus collectors the runner and the server share.
//
// It is part of the shell: it reads the environment (the standard
// OTEL_EXPORTER_OTLP_* variables) and exports over the network. The pure
// packages never see it; the runner times the pure tick from outside.
package telemetry
