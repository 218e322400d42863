package fenced

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// JobState is one of a job's five states.
type JobState = fencedtype.JobState

// The states of a job:
//
//	queued ──claim──▶ running ──complete──▶ succeeded
//	   ▲                 │ ──fail, attempts left / snooze / lease lost──▶ queued
//	   │                 │ ──fail, attempts exhausted or discarded──▶ failed (dead letter)
//	   │                 └ ──cancel requested, then the worker stops──▶ cancelled
//	   └──retry── failed, cancelled        queued ──cancel──▶ cancelled
//	pending ──every dependency finished──▶ queued    pending ──cancel──▶ cancelled
//
// queued includes scheduled jobs and jobs waiting to retry (RunAt in the
// future). pending is a workflow task waiting for its dependencies
// (EnqueueWorkflow); no claim takes it.
const (
	JobPending   = fencedtype.JobPending
	JobQueued    = fencedtype.JobQueued
	JobRunning   = fencedtype.JobRunning
	JobSucceeded = fencedtype.JobSucceeded
	JobFailed    = fencedtype.JobFailed
	JobCancelled = fencedtype.JobCancelled
)

// Errors of job administration.
var (
	// ErrJobFinished: cancel of a job that already finished.
	ErrJobFinished = fencedtype.ErrJobFinished
	// ErrJobNotFinished: retry of a job that is not failed or cancelled.
	ErrJobNotFinished = fencedtype.ErrJobNotFinished
)

// JobStateError names the operation, the job and the state that refused it;
// it matches ErrJobFinished (cancel) or ErrJobNotFinished (retry).
type JobStateError = fencedtype.JobStateError

// ErrUniqueConflict matches every *UniqueConflictError.
var ErrUniqueConflict = fencedtype.ErrUniqueConflict

// UniqueConflictError refuses a retry that would put a unique job back
// into its unique states while another job holds its slot; it names that
// job.
type UniqueConflictError = fencedtype.UniqueConflictError

// Job is a job as stored, read in the statement that returned it.
type Job = fencedtype.Job

// JobRef identifies one attempt of a job: its id and the fence the claim
// granted.
type JobRef = fencedtype.JobRef

// JobAttempt is one attempt in a job's history.
type JobAttempt = fencedtype.JobAttempt

// Defaults and limits of enqueued jobs.
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 20
	MaxArgsBytes       = 1 << 20
	MaxPriority        = 10000
	MaxAttemptsLimit   = 1000
	DefaultListLimit   = 100
	MaxListLimit       = 1000
)

// queueName is the syntax of queue names.
var queueName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

// validQueue checks a queue name wherever one is given (enqueue, a claim, a
// worker's queues, a job list, limits, pauses): one message for the field
// wherever it is refused.
func validQueue(q string) error {
	if !queueName.MatchString(q) {
		return fencedtype.Invalid("queue", "%q must be 1–100 letters, digits, '_', '.', ':' or '-', starting with a letter or digit", q)
	}
	return nil
}

