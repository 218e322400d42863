package fencedotel

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fenced/fenced"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkAttemptHooks is what the Middleware adds to each attempt, apart
// from the database: its OnBegin and OnEnd on a job whose metadata carries
// a traceparent, with the SDK's batching tracer (a no-op exporter) and
// meter. Its allocs/op are the ones to keep down.
func BenchmarkAttemptHooks(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := New(Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	j := &fenced.JobRun{Job: &fenced.Job{ID: 42, Kind: "noop", Queue: fenced.DefaultQueue, Attempt: 1, Fence: 1,
		RunAt: now, AttemptedAt: &now,
		Metadata: json.RawMessage(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)}}
	ctx := context.Background()
	end := fenced.AttemptEnd{Outcome: fenced.OutcomeSucceeded, Duration: time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		m.end(m.begin(ctx, j), j, end)
	}
}
