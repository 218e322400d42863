package fencedtype

import (
	"encoding/json"
	"time"
)

// JobState is one of a job's six states.
type JobState string

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
// (docs/design.md §6.18); no claim takes it. succeeded, failed and
// cancelled are the finished states.
const (
	JobPending   JobState = "pending"
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Finished reports whether s is terminal: succeeded, failed or cancelled.
func (s JobState) Finished() bool {
	return s == JobSucceeded || s == JobFailed || s == JobCancelled
}

// Valid reports whether s is one of the six states.
func (s JobState) Valid() bool {
	return s == JobPending || s == JobQueued || s == JobRunning || s.Finished()
}

// Job is a job as stored, read in the statement that returned it.
type Job struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args"`
	Queue       string          `json:"queue"`
	Priority    int             `json:"priority"` // 0 runs first; larger numbers wait for smaller ones
	State       JobState        `json:"state"`
	Attempt     int             `json:"attempt"` // attempts started so far; the running one included
	MaxAttempts int             `json:"max_attempts"`
	// Fence is the current attempt's fencing token, bumped by every claim.
	// A worker's writes for the job carry it and are refused once it moved on.
	Fence           int64           `json:"fence"`
	Owner           string          `json:"owner"` // the worker of the last attempt
	RunAt           time.Time       `json:"run_at"`
	LeaseExpiresAt  *time.Time      `json:"lease_expires_at"` // set while running
	CancelRequested bool            `json:"cancel_requested"`
	Output          json.RawMessage `json:"output"` // set on success
	// LastError is the error of the last attempt that failed, was
	// cancelled or was lost, while the job has not succeeded: a completion
	// clears it (the attempt history keeps every attempt's error).
	LastError      string          `json:"error"`
	Progress       json.RawMessage `json:"progress"` // the running attempt's last progress report
	IdempotencyKey string          `json:"idempotency_key"`
	// ConcurrencyKey, when set, counts the job's running attempts against
	// the per-key limit declared for its queue (see JobLimit); "" for none.
	ConcurrencyKey string `json:"concurrency_key"`
	// SequenceKey, when set, runs the job only after every earlier job
	// (by id) of the same queue and sequence key, one at a time; "" for none.
	SequenceKey string `json:"sequence_key"`
	// SequenceContinueOnFailed: when this job ends failed (dead letter), the
	// later jobs of its sequence run on. By default a failed job blocks its
	// sequence until it is retried or deleted.
	SequenceContinueOnFailed bool `json:"sequence_continue_on_failed"`
	// Metadata is the JSON object given with the job at enqueue (trace
	// context, a tenant, the producer's name), carried unchanged from the
	// producer to every attempt; nil when none was given. Unlike Args it
	// is not the handler's input but about the job.
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"created_at"`
	AttemptedAt *time.Time      `json:"attempted_at"` // start of the last attempt
	FinishedAt  *time.Time      `json:"finished_at"`
	// DecidedAt is the database clock reading of the statement that
	// returned this job (the claim, enqueue, cancel or read).
	DecidedAt time.Time `json:"-"`
	// Timeout is the job's own attempt timeout, given at enqueue
	// (EnqueueParams.Timeout); 0 when none. A worker uses it before its
	// kind's and its own (JSON: timeout_ms, null when none).
	Timeout time.Duration `json:"-"`
	// Retry is the job's own retry backoff, given at enqueue
	// (EnqueueParams.Retry); nil when none. A worker uses it before its
	// kind's retry policy and its own Backoff (JSON: retry, an object of
	// base_ms, max_ms and jitter, null when none). It is stored as
	// WithDefaults returned it, so a Jitter of 0 here means none;
	// Retry.Restored() is it in the form a Backoff is given in.
	Retry *Backoff `json:"-"`
	// Tags are the job's tags as given at enqueue (distinct, in the order
	// given); nil when it has none. Listings filter by them (JobFilter.Tags).
	Tags []string `json:"tags"`
	// WorkflowID is the workflow the job is a task of; 0 when none.
	WorkflowID int64 `json:"workflow_id"`
	// TaskName is its task's name in that workflow; "" when none.
	TaskName string `json:"task_name"`
}

// Ref is the job's current attempt, as its worker passes it to guarded writes.
func (j *Job) Ref() JobRef { return JobRef{ID: j.ID, Fence: j.Fence} }

// JobRef identifies one attempt of a job: its id and the fence the claim
// granted.
type JobRef struct {
	ID    int64
	Fence int64
}

// Attempt outcomes recorded in the history.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeRetry     = "retry"     // failed, will run again
	OutcomeFailed    = "failed"    // failed, attempts exhausted or discarded
	OutcomeSnoozed   = "snoozed"   // put back to run later, attempt not counted
	OutcomeCancelled = "cancelled" // ended by a cancel request
	OutcomeLost      = "lost"      // lease expired; taken back by recovery
	OutcomeRunning   = "running"   // the attempt in progress
)

// JobAttempt is one attempt in a job's history. EndedAt is nil while the
// attempt runs (Outcome "running").
type JobAttempt struct {
	Attempt   int        `json:"attempt"`
	Fence     int64      `json:"fence"`
	Owner     string     `json:"owner"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Outcome   string     `json:"outcome"`
	Error     string     `json:"error"`
}