// EnqueueParams describe one job to enqueue.
type EnqueueParams struct {
	// Kind selects the handler. Required.
	Kind string
	// Args are the handler's arguments: json.RawMessage or []byte are taken
	// as JSON text; anything else is marshalled. Nil means {}. At most
	// MaxArgsBytes, and JSON every backend can store: UTF-8, nested at most
	// MaxJSONDepth deep, no \u0000 or unpaired surrogate escape, numbers
	// within a float64, no key given twice in one object.
	Args any
	// Queue is the queue to join. Default DefaultQueue.
	Queue string
	// Priority orders claims: 0 runs first. Default 0.
	Priority int
	// RunAt schedules the job; zero means now by the database clock (plus
	// Delay).
	RunAt time.Time
	// Delay schedules the job Delay after the database's now; used when RunAt
	// is zero.
	Delay time.Duration
	// MaxAttempts bounds the attempts before the job is failed (dead
	// letter). Default DefaultMaxAttempts.
	MaxAttempts int
	// IdempotencyKey, when set, makes a second enqueue with the same key
	// return the existing job instead of a new one (while that job exists).
	IdempotencyKey string
	// ConcurrencyKey, when set, bounds how many attempts of the queue's jobs
	// with this key run at once, by the limits declared with SetJobLimit; a
	// key with no declared limit is unlimited. A name (1–200 bytes).
	ConcurrencyKey string
	// SequenceKey, when set, runs the job only after every job enqueued
	// before it (lower id) in the same queue with the same sequence key,
	// and never while another job of the sequence runs. A name.
	SequenceKey string
	// SequenceContinueOnFailed lets the later jobs of the sequence run on
	// once this job failed (dead letter). By default a failed job blocks
	// its sequence until it is retried or deleted; a cancelled job never
	// blocks. Only with SequenceKey.
	SequenceContinueOnFailed bool
	// Metadata is a JSON object about the job, stored with it and read
	// back with it (Job.Metadata) by every attempt: trace context carried
	// from the producer to the worker (W3C "traceparent"), a tenant, the
	// producer's name. json.RawMessage or []byte are taken as JSON text;
	// anything else is marshalled (a map or a struct). It must be an
	// object, of at most MaxMetadataBytes, held to Args' rules of
	// storable JSON. Nil means none (Job.Metadata nil).
	Metadata any
	// Timeout bounds each attempt of this job: the handler's context ends
	// at it (cause ErrJobTimeout) and the attempt fails and is retried as
	// any failure. It overrides the kind's and the worker's (see
	// KindOptions.Timeout). Zero means none of its own; otherwise 1ms to
	// MaxJobTimeout. Stored with the job (Job.Timeout).
	Timeout time.Duration
	// Retry is this job's retry backoff after a failed attempt, computed
	// by the database as the failure is recorded; it overrides the kind's
	// retry policy and the worker's Backoff. Nil means none of its own.
	// Zero fields take DefaultBackoff's (Backoff.WithDefaults); stored so
	// (Job.Retry).
	Retry *Backoff
	// Unique, when set, makes the job unique: while a job of the same
	// unique key (the kind, and as chosen the args, queue and window of
	// RunAt) is in one of the unique states, an enqueue returns that job
	// (existing) instead of a new one. See UniqueOptions.
	Unique *UniqueOptions
	// Tags label the job for listings (JobFilter.Tags): at most MaxTags,
	// distinct, each 1 to MaxTagBytes of ASCII letters, digits and
	// "_.:-/" (validTag). A repeated tag is refused, not dropped. Nil or
	// empty means none (Job.Tags nil): such a job costs nothing more.
	Tags []string
}

// MaxMetadataBytes is the most bytes of JSON a job's metadata may take.
const MaxMetadataBytes = 64 << 10

// SetMetadata sets one key of p.Metadata to value (marshalled as JSON),
// keeping the others: enqueue middleware uses it to add what it carries
// (trace context) to what the caller gave. Metadata that is not a JSON
// object gives an *InvalidError and is left as it was.
func (p *EnqueueParams) SetMetadata(key string, value any) error {
	m := map[string]json.RawMessage{}
	if p.Metadata != nil {
		b, err := encodeJSON("metadata", p.Metadata)
		if err != nil {
			return err
		}
		if err := checkMetadata(b); err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fencedtype.Invalid("metadata", "is not a JSON object: %v", err)
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return fencedtype.Invalid("metadata", "value of %q cannot be encoded as JSON: %v", key, err)
	}
	m[key] = v
	b, err := json.Marshal(m)
	if err != nil {
		return fencedtype.Invalid("metadata", "cannot be encoded as JSON: %v", err)
	}
	p.Metadata = json.RawMessage(b)
	return nil
}

// checkMetadata checks a job's metadata as JSON text: an object of at most
// MaxMetadataBytes, storable by every backend.
func checkMetadata(b []byte) error {
	if len(b) > MaxMetadataBytes {
		return fencedtype.Invalid("metadata", "is %d bytes, the limit is %d", len(b), MaxMetadataBytes)
	}
	if err := validJSON("metadata", b); err != nil {
		return err
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fencedtype.Invalid("metadata", "must be a JSON object")
	}
	return nil
}

// EnqueueResult is one enqueued job, or the existing one its idempotency
// key matched.
type EnqueueResult = fencedtype.EnqueueResult

// Validate returns the *InvalidError Enqueue returns for p before it reaches
// the database, or nil. EnqueueMany and EnqueueBulk check each job of a
// batch so.
func (p EnqueueParams) Validate() error {
	_, err := p.validate()
	return err
}

