package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedotel"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// serveTelemetry adds fencedotel's middleware to what "fenced serve"
// enqueues when the standard OpenTelemetry environment asks it to export
// traces (serveTracing), metrics (serveMetrics) or both, each signal
// decided on its own; with neither, cfg is returned as it is. It returns
// cfg with the middleware added, and the function that flushes and stops
// the exporters.
func (a *app) serveTelemetry(ctx context.Context, cfg fenced.Config, log *slog.Logger) (fenced.Config, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	traces, err := a.otlpSignal("traces", "TRACES")
	if err != nil {
		return cfg, nil, err
	}
	metrics, err := a.otlpSignal("metrics", "METRICS")
	if err != nil {
		return cfg, nil, err
	}
	if traces == "" && metrics == "" {
		return cfg, none, nil
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "fenced")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return cfg, nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	ocfg := fencedotel.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	var stops []func(context.Context) error
	stop := func(ctx context.Context) error {
		var errs []error
		for _, f := range stops {
			errs = append(errs, f(ctx))
		}
		return errors.Join(errs...)
	}
	if traces != "" {
		tp, err := serveTracing(ctx, traces, res)
		if err != nil {
			return cfg, nil, err
		}
		ocfg.TracerProvider = tp
		stops = append(stops, tp.Shutdown)
		log.Info("tracing: spans exported through OTLP", "protocol", traces)
	}
	if metrics != "" {
		mp, err := serveMetrics(ctx, metrics, res)
		if err != nil {
			stop(ctx)
			return cfg, nil, err
		}
		ocfg.MeterProvider = mp
		stops = append(stops, mp.Shutdown)
		log.Info("metrics: fencedotel's metrics exported through OTLP", "protocol", metrics)
	}
	mw, err := fencedotel.New(ocfg)
	if err != nil {
		stop(ctx)
		return cfg, nil, err
	}
	return mw.Configure(cfg), stop, nil
}

// otlpSignal says whether the standard environment asks for one signal
// ("traces", "metrics"; SIGNAL its name in the variables) to be exported
// through OTLP, and through which protocol: "" for not at all, else
// "http/protobuf" (the default) or "grpc". It asks when
// OTEL_<SIGNAL>_EXPORTER=otlp, or when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT is set and OTEL_<SIGNAL>_EXPORTER
// is not; never with OTEL_SDK_DISABLED=true or OTEL_<SIGNAL>_EXPORTER=none.
// The protocol is OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL. Another exporter or protocol is a usage
// error.
func (a *app) otlpSignal(signal, upper string) (string, error) {
	exporter := strings.TrimSpace(a.getenv("OTEL_" + upper + "_EXPORTER"))
	endpoint := a.getenv("OTEL_EXPORTER_OTLP_"+upper+"_ENDPOINT") != "" || a.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	switch {
	case strings.EqualFold(strings.TrimSpace(a.getenv("OTEL_SDK_DISABLED")), "true"), exporter == "none":
		return "", nil
	case exporter == "" && !endpoint:
		return "", nil
	case exporter != "" && exporter != "otlp":
		return "", usage("OTEL_%s_EXPORTER=%s: fenced serve exports %s only through otlp (or none)", upper, exporter, signal)
	}
	protocol := a.getenv("OTEL_EXPORTER_OTLP_" + upper + "_PROTOCOL")
	if protocol == "" {
		protocol = a.getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", usage("OTEL_EXPORTER_OTLP_PROTOCOL=%s: fenced serve exports %s through http/protobuf or grpc", protocol, signal)
}