// EndKind says how an attempt ends.
type EndKind string

// The ways a worker ends an attempt.
const (
	EndComplete EndKind = "complete"
	EndFail     EndKind = "fail"
	EndSnooze   EndKind = "snooze"
	EndCancel   EndKind = "cancel"
)

// JobEnd is a worker's final write for one attempt.
type JobEnd struct {
	Ref    JobRef
	Kind   EndKind
	Output json.RawMessage // complete: JSON, may be nil
	Error  string          // fail, cancel
	Delay  time.Duration   // fail: retry delay; snooze: delay
	// Backoff, set on a fail, retries after this attempt's backoff instead
	// of Delay (which is then ignored): min(Max, Base·2^(attempt−1)) scaled
	// by a random factor in [1−Jitter, 1], computed by the database from
	// the job's attempt number in the statement that records the failure.
	// Zero fields take DefaultBackoff's (Backoff.WithDefaults).
	Backoff *Backoff
	// Discard makes a failure final whatever attempts remain.
	Discard bool
}

// JobEnded is the answer to an end that held (see EndJob).
type JobEnded struct {
	// At is the database clock reading the attempt's end was recorded at:
	// its ended_at, the base of a retry's or snooze's run_at. A replay's is
	// the first end's.
	At time.Time
	// Replayed is true when the attempt had already ended this same way
	// (the same kind, with the same output or error message;
	// docs/design.md §6.5): the end is answered as the first one was, and
	// nothing was written this time.
	Replayed bool
}

// HeartbeatResult reports, per job, how a heartbeat went.
type HeartbeatResult struct {
	Extended        []int64 // still running under the caller's fence
	Lost            []int64 // no longer the caller's: stale or gone
	CancelRequested []int64 // extended, but asked to stop
	// Busy jobs are still current but were not extended this time: their row
	// was held by an open transaction of their own attempt (a JobTx).
	Busy      []int64
	ExpiresAt time.Time // the new expiry of the extended ones
}

// JobHeartbeat is how a heartbeat left one running attempt (see
// HeartbeatJob).
type JobHeartbeat struct {
	// ExpiresAt is the attempt's lease expiry now, by the database clock.
	ExpiresAt time.Time
	// CancelRequested: the job was asked to cancel; the worker should stop
	// and end the attempt (it then ends cancelled).
	CancelRequested bool
	// Extended is false when the attempt is current but its row was held
	// by an open transaction of that same attempt (a JobTx, or its own
	// progress or final write in flight): the lease was not extended this
	// time, ExpiresAt is the lease as it stands, and the next heartbeat
	// extends it.
	Extended bool
	// DecidedAt is the database clock reading the answer was decided at:
	// for an extension, the reading the new expiry was computed from
	// (ExpiresAt minus the ttl).
	DecidedAt time.Time
}

// JobCount is the number of jobs in one queue and state.
type JobCount struct {
	Queue string
	State JobState
	Count int64
}

// JobFilter selects jobs to list. Zero fields do not filter.
//
// AfterID and BeforeID bound the ids (exclusive) for keyset paging: a
// page ascending continues with AfterID set to its last id, a page
// descending with BeforeID set to its last id. Desc lists the newest
// (highest id) first.
type JobFilter struct {
	State    JobState
	Queue    string
	Kind     string
	AfterID  int64 // only ids above it: the last id of the previous page ascending
	BeforeID int64 // only ids below it (0: no bound): the last id of the previous page descending
	Desc     bool  // id descending (newest first) instead of ascending
	Limit    int   // the page size
	// Failing keeps only jobs whose last attempt failed and that have not
	// succeeded since (their LastError is set): with State queued, the
	// jobs waiting to retry. The database filters them, so a page of them
	// costs no read of the rest in the client.
	Failing bool
	// Tags, when not empty, keeps only jobs carrying one of these tags
	// (TagsMatch TagsAny, the default) or all of them (TagsAll).
	Tags []string
	// TagsMatch says how Tags match: TagsAny (also "") or TagsAll.
	TagsMatch TagsMatch
}

// TagsMatch is how a listing's tags filter matches a job's tags.
type TagsMatch string

const (
	// TagsAny keeps jobs carrying at least one of the filter's tags.
	TagsAny TagsMatch = "any"
	// TagsAll keeps jobs carrying every one of the filter's tags.
	TagsAll TagsMatch = "all"
)

// EnqueueResult is one enqueued job.
type EnqueueResult struct {
	Job *Job
	// Existing is true when the idempotency key matched an existing job,
	// or another job held the unique slot (EnqueueParams.Unique), and that
	// job is returned instead of a new one.
	Existing bool
}