// validate checks p and fills in its defaults for the driver.
func (p EnqueueParams) validate() (driver.EnqueueParams, error) {
	out := driver.EnqueueParams{Kind: p.Kind, Queue: p.Queue, Priority: p.Priority, RunAt: p.RunAt,
		Delay: p.Delay, MaxAttempts: p.MaxAttempts, IdempotencyKey: p.IdempotencyKey,
		ConcurrencyKey: p.ConcurrencyKey, SequenceKey: p.SequenceKey, SequenceContinueOnFailed: p.SequenceContinueOnFailed}
	if err := validName("kind", p.Kind); err != nil {
		return out, err
	}
	if out.Queue == "" {
		out.Queue = DefaultQueue
	}
	if err := validQueue(out.Queue); err != nil {
		return out, err
	}
	if p.Priority < 0 || p.Priority > MaxPriority {
		return out, fencedtype.Invalid("priority", "%d is outside 0 to %d", p.Priority, MaxPriority)
	}
	if out.MaxAttempts == 0 {
		out.MaxAttempts = DefaultMaxAttempts
	}
	if out.MaxAttempts < 1 || out.MaxAttempts > MaxAttemptsLimit {
		return out, fencedtype.Invalid("max_attempts", "%d is outside 1 to %d", p.MaxAttempts, MaxAttemptsLimit)
	}
	if p.Delay < 0 || p.Delay > 10*365*24*time.Hour {
		return out, fencedtype.Invalid("delay", "%s is negative or beyond ten years", p.Delay)
	}
	if y := p.RunAt.Year(); !p.RunAt.IsZero() && (y < 2000 || y > 9999) {
		return out, fencedtype.Invalid("run_at", "%s is out of range", p.RunAt)
	}
	if p.IdempotencyKey != "" {
		if err := validName("idempotency key", p.IdempotencyKey); err != nil {
			return out, err
		}
	}
	if p.ConcurrencyKey != "" {
		if err := validName("concurrency key", p.ConcurrencyKey); err != nil {
			return out, err
		}
	}
	if p.SequenceKey != "" {
		if err := validName("sequence key", p.SequenceKey); err != nil {
			return out, err
		}
	} else if p.SequenceContinueOnFailed {
		return out, fencedtype.Invalid("sequence continue on failed", "is set without a sequence key")
	}
	args, err := jsonArg("args", p.Args, []byte("{}"))
	out.Args = args
	if err != nil {
		return out, err
	}
	if p.Unique != nil {
		if err := p.Unique.fill(&out); err != nil {
			return out, err
		}
	}
	if err := validTags("tags", p.Tags); err != nil {
		return out, err
	}
	if len(p.Tags) > 0 {
		out.Tags = p.Tags
	}
	if p.Metadata != nil {
		if out.Metadata, err = encodeJSON("metadata", p.Metadata); err != nil {
			return out, err
		}
		if string(out.Metadata) == "null" { // a nil map or pointer marshalled: none
			out.Metadata = nil
		} else if err := checkMetadata(out.Metadata); err != nil {
			return out, err
		}
	}
	if err := validTimeout("timeout", p.Timeout); err != nil {
		return out, err
	}
	var retry *Backoff
	if p.Retry != nil {
		b := p.Retry.WithDefaults()
		retry = &b
	}
	out.Policy = driver.EncodeJobPolicy(p.Timeout, retry)
	return out, nil
}

// jsonArg turns a value into JSON text of at most MaxArgsBytes that every
// backend can store (see checkStorableJSON); nil gives def.
func jsonArg(field string, v any, def []byte) ([]byte, error) {
	if v == nil {
		return def, nil
	}
	b, err := encodeJSON(field, v)
	if err != nil {
		return nil, err
	}
	return b, checkJSONArg(field, b)
}

// encodeJSON turns a non-nil value into JSON text without checking it:
// json.RawMessage or []byte as given, anything else marshalled.
func encodeJSON(field string, v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fencedtype.Invalid(field, "cannot be encoded as JSON: %v", err)
	}
	return b, nil
}

// checkJSONArg checks JSON text given to the library: at most
// MaxArgsBytes, valid and storable by every backend.
func checkJSONArg(field string, b []byte) error {
	if len(b) > MaxArgsBytes {
		return fencedtype.Invalid(field, "is %d bytes, the limit is %d", len(b), MaxArgsBytes)
	}
	return validJSON(field, b)
}

// Enqueue adds one job. With an idempotency key that exists already, or
// unique options whose slot another job holds, that job is returned with
// existing = true.
func (c *Client) Enqueue(ctx context.Context, p EnqueueParams) (job *Job, existing bool, err error) {
	res, err := c.EnqueueMany(ctx, nil, []EnqueueParams{p})
	if err != nil {
		return nil, false, err
	}
	return res[0].Job, res[0].Existing, nil
}

// EnqueueTx adds one job inside the caller's transaction: the job exists
// only if that transaction commits. tx is a fenced transaction's Tx, or the
// caller's own wrapped with the driver's WrapTx.
func (c *Client) EnqueueTx(ctx context.Context, tx Tx, p EnqueueParams) (job *Job, existing bool, err error) {
	res, err := c.EnqueueMany(ctx, tx, []EnqueueParams{p})
	if err != nil {
		return nil, false, err
	}
	return res[0].Job, res[0].Existing, nil
}

