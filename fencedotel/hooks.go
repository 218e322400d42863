package fencedotel

import (
	"context"
	"errors"
	"sync"

	"github.com/fenced/fenced"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Hooks returns the fenced.Hooks of the consumer spans and the attempts'
// metrics: OnBegin starts the attempt's span, a child of the producer's
// span carried in the job's metadata (and linked to it), and OnEnd ends it
// with the attempt's outcome.
func (m *Middleware) Hooks() fenced.Hooks {
	return fenced.Hooks{OnBegin: m.begin, OnEnd: m.end}
}

// Span options and attributes the same for every span, made once.
var (
	consumer      = trace.WithSpanKind(trace.SpanKindConsumer)
	producer      = trace.WithSpanKind(trace.SpanKindProducer)
	opProcessName = attribute.String("messaging.operation.name", "process")
	opEnqueueName = attribute.String("messaging.operation.name", "enqueue")
)

// spanAttrs holds the attributes of a consumer span while it starts: the
// tracer copies them (trace.NewSpanStartConfig), so each attempt's array
// is reused by a later one instead of being made anew.
var spanAttrs = sync.Pool{New: func() any { return new([8]attribute.KeyValue) }}

// begin starts the consumer span of attempt j.
func (m *Middleware) begin(ctx context.Context, j *fenced.JobRun) context.Context {
	qk := m.queueKind(j.Queue, j.Kind)
	a := spanAttrs.Get().(*[8]attribute.KeyValue)
	defer func() {
		*a = [8]attribute.KeyValue{} // hold no strings of this job's
		spanAttrs.Put(a)
	}()
	*a = [8]attribute.KeyValue{system, opProcess, opProcessName, qk.destination, messageID(j.ID),
		qk.kind, keyAttempt.Int(j.Attempt), keyFence.Int64(j.Fence)}
	attrs := trace.WithAttributes(a[:]...)
	parent, linked := ctx, false
	if carrier := m.carrier(j.Metadata); carrier != nil {
		parent = m.prop.Extract(ctx, carrier)
		linked = trace.SpanContextFromContext(parent).IsValid()
	}
	var span trace.Span
	if linked {
		link := trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(parent)})
		_, span = m.tracer.Start(parent, qk.process, consumer, attrs, link)
	} else {
		_, span = m.tracer.Start(parent, qk.process, consumer, attrs)
	}
	if j.AttemptedAt != nil {
		wait := max(j.AttemptedAt.Sub(j.RunAt).Seconds(), 0)
		m.wait.Record(ctx, wait, qk.metric)
	}
	// The handler's context stays the worker's (it ends when the attempt
	// must stop), carrying the span.
	return trace.ContextWithSpan(ctx, span)
}

// end ends the consumer span of attempt j with its outcome.
func (m *Middleware) end(ctx context.Context, j *fenced.JobRun, e fenced.AttemptEnd) {
	span := trace.SpanFromContext(ctx)
	outcome := e.Outcome
	if outcome == "" {
		outcome = "unknown"
	}
	if span.IsRecording() { // a span sampled out records nothing: build nothing for it
		var stale *fenced.StaleError
		if errors.As(e.WriteErr, &stale) {
			span.SetAttributes(keyOutcome.String(outcome), keyStale.String(string(stale.Reason)))
		} else {
			span.SetAttributes(keyOutcome.String(outcome))
		}
		switch {
		case e.Err != nil:
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		case e.WriteErr != nil:
			span.RecordError(e.WriteErr)
			span.SetStatus(codes.Error, e.WriteErr.Error())
		}
	}
	span.End()
	attrs := m.attrs(j.Queue, j.Kind, outcome)
	m.attempts.Add(ctx, 1, attrs)
	m.duration.Record(ctx, e.Duration.Seconds(), attrs)
}
