package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// serveTracing traces what "fenced serve" enqueues (fencedotel's producer
// spans, in the trace a job's metadata carries) and exports the spans
// through OTLP when the standard OpenTelemetry environment asks for it:
// OTEL_TRACES_EXPORTER=otlp, or an OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT with OTEL_TRACES_EXPORTER unset;
// never with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. The
// protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL, http/protobuf (the default) or grpc; the
// exporter, the batching and the sampler read the rest of their OTEL_*
// variables themselves; the service is "fenced" unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES say otherwise. It returns cfg with the
// tracing added, and the function that flushes and stops the exporter.
func (a *app) serveTracing(ctx context.Context, cfg fenced.Config, log *slog.Logger) (fenced.Config, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	exporter := strings.TrimSpace(a.getenv("OTEL_TRACES_EXPORTER"))
	endpoint := a.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || a.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	switch {
	case strings.EqualFold(strings.TrimSpace(a.getenv("OTEL_SDK_DISABLED")), "true"), exporter == "none":
		return cfg, none, nil
	case exporter == "" && !endpoint:
		return cfg, none, nil
	case exporter != "" && exporter != "otlp":
		return cfg, nil, usage("OTEL_TRACES_EXPORTER=%s: fenced serve exports traces only through otlp (or none)", exporter)
	}
	protocol := a.getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = a.getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return cfg, nil, usage("OTEL_EXPORTER_OTLP_PROTOCOL=%s: fenced serve exports through http/protobuf or grpc", protocol)
	}
	if err != nil {
		return cfg, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "fenced")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return cfg, nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	mw, err := fencedotel.New(fencedotel.Config{TracerProvider: tp})
	if err != nil {
		tp.Shutdown(ctx)
		return cfg, nil, err
	}
	log.Info("tracing: spans exported through OTLP", "protocol", protocol)
	return mw.Configure(cfg), tp.Shutdown, nil
}
