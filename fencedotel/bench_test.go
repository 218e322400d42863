package fencedotel_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// burnJobs is the backlog of one burn-down.
const burnJobs = 2000

// BenchmarkBurnDown measures what tracing costs a worker, both ways in the
// same run: each iteration does two burn-downs, one without telemetry and
// one with the Middleware (a batching no-op span exporter, an SDK meter
// whose reader is never collected), in alternating order. A burn-down
// enqueues burnJobs no-op jobs (one bulk enqueue) on a fresh SQLite file,
// then a worker (concurrency 50) works them all. It reports the jobs per
// second of the burn-downs alone, each way, and otel/none, their ratio.
// A third burn-down, "meta", has no telemetry but gives every job the
// metadata the Middleware would (a traceparent): what storing and reading
// it costs, apart from the spans and metrics. On a machine shared with
// other work the wall-clock rates vary with its load; the CPU time this
// process spent per job ("cpu-µs/job" each way, and cpu-otel/none, their
// ratio) varies less.
func BenchmarkBurnDown(b *testing.B) {
	var plain, traced, meta time.Duration
	var cpuPlain, cpuTraced, cpuMeta time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		ways := []func(){
			func() { plain += burnDown(b, fenced.Config{}, &cpuPlain) },
			func() { meta += burnDown(b, withTraceparent, &cpuMeta) },
			func() {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				mw, err := fencedotel.New(fencedotel.Config{TracerProvider: tp, MeterProvider: mp})
				if err != nil {
					b.Fatal(err)
				}
				traced += burnDown(b, mw.Configure(fenced.Config{}), &cpuTraced)
				tp.Shutdown(context.Background())
			},
		}
		for k := range ways {
			ways[(k+i)%len(ways)]() // each way first in turn
		}
		i++
		b.StartTimer()
	}
	jobs := float64(burnJobs * b.N)
	b.ReportMetric(jobs/plain.Seconds(), "none-jobs/s")
	b.ReportMetric(jobs/traced.Seconds(), "otel-jobs/s")
	b.ReportMetric(jobs/meta.Seconds(), "meta-jobs/s")
	b.ReportMetric(plain.Seconds()/traced.Seconds(), "otel/none")
	b.ReportMetric(float64(cpuPlain.Microseconds())/jobs, "none-cpu-µs/job")
	b.ReportMetric(float64(cpuTraced.Microseconds())/jobs, "otel-cpu-µs/job")
	b.ReportMetric(float64(cpuMeta.Microseconds())/jobs, "meta-cpu-µs/job")
	b.ReportMetric(cpuTraced.Seconds()/cpuPlain.Seconds(), "cpu-otel/none")
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// withTraceparent is a Config whose enqueue middleware gives every job a
// traceparent, as the Middleware does, without tracing.
var withTraceparent = fenced.Config{EnqueueMiddleware: []fenced.EnqueueMiddleware{
	func(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
		for i := range b.Jobs {
			b.Jobs[i].Metadata = json.RawMessage(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
		}
		return next(ctx)
	}}}

// burnDown enqueues burnJobs and returns how long a worker took to work
// them all, adding the CPU time the process spent meanwhile to cpu.
func burnDown(b *testing.B, cfg fenced.Config, cpu *time.Duration) time.Duration {
	b.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "burn.db"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	ps := make([]fenced.EnqueueParams, burnJobs)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "noop"}
	}
	if n, err := c.EnqueueBulk(ctx, nil, ps); err != nil || n != burnJobs {
		b.Fatalf("enqueue: %d, %v", n, err)
	}
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "bench", Queues: map[string]int{fenced.DefaultQueue: 50}})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle("noop", func(context.Context, *fenced.JobRun) error { return nil })
	start, cpuStart := time.Now(), cpuTime(b)
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(5 * time.Minute)
	for w.Stats().Succeeded < burnJobs {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs worked in 5 minutes", w.Stats().Succeeded, burnJobs)
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	*cpu += cpuTime(b) - cpuStart
	w.Stop(ctx)
	return took
}
