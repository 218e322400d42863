package fencedotel_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedotel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is an in-memory exporter and metric reader, and a Middleware
// on them.
type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	mw     *fencedotel.Middleware
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	mw, err := fencedotel.New(fencedotel.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &telemetry{spans: spans, reader: reader, mw: mw}
}

// client is a migrated SQLite Client traced by tel.
func (tel *telemetry) client(t *testing.T) *fenced.Client {
	t.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "otel.db"), tel.mw.Configure(fenced.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// work runs the worker until the spans of n attempts were exported.
func (tel *telemetry) work(t *testing.T, c *fenced.Client, h fenced.Handler, n int) {
	t.Helper()
	ctx := context.Background()
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("k", h)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for len(tel.byKind(trace.SpanKindConsumer)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d attempts' spans exported, want %d", len(tel.byKind(trace.SpanKindConsumer)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (tel *telemetry) byKind(k trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tel.spans.GetSpans() {
		if s.SpanKind == k {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

// A trace crosses the queue: the enqueue is a producer span whose context
// the job's metadata carries, and the attempt a consumer span in the same
// trace, the producer's child and linked to it, with the messaging and
// fenced attributes; the metrics count the enqueue and the attempt.
func TestATraceCrossesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tel := newTelemetry(t)
	c := tel.client(t)
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: fenced.DefaultQueue, Metadata: map[string]string{"tenant": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(j.Metadata, &meta); err != nil || meta["tenant"] != "42" || meta["traceparent"] == "" {
		t.Fatalf("the job's metadata %s: %v", j.Metadata, err)
	}
	tel.work(t, c, func(ctx context.Context, r *fenced.JobRun) error {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			t.Error("the handler's context carries no span")
		}
		return nil
	}, 1)

	prod, cons := tel.byKind(trace.SpanKindProducer), tel.byKind(trace.SpanKindConsumer)
	if len(prod) != 1 || len(cons) != 1 {
		t.Fatalf("%d producer and %d consumer spans, want 1 and 1", len(prod), len(cons))
	}
	p, s := prod[0], cons[0]
	if p.Name != "send default" || s.Name != "process default" {
		t.Fatalf("span names %q and %q", p.Name, s.Name)
	}
	if s.SpanContext.TraceID() != p.SpanContext.TraceID() || s.Parent.SpanID() != p.SpanContext.SpanID() {
		t.Fatalf("the consumer span is not the producer's child: trace %s parent %s, producer %s/%s",
			s.SpanContext.TraceID(), s.Parent.SpanID(), p.SpanContext.TraceID(), p.SpanContext.SpanID())
	}
	if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != p.SpanContext.SpanID() {
		t.Fatalf("the consumer span's links: %+v", s.Links)
	}
	for key, want := range map[string]string{"messaging.system": "fenced", "messaging.destination.name": "default",
		"messaging.message.id": "1", "messaging.operation.type": "process", "fenced.job.kind": "k", "fenced.job.outcome": "succeeded"} {
		if got := attr(s, key).Emit(); got != want {
			t.Errorf("consumer %s = %q, want %q", key, got, want)
		}
	}
	if attr(s, "fenced.job.attempt").AsInt64() != 1 || attr(s, "fenced.job.fence").AsInt64() != 1 {
		t.Errorf("consumer attempt %v fence %v", attr(s, "fenced.job.attempt"), attr(s, "fenced.job.fence"))
	}
	if attr(p, "messaging.message.id").Emit() != "1" || attr(p, "messaging.operation.type").Emit() != "send" {
		t.Errorf("producer attributes %v", p.Attributes)
	}

	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += float64(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += float64(dp.Count)
				}
			}
		}
	}
	for _, name := range []string{"fenced.jobs.enqueued", "fenced.job.attempts", "fenced.job.attempt.duration", "fenced.job.queue.wait"} {
		if got[name] != 1 {
			t.Errorf("metric %s = %v, want 1", name, got[name])
		}
	}
}