// EnqueueMany adds a batch of jobs in one statement (one short transaction
// on SQLite), inside tx when it is non-nil. The Client's enqueue middleware
// sees the batch first; then every job is validated; one invalid job
// rejects the batch and nothing is written.
func (c *Client) EnqueueMany(ctx context.Context, tx Tx, ps []EnqueueParams) ([]EnqueueResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	b := &EnqueueBatch{Jobs: slices.Clone(ps), Tx: tx}
	out, err := c.enqueue(ctx, b, c.enqueueMany)
	return out.Results, err
}

// enqueueMany is EnqueueMany after the enqueue middleware.
func (c *Client) enqueueMany(ctx context.Context, b *EnqueueBatch) (Enqueued, error) {
	tx := b.Tx
	if len(b.Jobs) == 0 {
		return Enqueued{}, nil
	}
	in, err := validateBatch(b.Jobs)
	if err != nil {
		return Enqueued{}, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return Enqueued{}, err
	}
	out, err := jd.Enqueue(ctx, tx, in)
	if err != nil {
		return Enqueued{}, err
	}
	n := 0
	for _, r := range out {
		if !r.Existing {
			n++
			if tx == nil {
				// Committed: wake this Client's waiters on those queues.
				// (Inside the caller's transaction the jobs exist only once
				// it commits; a backend that notifies wakes them then,
				// others poll.)
				c.waker.wake(r.Job.Queue)
			}
		}
	}
	return Enqueued{Results: out, Inserted: n}, nil
}

// EnqueueBulk adds a batch of jobs as EnqueueMany does, validated the same
// way, but does not read them back: it returns only how many jobs it
// inserted (a job whose idempotency key exists already is not counted).
// It is the cheaper way to enqueue many jobs: on PostgreSQL a batch of
// jobs that run now without idempotency keys is copied in (COPY), any other
// batch inserted without the jobs' rows sent back; on SQLite the batch is
// one statement; on MySQL the inserts are EnqueueMany's, with nothing read
// back; a backend without a bulk insert (driver.BulkEnqueuer) enqueues as
// EnqueueMany does and counts. Once a standalone
// batch inserted a job, this Client's idle workers of the batch's queues
// are woken. The Client's enqueue middleware sees the batch (with Bulk set).
func (c *Client) EnqueueBulk(ctx context.Context, tx Tx, ps []EnqueueParams) (int, error) {
	if len(ps) == 0 {
		return 0, nil
	}
	b := &EnqueueBatch{Jobs: slices.Clone(ps), Tx: tx, Bulk: true}
	out, err := c.enqueue(ctx, b, c.enqueueBulk)
	return out.Inserted, err
}

// enqueueBulk is EnqueueBulk after the enqueue middleware.
func (c *Client) enqueueBulk(ctx context.Context, b *EnqueueBatch) (Enqueued, error) {
	tx := b.Tx
	if len(b.Jobs) == 0 {
		return Enqueued{}, nil
	}
	in, err := validateBatch(b.Jobs)
	if err != nil {
		return Enqueued{}, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return Enqueued{}, err
	}
	var n int
	if c.caps.bulk != nil {
		n, err = c.caps.bulk.EnqueueBulk(ctx, tx, in)
	} else {
		var out []EnqueueResult
		out, err = jd.Enqueue(ctx, tx, in)
		for _, r := range out {
			if !r.Existing {
				n++
			}
		}
	}
	if err == nil && tx == nil && n > 0 {
		// Committed: wake this Client's waiters on the batch's queues.
		woken := map[string]bool{}
		for _, p := range in {
			if !woken[p.Queue] {
				c.waker.wake(p.Queue)
				woken[p.Queue] = true
			}
		}
	}
	if err != nil {
		return Enqueued{}, err
	}
	return Enqueued{Inserted: n}, nil
}

// validateBatch validates a batch of jobs for the driver: one invalid job
// rejects the batch.
func validateBatch(ps []EnqueueParams) ([]driver.EnqueueParams, error) {
	in := make([]driver.EnqueueParams, len(ps))
	for i, p := range ps {
		var err error
		if in[i], err = p.validate(); err != nil {
			if len(ps) > 1 {
				err = fmt.Errorf("job %d of %d: %w", i+1, len(ps), err)
			}
			return nil, err
		}
	}
	return in, nil
}

// GetJob reads a job and its attempt history (the running attempt last).
func (c *Client) GetJob(ctx context.Context, id int64) (*Job, []JobAttempt, error) {
	if id <= 0 {
		return nil, nil, fencedtype.Invalid("job id", "%d is not positive", id)
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, nil, err
	}
	r, attempts, err := jd.GetJob(ctx, id)
	if err != nil {
		return nil, nil, withJobID(id, err)
	}
	return r, attempts, nil
}

