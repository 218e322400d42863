package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

type enqueueRequest struct {
	Kind           string          `json:"kind"`
	Args           json.RawMessage `json:"args"`     // any JSON; absent or null is {}
	Queue          string          `json:"queue"`    // default "default"
	Priority       int             `json:"priority"` // 0 runs first
	RunAt          *string         `json:"run_at"`   // RFC 3339
	DelayMs        *int64          `json:"delay_ms"` // or: run this long after the database's now
	MaxAttempts    int             `json:"max_attempts"`
	IdempotencyKey string          `json:"idempotency_key"`
	// ConcurrencyKey and SequenceKey: see fenced.EnqueueParams.
	ConcurrencyKey           string `json:"concurrency_key"`
	SequenceKey              string `json:"sequence_key"`
	SequenceContinueOnFailed bool   `json:"sequence_continue_on_failed"`
	// Metadata is a JSON object stored with the job (trace context
	// carried from the producer to the worker); absent or null is none.
	Metadata json.RawMessage `json:"metadata"`
	// TimeoutMs bounds each attempt (fenced.EnqueueParams.Timeout); absent,
	// null or 0 is none.
	TimeoutMs *int64 `json:"timeout_ms"`
	// Retry is the job's retry backoff (fenced.EnqueueParams.Retry);
	// absent or null is none.
	Retry *retryRequest `json:"retry"`
	// Unique makes the job unique (fenced.UniqueOptions); absent or null:
	// not unique.
	Unique *uniqueRequest `json:"unique"`
	// Tags label the job for listings (GET /v1/jobs?tag=…): see
	// fenced.EnqueueParams.Tags. Absent, null or [] is none.
	Tags []string `json:"tags"`
}

// retryRequest is a job's retry backoff: attempt n waits min(max_ms,
// base_ms·2^(n−1)), scaled by a random factor in [1−jitter, 1]. An absent
// field takes fenced.DefaultBackoff's; jitter 0 is none.
type retryRequest struct {
	BaseMs *int64   `json:"base_ms"`
	MaxMs  *int64   `json:"max_ms"`
	Jitter *float64 `json:"jitter"`
}

// backoff is the library's form of r.
func (r *retryRequest) backoff() (*fenced.Backoff, error) {
	if r == nil {
		return nil, nil
	}
	var b fenced.Backoff
	var err error
	if b.Base, err = millis("retry.base_ms", r.BaseMs, 0, time.Millisecond, fenced.MaxRetryDelay); err != nil {
		return nil, err
	}
	if b.Max, err = millis("retry.max_ms", r.MaxMs, 0, time.Millisecond, fenced.MaxRetryDelay); err != nil {
		return nil, err
	}
	if r.Jitter != nil {
		if j := *r.Jitter; !(j >= 0 && j <= 1) {
			return nil, invalid("retry.jitter", "is outside 0 to 1")
		}
		b.Jitter = *r.Jitter
		if b.Jitter == 0 {
			b.Jitter = -1 // none; the library's zero is the default
		}
	}
	return &b, nil
}

// uniqueRequest is fenced.UniqueOptions as the request spells it; an empty
// object is unique by kind alone.
type uniqueRequest struct {
	ByArgs     bool              `json:"by_args"`
	ArgsKeys   []string          `json:"args_keys"`
	ByPeriodMs *int64            `json:"by_period_ms"`
	ByQueue    bool              `json:"by_queue"`
	ByState    []fenced.JobState `json:"by_state"`
}

// options checks the request's own encoding (the period in whole
// milliseconds within the library's bounds; the library checks the rest)
// and returns the library's options.
func (u *uniqueRequest) options() (*fenced.UniqueOptions, error) {
	period, err := millis("unique.by_period_ms", u.ByPeriodMs, 0, time.Second, fenced.MaxUniquePeriod)
	if err != nil {
		return nil, err
	}
	o := &fenced.UniqueOptions{ByArgs: u.ByArgs, ArgsKeys: u.ArgsKeys, ByPeriod: period, ByQueue: u.ByQueue, ByState: u.ByState}
	return o, o.Validate()
}

// enqueueReply is the enqueued job, or the existing one its idempotency
// key matched.
type enqueueReply struct {
	wire.Enqueued
	DBTime wire.Time `json:"db_time,omitzero"`
}

// MarshalJSON encodes the job's fields and "existing", then db_time
// (Enqueued's own MarshalJSON, promoted, would leave db_time out).
func (e enqueueReply) MarshalJSON() ([]byte, error) {
	return wire.Merge(e.Enqueued, dbTimeOf(e.DBTime))
}

// maxDelay bounds delay_ms, as the library bounds a delay.
const maxDelay = 10 * 365 * 24 * time.Hour

