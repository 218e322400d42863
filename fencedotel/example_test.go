package fencedotel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedotel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A trace that crosses the queue: the enqueue's producer span and the
// attempt's consumer span, read back from the SDK's in-memory exporter. The
// attempt's span is in the enqueue's trace, its child, though the job went
// through the database (its metadata carried the trace context).
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fencedotel-example-")
	defer os.RemoveAll(dir)

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	otelMW, _ := fencedotel.New(fencedotel.Config{TracerProvider: tp})
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), otelMW.Configure(fenced.Config{}))
	defer c.Close()
	c.Migrate(ctx)

	// The producer's request, traced.
	reqCtx, req := tp.Tracer("shop").Start(ctx, "POST /orders")
	j, _, _ := c.Enqueue(reqCtx, fenced.EnqueueParams{Kind: "ship", Queue: "orders"})
	req.End()

	done := make(chan struct{})
	w, _ := c.NewWorker(fenced.WorkerConfig{Owner: "worker-1", Queues: map[string]int{"orders": 1},
		Hooks: []fenced.Hooks{{OnEnd: func(context.Context, *fenced.JobRun, fenced.AttemptEnd) { close(done) }}}})
	w.Handle("ship", func(ctx context.Context, r *fenced.JobRun) error {
		_, s := tp.Tracer("shop").Start(ctx, "ship order") // the handler's own span
		s.End()
		return nil
	})
	w.Start(ctx)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	w.Stop(ctx)

	got := spans.GetSpans()
	names := map[trace.SpanID]string{}
	for _, s := range got {
		names[s.SpanContext.SpanID()] = s.Name
	}
	trace0 := got[0].SpanContext.TraceID()
	for _, s := range got {
		parent := names[s.Parent.SpanID()]
		if parent == "" {
			parent = "none"
		}
		fmt.Printf("%-13s %-8s parent %-13s same trace %v\n", s.Name, s.SpanKind, parent, s.SpanContext.TraceID() == trace0)
	}
	fmt.Println("job", j.ID, "ended")
	// Output:
	// send orders   producer parent POST /orders  same trace true
	// POST /orders  internal parent none          same trace true
	// ship order    internal parent process orders same trace true
	// process orders consumer parent send orders   same trace true
	// job 1 ended
}