// JobFilter selects jobs for ListJobs. Zero fields do not filter; Limit
// defaults to DefaultListLimit and is at most MaxListLimit.
type JobFilter = fencedtype.JobFilter

// ValidateListJobs returns the *InvalidError ListJobs returns for this filter
// before it reaches the database, or nil.
func ValidateListJobs(f JobFilter) error {
	if f.State != "" && !f.State.Valid() {
		return fencedtype.Invalid("state", "%q is not one of queued, running, succeeded, failed, cancelled", f.State)
	}
	if f.Queue != "" {
		if err := validQueue(f.Queue); err != nil {
			return err
		}
	}
	if f.Limit < 0 || f.Limit > MaxListLimit { // 0 is DefaultListLimit
		return fencedtype.Invalid("limit", "%d is outside 1 to %d", f.Limit, MaxListLimit)
	}
	if f.AfterID < 0 {
		return fencedtype.Invalid("after", "%d is negative", f.AfterID)
	}
	if f.BeforeID < 0 {
		return fencedtype.Invalid("before", "%d is negative", f.BeforeID)
	}
	if f.Kind != "" {
		if err := validName("kind", f.Kind); err != nil {
			return err
		}
	}
	return validTagsFilter(f)
}

// ListJobs lists jobs in id order (ascending, or descending with Desc), a
// page at a time: keyset paging with AfterID / BeforeID.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]*Job, error) {
	if err := ValidateListJobs(f); err != nil {
		return nil, err
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.ListJobs(ctx, f)
}

// JobCount is the number of jobs in one queue and state.
type JobCount = fencedtype.JobCount

// CountJobs counts jobs by queue and state.
func (c *Client) CountJobs(ctx context.Context) ([]JobCount, error) {
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.CountJobs(ctx)
}

// CancelJob cancels a queued job at once, or asks a running one to stop: its
// worker learns it at its next heartbeat, its handler's context is cancelled,
// and its final write records cancelled. A finished job gives ErrJobFinished.
func (c *Client) CancelJob(ctx context.Context, id int64) (*Job, error) {
	return c.jobAdmin(ctx, id, driver.JobDriver.CancelJob)
}

// RetryJob puts a failed or cancelled job back to queued, to run now, with
// MaxAttempts more attempts, and wakes this Client's waiting claims on its
// queue. Other states give ErrJobNotFinished.
func (c *Client) RetryJob(ctx context.Context, id int64) (*Job, error) {
	j, err := c.jobAdmin(ctx, id, driver.JobDriver.RetryJob)
	if err == nil {
		c.waker.wake(j.Queue)
	}
	return j, err
}

// DeleteJob deletes a job in any state, with its attempt history. A running
// job's worker is not told: its next heartbeat, progress or end finds no
// job (ErrNotFound), so it can write nothing more, and JobTx refuses it;
// its handler runs on until that heartbeat. Meanwhile its attempt no
// longer counts against a concurrency limit. Deleting a failed job unblocks
// its sequence. A missing job gives ErrNotFound.
func (c *Client) DeleteJob(ctx context.Context, id int64) error {
	if id <= 0 {
		return fencedtype.Invalid("job id", "%d is not positive", id)
	}
	jd, err := c.jobQueue()
	if err != nil {
		return err
	}
	return withJobID(id, jd.DeleteJob(ctx, id))
}

func (c *Client) jobAdmin(ctx context.Context, id int64, op func(driver.JobDriver, context.Context, int64) (*fencedtype.Job, error)) (*Job, error) {
	if id <= 0 {
		return nil, fencedtype.Invalid("job id", "%d is not positive", id)
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	r, err := op(jd, ctx, id)
	if err != nil {
		return nil, withJobID(id, err)
	}
	return r, nil
}

// withJobID names the job in a bare ErrNotFound.
func withJobID(id int64, err error) error {
	if err == fencedtype.ErrNotFound {
		return fmt.Errorf("job %d: %w", id, err)
	}
	return err
}

// ParseJobID parses a job id from text (a CLI argument, a URL).
func ParseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fencedtype.Invalid("job id", "%q is not a positive integer", s)
	}
	return id, nil
}

// Backoff is an exponential retry delay with jitter: attempt n waits
// min(Max, Base·2^(n−1)), scaled by a random factor in [1−Jitter, 1].
type Backoff = fencedtype.Backoff

// DefaultBackoff is the backoff used when none is configured.
var DefaultBackoff = fencedtype.DefaultBackoff
