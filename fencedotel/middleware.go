package fencedotel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/fenced/fenced"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the name of the tracer and meter.
const instrumentation = "github.com/fenced/fenced/fencedotel"

// Config tunes a Middleware. The zero value works.
type Config struct {
	// TracerProvider makes the spans. Default otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Default otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator writes the producer's span context into a job's metadata
	// and reads it back in the worker. Default W3C Trace Context and
	// Baggage (propagation.TraceContext, propagation.Baggage).
	Propagator propagation.TextMapPropagator
}

// Middleware traces and measures enqueues and attempts. Make it with New
// and add it to a Client's configuration with Configure.
type Middleware struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	w3c    bool     // prop reads only traceparent, tracestate and baggage
	sets   sync.Map // attrKey → metric.MeasurementOption, the metrics' attribute sets
	kinds  sync.Map // attrKey without outcome → *queueKindInfo

	enqueued metric.Int64Counter
	attempts metric.Int64Counter
	duration metric.Float64Histogram
	wait     metric.Float64Histogram
}

// New returns a Middleware with cfg's providers.
func New(cfg Config) (*Middleware, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	meter := cfg.MeterProvider.Meter(instrumentation)
	m := &Middleware{tracer: cfg.TracerProvider.Tracer(instrumentation), prop: cfg.Propagator, w3c: true}
	for _, f := range cfg.Propagator.Fields() {
		if f != "traceparent" && f != "tracestate" && f != "baggage" {
			m.w3c = false
		}
	}
	var errs [4]error
	m.enqueued, errs[0] = meter.Int64Counter("fenced.jobs.enqueued", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs enqueued (inserted, not matched to an existing job by an idempotency key)."))
	m.attempts, errs[1] = meter.Int64Counter("fenced.job.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts run by workers, by outcome."))
	m.duration, errs[2] = meter.Float64Histogram("fenced.job.attempt.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each attempt's middleware and handler ran."))
	m.wait, errs[3] = meter.Float64Histogram("fenced.job.queue.wait", metric.WithUnit("s"),
		metric.WithDescription("From when a job was due to its attempt's claim, by the database clock."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("fencedotel: metrics: %w", err)
	}
	return m, nil
}

// Configure returns cfg with the Middleware's enqueue middleware and hooks
// added (outermost: before the ones cfg already has, so the spans cover
// them).
func (m *Middleware) Configure(cfg fenced.Config) fenced.Config {
	cfg.EnqueueMiddleware = append([]fenced.EnqueueMiddleware{m.Enqueue}, cfg.EnqueueMiddleware...)
	cfg.Hooks = append([]fenced.Hooks{m.Hooks()}, cfg.Hooks...)
	return cfg
}

// Attribute keys of the spans and metrics.
const (
	keyKind    = attribute.Key("fenced.job.kind")
	keyAttempt = attribute.Key("fenced.job.attempt")
	keyFence   = attribute.Key("fenced.job.fence")
	keyOutcome = attribute.Key("fenced.job.outcome")
	keyStale   = attribute.Key("fenced.stale.reason")
	keyBulk    = attribute.Key("fenced.enqueue.bulk")
)

// Messaging semantic-convention attributes.
var (
	system    = attribute.String("messaging.system", "fenced")
	opSend    = attribute.String("messaging.operation.type", "send")
	opProcess = attribute.String("messaging.operation.type", "process")
)

func destination(queue string) attribute.KeyValue {
	return attribute.String("messaging.destination.name", queue)
}

func messageID(id int64) attribute.KeyValue {
	return attribute.String("messaging.message.id", strconv.FormatInt(id, 10))
}

// Enqueue is a fenced.EnqueueMiddleware: a producer span around the
// enqueue, whose context it writes into each job's metadata.
func (m *Middleware) Enqueue(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
	queue, kind := fenced.DefaultQueue, ""
	if len(b.Jobs) > 0 {
		kind = b.Jobs[0].Kind
		if b.Jobs[0].Queue != "" {
			queue = b.Jobs[0].Queue
		}
	}
	qk := m.queueKind(queue, kind)
	attrs := []attribute.KeyValue{system, opSend, opEnqueueName, qk.destination, qk.kind}
	if len(b.Jobs) != 1 {
		attrs = append(attrs, attribute.Int("messaging.batch.message_count", len(b.Jobs)))
	}
	if b.Bulk {
		attrs = append(attrs, keyBulk.Bool(true))
	}
	if len(b.Jobs) == 1 && !trace.SpanContextFromContext(ctx).IsValid() {
		// A job that carries its producer's trace context and comes with no
		// span of its own (an enqueue through the HTTP API from a client in
		// another language): the producer span continues that trace.
		if c := m.carrier(jsonOf(b.Jobs[0].Metadata)); c != nil {
			ctx = m.prop.Extract(ctx, c)
		}
	}
	ctx, span := m.tracer.Start(ctx, qk.send, producer, trace.WithAttributes(attrs...))
	defer span.End()
	if err := m.inject(ctx, b.Jobs); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return fenced.Enqueued{}, err
	}
	out, err := next(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return out, err
	}
	if len(out.Results) == 1 && out.Results[0].Job != nil {
		span.SetAttributes(messageID(out.Results[0].Job.ID))
	}
	m.countEnqueued(ctx, b, out)
	return out, nil
}

