package driver

import (
	"context"
	"time"
)

// JobState is one of the five states of a job.
type JobState string

// The states of a job. queued includes scheduled jobs and jobs waiting to
// retry (run_at in the future); failed is the dead letter.
const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Finished reports whether s is terminal.
func (s JobState) Finished() bool {
	return s == JobSucceeded || s == JobFailed || s == JobCancelled
}

// Valid reports whether s is one of the five states.
func (s JobState) Valid() bool { return s == JobQueued || s == JobRunning || s.Finished() }

// Attempt outcomes recorded in the history.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeRetry     = "retry"     // failed, will run again
	OutcomeFailed    = "failed"    // failed, attempts exhausted or discarded
	OutcomeSnoozed   = "snoozed"   // put back to run later, attempt not counted
	OutcomeCancelled = "cancelled" // ended by a cancel request
	OutcomeLost      = "lost"      // lease expired; taken back by recovery
)

// JobDriver is the job-queue half of a backend. Every worker-owned write is
// guarded by id + fence + state = running + unexpired lease in the same
// statement; zero rows is diagnosed into *StaleError or ErrNotFound.
type JobDriver interface {
	// JobInsert enqueues jobs in one statement (or one short transaction),
	// or, with tx non-nil, inside the caller's transaction. A job whose
	// idempotency key exists already yields the existing job.
	JobInsert(ctx context.Context, tx Tx, jobs []JobInsertParams) ([]JobInsertResult, error)
	// JobClaim moves up to Limit eligible queued jobs of Queue to running,
	// bumping fence and attempt, in one statement.
	JobClaim(ctx context.Context, p JobClaimParams) ([]*JobRow, error)
	// JobHeartbeat extends the leases of a worker's running jobs (distinct
	// ids) in one statement and reports which are lost or asked to cancel.
	JobHeartbeat(ctx context.Context, refs []JobRef, ttl time.Duration) (*HeartbeatResult, error)
	// JobFinish records the end of attempts (complete, fail, snooze, cancel)
	// in one statement; tx non-nil runs it inside the caller's transaction.
	// Each result is nil or the diagnosed error for that job.
	JobFinish(ctx context.Context, tx Tx, ends []JobEnd) ([]error, error)
	// JobProgress stores a running attempt's progress.
	JobProgress(ctx context.Context, ref JobRef, progress []byte) error
	// JobTx runs fn in a transaction that share-locks the job row and checks
	// the attempt is current (see LeaseTx).
	JobTx(ctx context.Context, ref JobRef, fn func(Tx) error) error
	// JobCancel cancels a queued job at once and asks a running one to stop.
	JobCancel(ctx context.Context, id int64) (*JobRow, error)
	// JobRetry puts a failed or cancelled job back to queued.
	JobRetry(ctx context.Context, id int64) (*JobRow, error)
	// JobGet reads one job with its attempt history.
	JobGet(ctx context.Context, id int64) (*JobRow, []JobAttempt, error)
	// JobList lists jobs by id.
	JobList(ctx context.Context, p JobListParams) ([]*JobRow, error)
	// JobCounts counts jobs by queue and state.
	JobCounts(ctx context.Context) ([]JobCount, error)
	// JobRecover takes back up to limit running jobs whose lease expired:
	// to queued with backoff, or failed when attempts are exhausted. Each
	// row is re-checked on state, observed fence and expiry. When guard is
	// non-nil, it runs inside a transaction guarded by that lease.
	JobRecover(ctx context.Context, guard *LeaseRef, limit int, backoff Backoff) (int, error)
	// JobDeleteFinished deletes up to limit finished jobs older than age.
	JobDeleteFinished(ctx context.Context, guard *LeaseRef, age time.Duration, limit int) (int, error)
}

// Backoff describes the retry delay the database computes for recovered
// jobs: min(Max, Base·2^(attempt−1)), scaled by a random factor in
// [1−Jitter, 1].
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// JobInsertParams are the inputs of one enqueued job.
type JobInsertParams struct {
	Kind           string
	Queue          string
	Args           []byte // JSON
	Priority       int    // 0 runs first
	RunAt          time.Time
	Delay          time.Duration // used when RunAt is zero: db_now + Delay
	MaxAttempts    int
	IdempotencyKey string // optional
}

// JobInsertResult is one enqueued (or found) job.
type JobInsertResult struct {
	Job      *JobRow
	Existing bool // the idempotency key matched a job enqueued before
}

