// Package fencedotel traces and measures fenced's job queue with
// OpenTelemetry. It is a package of its own so that a program that does not
// use OpenTelemetry does not link it: the root package never imports it.
//
// A Middleware gives the Client an enqueue middleware and hooks
// (Middleware.Configure). Each enqueue call is a producer span ("send"
// operation), and the span's context is written into each job's metadata
// (W3C Trace Context: "traceparent", "tracestate"), so it travels with the
// job through the database to whichever worker claims it, in any language
// (the HTTP API carries metadata as it is, and takes a W3C traceparent
// header into it). Each attempt a Worker runs is a
// consumer span ("process" operation), a child of the producer's span and
// linked to it, that ends once the attempt's fenced outcome write is
// settled: its attributes are the messaging semantic conventions'
// (messaging.system "fenced", messaging.destination.name the queue,
// messaging.message.id the job id) and fenced's own (fenced.job.kind,
// fenced.job.attempt, fenced.job.fence, fenced.job.outcome, and
// fenced.stale.reason when the outcome write was refused because the
// attempt's fence no longer held).
//
// Its metrics: fenced.jobs.enqueued (jobs, by queue and kind),
// fenced.job.attempts (attempts, by queue, kind and outcome),
// fenced.job.attempt.duration (seconds the handler ran, by queue, kind and
// outcome) and fenced.job.queue.wait (seconds from when a job was due to
// its attempt's claim, by the database clock, by queue and kind).
package fencedotel