// inject writes the span context of ctx into every job's metadata. A job
// of a batch of several whose metadata already carries trace context keeps
// it: the caller's is the job's producer; a job alone has had its trace
// continued by the span (Enqueue).
func (m *Middleware) inject(ctx context.Context, jobs []fenced.EnqueueParams) error {
	carrier := propagation.MapCarrier{}
	m.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil // no span to carry (a no-op tracer)
	}
	encoded, err := json.Marshal(carrier)
	if err != nil {
		return err
	}
	for i := range jobs {
		if jobs[i].Metadata == nil {
			jobs[i].Metadata = json.RawMessage(encoded) // shared: nothing changes it
			continue
		}
		if len(jobs) > 1 && m.carrier(jsonOf(jobs[i].Metadata)) != nil {
			continue
		}
		for k, v := range carrier {
			if err := jobs[i].SetMetadata(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// countEnqueued counts the jobs inserted, by queue and kind.
func (m *Middleware) countEnqueued(ctx context.Context, b *fenced.EnqueueBatch, out fenced.Enqueued) {
	type key struct{ queue, kind string }
	if len(out.Results) == 1 { // one job: no map to count in
		if r := out.Results[0]; !r.Existing && r.Job != nil {
			m.enqueued.Add(ctx, 1, m.queueKind(r.Job.Queue, r.Job.Kind).metric)
		}
		return
	}
	counts := map[key]int64{}
	if out.Results == nil { // bulk: only the total is known; spread by the batch
		if out.Inserted == len(b.Jobs) {
			for _, p := range b.Jobs {
				counts[key{queueOf(p), p.Kind}]++
			}
		} else if out.Inserted > 0 && len(b.Jobs) > 0 {
			counts[key{queueOf(b.Jobs[0]), b.Jobs[0].Kind}] += int64(out.Inserted)
		}
	}
	for _, r := range out.Results {
		if !r.Existing && r.Job != nil {
			counts[key{r.Job.Queue, r.Job.Kind}]++
		}
	}
	for k, n := range counts {
		m.enqueued.Add(ctx, n, m.queueKind(k.queue, k.kind).metric)
	}
}

// jsonOf is metadata as JSON text, nil when it is not JSON text already
// encoded or cannot be encoded (validation refuses it later).
func jsonOf(metadata any) json.RawMessage {
	switch x := metadata.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return x
	case []byte:
		return x
	}
	b, err := json.Marshal(metadata)
	if err != nil {
		return nil
	}
	return b
}

// attrKey names one attribute set of the metrics.
type attrKey struct{ queue, kind, outcome string }

// attrs is the metrics' attribute set of a queue, a kind and an outcome
// ("" for none), made once: a set costs a sort and a hash.
func (m *Middleware) attrs(queue, kind, outcome string) metric.MeasurementOption {
	k := attrKey{queue, kind, outcome}
	if o, ok := m.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kv := []attribute.KeyValue{destination(queue), keyKind.String(kind)}
	if outcome != "" {
		kv = append(kv, keyOutcome.String(outcome))
	}
	o, _ := m.sets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(kv...)))
	return o.(metric.MeasurementOption)
}

// queueKindInfo is what every attempt of one kind in one queue shares,
// made once: its span's name, its span attributes and its metrics'
// attribute set.
type queueKindInfo struct {
	process     string // the consumer span's name
	send        string // the producer span's name
	destination attribute.KeyValue
	kind        attribute.KeyValue
	metric      metric.MeasurementOption // attrs(queue, kind, "")
}

// queueKind is the queueKindInfo of a queue and a kind.
func (m *Middleware) queueKind(queue, kind string) *queueKindInfo {
	k := attrKey{queue: queue, kind: kind}
	if qk, ok := m.kinds.Load(k); ok {
		return qk.(*queueKindInfo)
	}
	qk, _ := m.kinds.LoadOrStore(k, &queueKindInfo{process: "process " + queue, send: "send " + queue, destination: destination(queue),
		kind: keyKind.String(kind), metric: m.attrs(queue, kind, "")})
	return qk.(*queueKindInfo)
}

func queueOf(p fenced.EnqueueParams) string {
	if p.Queue == "" {
		return fenced.DefaultQueue
	}
	return p.Queue
}