// params checks the request's own encoding (run_at, the durations in
// milliseconds, the retry and unique options) and returns the library's
// job; the library checks the rest. The traceparent and tracestate headers
// of h join the metadata unless it has a traceparent of its own
// (withTraceHeaders). A workflow's tasks are read by the same function.
func (r *enqueueRequest) params(h http.Header) (p fenced.EnqueueParams, err error) {
	p = fenced.EnqueueParams{Kind: r.Kind, Queue: r.Queue, Priority: r.Priority,
		MaxAttempts: r.MaxAttempts, IdempotencyKey: r.IdempotencyKey,
		ConcurrencyKey: r.ConcurrencyKey, SequenceKey: r.SequenceKey, SequenceContinueOnFailed: r.SequenceContinueOnFailed,
		Tags: r.Tags} // Enqueue checks them
	if len(r.Args) > 0 && string(r.Args) != "null" {
		p.Args = r.Args // Enqueue checks a backend can store it
	}
	// The traceparent and tracestate headers join the metadata unless it
	// has a traceparent of its own (withTraceHeaders).
	r.Metadata = withTraceHeaders(h, r.Metadata)
	if len(r.Metadata) > 0 && string(r.Metadata) != "null" {
		p.Metadata = r.Metadata // Enqueue checks it is an object a backend can store
	}
	if r.RunAt != nil && r.DelayMs != nil {
		return p, invalid("run_at", "give run_at or delay_ms, not both")
	}
	if r.RunAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *r.RunAt)
		if err != nil {
			return p, invalid("run_at", "want an RFC 3339 time such as 2026-01-02T15:04:05Z")
		}
		// In UTC, as the library checks its year and the reply shows it: a
		// local year 9999 can be 10000 in UTC, which no reply can encode.
		p.RunAt = t.UTC()
	}
	if p.Delay, err = millis("delay_ms", r.DelayMs, 0, 0, maxDelay); err != nil {
		return p, err
	}
	if p.Timeout, err = millis("timeout_ms", r.TimeoutMs, 0, 0, fenced.MaxJobTimeout); err != nil {
		return p, err
	}
	if p.Retry, err = r.Retry.backoff(); err != nil {
		return p, err
	}
	if r.Unique != nil {
		if p.Unique, err = r.Unique.options(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// enqueue: POST /v1/jobs → 201 with the new job, or 200 with the existing
// job its idempotency key matched, or the job holding its unique slot
// ("existing": true).
func (s *Server) enqueue(r *http.Request) (*reply, error) {
	var req enqueueRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	p, err := req.params(r.Header)
	if err != nil {
		return nil, err
	}
	j, existing, err := s.c.Enqueue(r.Context(), p)
	if err != nil {
		return nil, err
	}
	rep := ok(enqueueReply{wire.Enqueued{Job: *j, Existing: existing}, wire.Time(j.DecidedAt)}, j.DecidedAt)
	if !existing {
		rep.status = http.StatusCreated
		rep.location = "/v1/jobs/" + strconv.FormatInt(j.ID, 10)
	}
	return rep, nil
}

// jobHistoryReply is a job and its attempts.
type jobHistoryReply struct {
	wire.JobHistory
	DBTime wire.Time `json:"db_time,omitzero"`
}

// getJob: GET /v1/jobs/{id} → {"job": …, "attempts": […]}.
func (s *Server) getJob(r *http.Request) (*reply, error) {
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	j, attempts, err := s.c.GetJob(r.Context(), id)
	if err != nil {
		return nil, jobNotFound(id, err)
	}
	return ok(jobHistoryReply{wire.JobHistoryFrom(j, attempts), wire.Time(j.DecidedAt)}, j.DecidedAt), nil
}

// jobsReply is a page of jobs. NextAfter is the "after" of the next page
// in id order, null when this page is the last (a full page may be
// followed by an empty one) or the order is desc; NextBefore is the
// "before" of the next page in order=desc, absent when this page is the
// last or the order is asc.
type jobsReply struct {
	Jobs       []*fenced.Job `json:"jobs"`
	NextAfter  *int64        `json:"next_after"`
	NextBefore *int64        `json:"next_before,omitempty"`
	DBTime     wire.Time     `json:"db_time,omitzero"`
}

// listJobs: GET /v1/jobs?state=&queue=&kind=&tag=&tag_match=&limit=&after=&before=&order=
// → a page of jobs in id order (order=desc: newest first), keyset-paged.
func (s *Server) listJobs(r *http.Request) (*reply, error) {
	// Strictly: r.URL.Query() drops a pair it cannot parse (a bad escape,
	// a ';'), which would list every job instead of the ones asked for.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "the query string is malformed: "+err.Error())
	}
	f, err := jobFilter(q)
	if err != nil {
		return nil, err
	}
	jobs, err := s.c.ListJobs(r.Context(), f)
	if err != nil {
		return nil, err
	}
	out := jobsReply{Jobs: wire.List(jobs)}
	limit := f.Limit
	if limit == 0 {
		limit = fenced.DefaultListLimit
	}
	if len(jobs) > 0 {
		out.DBTime = wire.Time(jobs[0].DecidedAt)
		if len(jobs) == limit && f.Desc {
			out.NextBefore = &jobs[len(jobs)-1].ID
		} else if len(jobs) == limit {
			out.NextAfter = &jobs[len(jobs)-1].ID
		}
	} else {
		out.DBTime = wire.Time(s.dbNow(r.Context()))
	}
	return ok(out, time.Time(out.DBTime)), nil
}

// jobFilter reads the query of a job list strictly: known parameters,
// each at most once but tag, which may repeat (tag=a&tag=b).
func jobFilter(q url.Values) (fenced.JobFilter, error) {
	var f fenced.JobFilter
	for k, v := range q {
		if k == "tag" {
			f.Tags = v // ListJobs checks them: valid, distinct, at most fenced.MaxTags
			continue
		}
		if len(v) > 1 {
			return f, invalid(k, "is given more than once")
		}
		var err error
		if v[0] == "" {
			return f, invalid(k, "is empty; leave the parameter out to not filter")
		}
		switch k {
		case "state":
			f.State = fenced.JobState(v[0])
		case "queue":
			f.Queue = v[0]
		case "kind":
			f.Kind = v[0]
		case "limit":
			f.Limit, err = strconv.Atoi(v[0])
		case "after":
			f.AfterID, err = strconv.ParseInt(v[0], 10, 64)
		case "before":
			f.BeforeID, err = strconv.ParseInt(v[0], 10, 64)
		case "order":
			if v[0] != "asc" && v[0] != "desc" {
				return f, invalid(k, strconv.Quote(v[0])+" is not asc or desc")
			}
			f.Desc = v[0] == "desc"
		case "tag_match":
			f.TagsMatch = fenced.TagsMatch(v[0]) // ListJobs checks it is any or all
		default:
			return f, invalid(k, "unknown parameter; want state, queue, kind, tag, tag_match, limit, after, before or order")
		}
		if err != nil {
			return f, invalid(k, strconv.Quote(v[0])+" is not an integer")
		}
	}
	if _, given := q["limit"]; given && f.Limit == 0 {
		return f, invalid("limit", "0 is outside 1 to "+strconv.Itoa(fenced.MaxListLimit))
	}
	return f, nil
}

// cancelRequest is the body of a cancel or a retry: an empty object, or
// none.
type cancelRequest struct{}

// cancel: POST /v1/jobs/{id}/cancel → the job: cancelled at once when
// queued; asked to stop when running (cancel_requested). 409 conflict
// when it already finished.
func (s *Server) cancel(r *http.Request) (*reply, error) {
	if err := decodeBody(r, &cancelRequest{}, true); err != nil {
		return nil, err
	}
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	j, err := s.c.CancelJob(r.Context(), id)
	if err != nil {
		return nil, jobNotFound(id, err)
	}
	return ok(jobReply{*j, wire.Time(j.DecidedAt)}, j.DecidedAt), nil
}

// retry: POST /v1/jobs/{id}/retry → the job, queued to run now with
// max_attempts more attempts, when it failed or was cancelled. 409 conflict
// in another state.
func (s *Server) retry(r *http.Request) (*reply, error) {
	if err := decodeBody(r, &cancelRequest{}, true); err != nil {
		return nil, err
	}
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	j, err := s.c.RetryJob(r.Context(), id)
	if err != nil {
		return nil, jobNotFound(id, err)
	}
	return ok(jobReply{*j, wire.Time(j.DecidedAt)}, j.DecidedAt), nil
}

// jobDeletedReply answers a delete.
type jobDeletedReply struct {
	ID      int64     `json:"id"`
	Deleted bool      `json:"deleted"`
	DBTime  wire.Time `json:"db_time,omitzero"`
}

// deleteJob: DELETE /v1/jobs/{id} → {id, "deleted": true}: the job, in any
// state, and its attempt history are gone (a running attempt's worker
// finds no job at its next heartbeat, progress or end). 404 when there is
// no such job.
func (s *Server) deleteJob(r *http.Request) (*reply, error) {
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	if err := s.c.DeleteJob(r.Context(), id); err != nil {
		return nil, jobNotFound(id, err)
	}
	at := s.dbNow(r.Context())
	return ok(jobDeletedReply{id, true, wire.Time(at)}, at), nil
}

// jobReply is one job.
type jobReply struct {
	fenced.Job
	DBTime wire.Time `json:"db_time,omitzero"`
}

// MarshalJSON encodes the job's fields, then db_time (the Job's own
// MarshalJSON, promoted, would leave db_time out).
func (j jobReply) MarshalJSON() ([]byte, error) { return wire.Merge(j.Job, dbTimeOf(j.DBTime)) }

// pathJobID is the {id} of the path.
func pathJobID(r *http.Request) (int64, error) {
	id, err := fenced.ParseJobID(r.PathValue("id"))
	if err != nil {
		return 0, invalid("id", strconv.Quote(r.PathValue("id"))+" is not a positive integer")
	}
	return id, nil
}

// jobNotFound names the job in a not-found.
func jobNotFound(id int64, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		e := newError(http.StatusNotFound, codeNotFound, "job "+strconv.FormatInt(id, 10)+" not found")
		e.fromDB = true
		return e
	}
	return err
}
