package fencedotel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/fenced/fenced"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Hooks returns the fenced.Hooks of the consumer spans and the attempts'
// metrics: OnBegin starts the attempt's span, a child of the producer's
// span carried in the job's metadata (and linked to it), and OnEnd ends it
// with the attempt's outcome.
func (m *Middleware) Hooks() fenced.Hooks {
	return fenced.Hooks{OnBegin: m.begin, OnEnd: m.end}
}

// begin starts the consumer span of attempt j.
func (m *Middleware) begin(ctx context.Context, j *fenced.JobRun) context.Context {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		system, opProcess, attribute.String("messaging.operation.name", "process"), destination(j.Queue), messageID(j.ID),
		keyKind.String(j.Kind), keyAttempt.Int(j.Attempt), keyFence.Int64(j.Fence))}
	parent := ctx
	if carrier := m.carrier(j.Metadata); carrier != nil {
		parent = m.prop.Extract(ctx, carrier)
		if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	_, span := m.tracer.Start(parent, "process "+j.Queue, opts...)
	if j.AttemptedAt != nil {
		wait := max(j.AttemptedAt.Sub(j.RunAt).Seconds(), 0)
		m.wait.Record(ctx, wait, m.attrs(j.Queue, j.Kind, ""))
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
	span.SetAttributes(keyOutcome.String(outcome))
	var stale *fenced.StaleError
	if errors.As(e.WriteErr, &stale) {
		span.SetAttributes(keyStale.String(string(stale.Reason)))
	}
	switch {
	case e.Err != nil:
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	case e.WriteErr != nil:
		span.RecordError(e.WriteErr)
		span.SetStatus(codes.Error, e.WriteErr.Error())
	}
	span.End()
	attrs := m.attrs(j.Queue, j.Kind, outcome)
	m.attempts.Add(ctx, 1, attrs)
	m.duration.Record(ctx, e.Duration.Seconds(), attrs)
}

// w3cFields are the members the default propagator reads.
type w3cFields struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
	Baggage     string `json:"baggage"`
}

// carrier is the members of a job's metadata the propagator reads; nil
// when it has none. With the default propagator only its three fields are
// decoded (a struct, no map of every member); another propagator gets
// every string member.
func (m *Middleware) carrier(meta json.RawMessage) propagation.MapCarrier {
	if len(meta) == 0 {
		return nil
	}
	if m.w3c {
		var f w3cFields
		if json.Unmarshal(meta, &f) != nil || f.Traceparent == "" {
			return nil
		}
		c := propagation.MapCarrier{"traceparent": f.Traceparent}
		if f.Tracestate != "" {
			c["tracestate"] = f.Tracestate
		}
		if f.Baggage != "" {
			c["baggage"] = f.Baggage
		}
		return c
	}
	var all map[string]any
	if json.Unmarshal(meta, &all) != nil {
		return nil
	}
	c := propagation.MapCarrier{}
	for k, v := range all {
		if s, ok := v.(string); ok {
			c[k] = s
		}
	}
	return c
}
