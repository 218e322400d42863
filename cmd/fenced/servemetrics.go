package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// serveMetrics is the meter provider of "fenced serve" when it exports
// fencedotel's metrics through OTLP, over protocol ("http/protobuf" or
// "grpc", as otlpSignal decided), with a periodic reader: every
// OTEL_METRIC_EXPORT_INTERVAL milliseconds (60000 unless set), and once
// more when the provider shuts down. The exporter reads the rest of its
// OTEL_* variables itself.
func serveMetrics(ctx context.Context, protocol string, res *resource.Resource) (*sdkmetric.MeterProvider, error) {
	var exp sdkmetric.Exporter
	var err error
	if protocol == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP metric exporter: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res)), nil
}