// JobClaimParams are the inputs of JobClaim.
type JobClaimParams struct {
	Queue string
	Owner string
	Limit int
	TTL   time.Duration
}

// JobRef identifies one attempt of a job as its worker knows it.
type JobRef struct {
	ID    int64
	Fence int64
}

// JobEndKind says how an attempt ends.
type JobEndKind string

// The ways a worker ends an attempt.
const (
	EndComplete JobEndKind = "complete"
	EndFail     JobEndKind = "fail"
	EndSnooze   JobEndKind = "snooze"
	EndCancel   JobEndKind = "cancel"
)

// JobEnd is a worker's final write for one attempt.
type JobEnd struct {
	Ref    JobRef
	Kind   JobEndKind
	Output []byte        // complete: JSON, may be nil
	Error  string        // fail, cancel
	Delay  time.Duration // fail: retry delay; snooze: delay
	// Discard makes a failure final whatever attempts remain.
	Discard bool
}

// HeartbeatResult reports, per job, how a heartbeat went.
type HeartbeatResult struct {
	Extended        []int64 // still running under the caller's fence
	Lost            []int64 // no longer the caller's: stale or gone
	CancelRequested []int64 // extended, but asked to stop
	// Busy jobs are still current but were not extended this time: their row
	// was held by an open transaction of their own attempt (a JobTx).
	Busy      []int64
	ExpiresAt time.Time
}

// JobRow is a job as stored.
type JobRow struct {
	ID              int64
	Kind            string
	Queue           string
	Args            []byte
	Priority        int
	State           JobState
	Attempt         int
	MaxAttempts     int
	Fence           int64
	Owner           string // the last attempt's worker
	RunAt           time.Time
	LeaseExpiresAt  *time.Time // while running
	CancelRequested bool
	Output          []byte // JSON, set on success
	LastError       string
	Progress        []byte // JSON, the running attempt's last progress
	IdempotencyKey  string
	CreatedAt       time.Time
	AttemptedAt     *time.Time // start of the last attempt
	FinishedAt      *time.Time
	Now             time.Time // the database clock of the read
}

// JobAttempt is one recorded attempt.
type JobAttempt struct {
	Attempt   int
	Fence     int64
	Owner     string
	StartedAt time.Time
	EndedAt   *time.Time // nil while running
	Outcome   string     // "running" while running
	Error     string
}

// JobListParams filter JobList. Zero values mean no filter.
type JobListParams struct {
	State   JobState
	Queue   string
	Kind    string
	AfterID int64 // page after this id
	Limit   int
}

// JobCount is the number of jobs in one queue and state.
type JobCount struct {
	Queue string
	State JobState
	Count int64
}

// DiagnoseJob explains why a guarded write on ref changed nothing, given the
// job as read afterwards (nil when it does not exist).
func DiagnoseJob(ref JobRef, row *JobRow) error {
	if row == nil {
		return ErrNotFound
	}
	e := &StaleError{Kind: "job", Name: itoa(ref.ID), Fence: ref.Fence, CurrentFence: row.Fence}
	running := row.State == JobRunning && row.LeaseExpiresAt != nil && row.LeaseExpiresAt.After(row.Now)
	if running {
		e.CurrentOwner = row.Owner
	}
	switch {
	case row.Fence != ref.Fence:
		e.Reason = ReasonSuperseded
	case row.State != JobRunning:
		e.Reason = ReasonNotRunning
	default:
		e.Reason = ReasonExpired
	}
	return e
}

// WithRunningAttempt appends the attempt in progress, which lives on the job
// row until it ends, to the recorded history.
func WithRunningAttempt(j *JobRow, ended []JobAttempt) []JobAttempt {
	if j.State != JobRunning || j.AttemptedAt == nil {
		return ended
	}
	return append(ended, JobAttempt{Attempt: j.Attempt, Fence: j.Fence, Owner: j.Owner,
		StartedAt: *j.AttemptedAt, Outcome: string(JobRunning)})
}

// JobNotifier is implemented by backends that can wake idle workers when
// jobs are enqueued (PostgreSQL LISTEN/NOTIFY). Others are polled.
type JobNotifier interface {
	// JobListen calls wake with a queue name whenever jobs were enqueued in
	// it, until ctx ends or the connection fails.
	JobListen(ctx context.Context, wake func(queue string)) error
}