// A job whose metadata carries a traceparent from elsewhere (a producer in
// another language, through the HTTP API) is worked in that trace.
func TestAnAttemptContinuesATraceFromAnotherProducer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tel := newTelemetry(t)
	path := filepath.Join(t.TempDir(), "shared.db")
	traced, err := fenced.Open(ctx, "sqlite:"+path, tel.mw.Configure(fenced.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	traced.Migrate(ctx)
	// Enqueued without tracing, as another language's client would.
	plain, err := fenced.Open(ctx, "sqlite:"+path, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if _, _, err := plain.Enqueue(ctx, fenced.EnqueueParams{Kind: "k",
		Metadata: map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"}}); err != nil {
		t.Fatal(err)
	}
	tel.work(t, traced, func(context.Context, *fenced.JobRun) error { return nil }, 1)
	s := tel.byKind(trace.SpanKindConsumer)[0]
	if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != spanID || !s.Parent.IsRemote() {
		t.Fatalf("the attempt's span is in trace %s under %s, want %s under %s", s.SpanContext.TraceID(), s.Parent.SpanID(), traceID, spanID)
	}
	if len(tel.byKind(trace.SpanKindProducer)) != 0 {
		t.Fatal("an enqueue without the middleware made a producer span")
	}
}

// An attempt whose outcome write was refused at the fence says why on its
// span: fenced.stale.reason, with an error status; a failed attempt
// records its error.
func TestTheSpanSaysWhyAWriteWasRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tel := newTelemetry(t)
	h := tel.mw.Hooks()
	run := &fenced.JobRun{Job: &fenced.Job{ID: 9, Kind: "k", Queue: "q", Attempt: 2, Fence: 5, RunAt: time.Now()}}
	sctx := h.OnBegin(ctx, run)
	h.OnEnd(sctx, run, fenced.AttemptEnd{Outcome: fenced.OutcomeLost, WriteErr: &fenced.StaleError{
		Kind: "job", Name: "9", Fence: 5, CurrentFence: 6, Reason: fenced.ReasonSuperseded}})
	sctx = h.OnBegin(ctx, run)
	h.OnEnd(sctx, run, fenced.AttemptEnd{Outcome: fenced.OutcomeRetry, Err: context.DeadlineExceeded})
	spans := tel.byKind(trace.SpanKindConsumer)
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	stale, failed := spans[0], spans[1]
	if attr(stale, "fenced.stale.reason").Emit() != "superseded" || attr(stale, "fenced.job.outcome").Emit() != "lost" ||
		stale.Status.Code.String() != "Error" {
		t.Fatalf("the refused attempt's span: %v, status %v", stale.Attributes, stale.Status)
	}
	if attr(failed, "fenced.stale.reason").Type() != attribute.INVALID || attr(failed, "fenced.job.outcome").Emit() != "retry" ||
		len(failed.Events) != 1 || failed.Events[0].Name != "exception" {
		t.Fatalf("the failed attempt's span: %v, events %v", failed.Attributes, failed.Events)
	}
}

// An enqueue that brings its producer's trace context in the job's
// metadata and no span (the HTTP API's enqueue for a client in another
// language) makes its producer span in that trace; in a batch, a job that
// carries trace context keeps it.
func TestAnEnqueueContinuesTheTraceItsMetadataCarries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tel := newTelemetry(t)
	c := tel.client(t)
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	given := map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"}
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Metadata: given})
	if err != nil {
		t.Fatal(err)
	}
	p := tel.byKind(trace.SpanKindProducer)[0]
	if p.SpanContext.TraceID().String() != traceID || p.Parent.SpanID().String() != spanID {
		t.Fatalf("the producer span is in trace %s under %s, want %s under %s", p.SpanContext.TraceID(), p.Parent.SpanID(), traceID, spanID)
	}
	var meta map[string]string
	json.Unmarshal(j.Metadata, &meta)
	if want := "00-" + traceID + "-" + p.SpanContext.SpanID().String() + "-01"; meta["traceparent"] != want {
		t.Fatalf("the job carries %q, want the producer span's %q", meta["traceparent"], want)
	}
	res, err := c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "k", Metadata: given}, {Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	var kept, set map[string]string
	json.Unmarshal(res[0].Job.Metadata, &kept)
	json.Unmarshal(res[1].Job.Metadata, &set)
	if kept["traceparent"] != given["traceparent"] || set["traceparent"] == "" || set["traceparent"] == given["traceparent"] {
		t.Fatalf("batch metadata: %v and %v", kept, set)
	}
}
