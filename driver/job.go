package driver

import (
	"context"
	"strconv"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// JobDriver is the job queue, a capability a backend implements beside its
// Driver (the SQL backends do; etcd does not). Every worker-owned write is
// guarded by id + fence + state = running + unexpired lease in the same
// statement; zero rows is diagnosed into *fencedtype.StaleError or fencedtype.ErrNotFound.
type JobDriver interface {
	// Enqueue enqueues jobs in one statement (or one short transaction),
	// or, with tx non-nil, inside the caller's transaction. A job whose
	// idempotency key exists already yields the existing job.
	Enqueue(ctx context.Context, tx Tx, jobs []EnqueueParams) ([]fencedtype.EnqueueResult, error)
	// ClaimJobs moves up to Limit eligible queued jobs of Queue (of one of
	// Kinds when it is not empty) to running, bumping fence and attempt, in
	// one statement: the kind filter is part of the pick.
	ClaimJobs(ctx context.Context, p ClaimJobsParams) ([]*fencedtype.Job, error)
	// HeartbeatJobs extends the leases of a worker's running jobs (distinct
	// ids) in one statement and reports which are lost or asked to cancel.
	HeartbeatJobs(ctx context.Context, refs []fencedtype.JobRef, ttl time.Duration) (*fencedtype.HeartbeatResult, error)
	// HeartbeatJob extends one running attempt's lease to ttl from the
	// database's now, without waiting for a row held by a transaction of
	// the attempt itself (then the answer is the lease as it stands,
	// Extended false). An attempt no longer current gets its diagnosed
	// *fencedtype.StaleError or fencedtype.ErrNotFound (DiagnoseHeartbeat).
	HeartbeatJob(ctx context.Context, ref fencedtype.JobRef, ttl time.Duration) (*fencedtype.JobHeartbeat, error)
	// EndJobs records the end of attempts (complete, fail, snooze, cancel)
	// in one statement; tx non-nil runs it inside the caller's transaction.
	// Each errs[i] is nil or the diagnosed error for that job (a
	// *fencedtype.StaleError carries the diagnosing read's clock); each
	// ended[i] is, when errs[i] is nil, the database clock reading end i
	// was recorded at (its attempt's ended_at, the base of a retry's or
	// snooze's run_at). An end that wrote nothing because its attempt had
	// already ended the same way is a replay (DiagnoseEnd): errs[i] nil,
	// ended[i] Replayed at the first end's reading. The replay is decided
	// by the read that diagnoses the refusal, in the same transaction.
	EndJobs(ctx context.Context, tx Tx, ends []fencedtype.JobEnd) (errs []error, ended []fencedtype.JobEnded, err error)
	// ReportProgress stores a running attempt's progress and returns the
	// database clock reading it was stored at.
	ReportProgress(ctx context.Context, ref fencedtype.JobRef, progress []byte) (time.Time, error)
	// MergeJobMetadata applies patch (a JSON object) to the job's metadata
	// as a JSON Merge Patch (RFC 7396), a missing metadata taken as {}, in
	// one statement guarded like ReportProgress, and returns the merged
	// metadata and the database clock reading it was merged at. A merged object over maxBytes (as the database prints it)
	// is refused with a *fencedtype.InvalidError of "metadata" and nothing
	// is written (DiagnoseMerge); a stale attempt gets its diagnosis.
	MergeJobMetadata(ctx context.Context, ref fencedtype.JobRef, patch []byte, maxBytes int) ([]byte, time.Time, error)
	// JobTx runs fn in a transaction that share-locks the job row and checks
	// the attempt is current (see LeaseTx).
	JobTx(ctx context.Context, ref fencedtype.JobRef, fn func(Tx) error) error
	// CancelJob cancels a queued job at once and asks a running one to stop.
	CancelJob(ctx context.Context, id int64) (*fencedtype.Job, error)
	// RetryJob puts a failed or cancelled job back to queued.
	RetryJob(ctx context.Context, id int64) (*fencedtype.Job, error)
	// DeleteJob deletes one job, in any state, with its attempt history;
	// fencedtype.ErrNotFound when there is none. Job ids are never reused,
	// so every later write of a deleted job's attempt (whose JobRef names
	// the id) finds no row and fails with ErrNotFound.
	DeleteJob(ctx context.Context, id int64) error
	// GetJob reads one job with its attempt history, both as of one moment
	// (one snapshot): never a row still running with its attempt ended.
	GetJob(ctx context.Context, id int64) (*fencedtype.Job, []fencedtype.JobAttempt, error)
	// ListJobs lists jobs by id, ascending or (Desc) descending, within
	// AfterID and BeforeID (0: unbounded), in one statement.
	ListJobs(ctx context.Context, p fencedtype.JobFilter) ([]*fencedtype.Job, error)
	// CountJobs counts jobs by queue and state.
	CountJobs(ctx context.Context) ([]fencedtype.JobCount, error)
	// RecoverJobs takes back up to limit running jobs whose lease expired:
	// to queued with backoff, or failed when attempts are exhausted. Each
	// row is re-checked on state, observed fence and expiry. When guard is
	// non-nil, it runs inside a transaction guarded by that lease.
	RecoverJobs(ctx context.Context, guard *LeaseRef, limit int, backoff fencedtype.Backoff) (int, error)
	// DeleteFinishedJobs deletes up to limit finished jobs older than age.
	DeleteFinishedJobs(ctx context.Context, guard *LeaseRef, age time.Duration, limit int) (int, error)

	// SetJobLimit stores a declared limit, replacing the one of the same
	// scope (queue, kind, concurrency key), in one statement. It returns
	// the limit as stored.
	SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error)
	// DeleteJobLimit deletes the limit of one scope; fencedtype.ErrNotFound
	// when there is none.
	DeleteJobLimit(ctx context.Context, queue, kind, concurrencyKey string) error
	// ListJobLimits lists the declared limits of queue (every queue when
	// empty), by queue, kind and key.
	ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error)
	// ListKeySlots reads, in one statement, the load of every concurrency
	// key of queue (every queue when empty) that has running or due queued
	// jobs, by queue and key (see fencedtype.KeySlots); only keyed jobs are
	// read.
	ListKeySlots(ctx context.Context, queue string) ([]fencedtype.KeySlots, error)

	// PauseQueue stores a pause of queue, unless it is paused already, and
	// returns the pause as stored (an earlier pause keeps its time) and
	// whether this call stored it. Every claim statement that starts after
	// it returns finds the pause and takes no job of the queue.
	PauseQueue(ctx context.Context, queue string) (*fencedtype.QueuePause, bool, error)
	// ResumeQueue deletes the pause of queue in one statement: true when
	// the queue was paused, false when it was not (nothing changed). A
	// backend that notifies (JobListener) notifies the queue when it
	// resumes one, as an enqueue does.
	ResumeQueue(ctx context.Context, queue string) (bool, error)
	// ListQueuePauses lists the paused queues by name.
	ListQueuePauses(ctx context.Context) ([]fencedtype.QueuePause, error)

	// RollupJobMinute rolls up the minute of the database clock that
	// starts at minute (over by then), writing in one transaction: a row
	// per queue with anything to count (fencedtype.JobMinute) and a marker
	// row of queue "" saying the minute is done, unless the marker is
	// there already: then it changes nothing and returns false. A backend
	// may read the minute before that transaction, in short statements of
	// their own. With depth it counts each queue's queued jobs now (the
	// marker's Depth is their total), else stores Depth -1. It also
	// deletes the rows of minutes before keepSince.
	RollupJobMinute(ctx context.Context, minute time.Time, depth bool, keepSince time.Time) (bool, error)
	// ListJobMinutes reads the rolled-up rows of the minutes at or after
	// since, markers included, ordered by minute and queue.
	ListJobMinutes(ctx context.Context, since time.Time) ([]fencedtype.JobMinute, error)
}

// BulkEnqueuer is a JobDriver with a cheaper way to enqueue a batch whose
// caller needs only how many jobs were inserted (Client.EnqueueBulk).
type BulkEnqueuer interface {
	// EnqueueBulk enqueues jobs as Enqueue does, in a transaction of its
	// own or inside tx, without reading them back: it returns how many were
	// inserted (a job whose idempotency key exists already is not).
	EnqueueBulk(ctx context.Context, tx Tx, jobs []EnqueueParams) (int, error)
}

// EnqueueParams are the inputs of one enqueued job.
type EnqueueParams struct {
	Kind           string
	Queue          string
	Args           []byte // JSON
	Priority       int    // 0 runs first
	RunAt          time.Time
	Delay          time.Duration // used when RunAt is zero: db_now + Delay
	MaxAttempts    int
	IdempotencyKey string // optional
	ConcurrencyKey string // optional
	SequenceKey    string // optional
	// SequenceContinueOnFailed: a failure of this job does not block the
	// later jobs of its sequence.
	SequenceContinueOnFailed bool
	// Metadata is a JSON object stored with the job (column metadata,
	// NULL when nil) and returned with every read of it.
	Metadata []byte
	// Policy is the job's own timeout and retry backoff, as
	// EncodeJobPolicy writes it (column policy, NULL when nil); a read
	// hands it back to DecodeJobPolicy.
	Policy []byte
	// Tags are the job's tags (valid, distinct), stored NULL when empty.
	Tags []string
	// UniqueKey, when not nil, makes the job unique (32 bytes, the sha256
	// the client computed from the kind and the options' parts): no two
	// jobs of one key and bucket are at once in a state of their own
	// UniqueStates. The statement stores the key, the bucket of run_at
	// (floor of its epoch seconds, by the database clock when computed
	// there, over UniquePeriod; 0 without a period) and UniqueStates, and
	// an enqueue that meets a job holding the slot returns that job,
	// Existing.
	UniqueKey []byte
	// UniquePeriod is the window of run_at in whole seconds; 0: none.
	UniquePeriod int64
	// UniqueStates is the bitmask (UniqueStateBit) of the states in which
	// the job holds its slot.
	UniqueStates int
}

// UniqueStateBit is the bit of a state in EnqueueParams.UniqueStates, as
// each backend's SQL spells it (CASE state WHEN 'queued' THEN 1 ...).
func UniqueStateBit(s fencedtype.JobState) int {
	switch s {
	case fencedtype.JobQueued:
		return 1
	case fencedtype.JobRunning:
		return 2
	case fencedtype.JobSucceeded:
		return 4
	case fencedtype.JobFailed:
		return 8
	case fencedtype.JobCancelled:
		return 16
	}
	return 0
}

// ClaimJobsParams are the inputs of ClaimJobs.
type ClaimJobsParams struct {
	Queue string
	Owner string
	Limit int
	TTL   time.Duration
	// Kinds, when not empty, restricts the claim to jobs of these kinds
	// (distinct, valid names); empty claims every kind. With one kind the
	// pick reads that kind's queued jobs in claim order (an index on queue,
	// kind, priority, run_at, id); with several it walks the queue's queued
	// jobs in claim order and skips the other kinds.
	Kinds []string
}

// DiagnoseJob explains why a guarded write on ref changed nothing, given the
// job as read afterwards (nil when it does not exist): the stored fence is
// above the caller's (superseded: claimed again, or a fence advance) or
// below it (never granted); else the attempt is no longer running, or else
// its lease expired.
func DiagnoseJob(ref fencedtype.JobRef, row *fencedtype.Job) error {
	if row == nil {
		return fencedtype.ErrNotFound
	}
	e := &fencedtype.StaleError{Kind: fencedtype.StaleJob, Name: strconv.FormatInt(ref.ID, 10), Fence: ref.Fence, CurrentFence: row.Fence,
		DecidedAt: row.DecidedAt}
	running := row.State == fencedtype.JobRunning && row.LeaseExpiresAt != nil && row.LeaseExpiresAt.After(row.DecidedAt)
	if running {
		e.CurrentOwner = row.Owner
	}
	e.Reason = fenceReason(ref.Fence, row.Fence)
	switch {
	case e.Reason != "": // the fences decided
	case row.State != fencedtype.JobRunning:
		e.Reason = fencedtype.ReasonNotRunning
	default:
		e.Reason = fencedtype.ReasonExpired
	}
	return e
}

// DiagnoseMerge explains why a guarded metadata merge on ref changed
// nothing, given the job as read afterwards: when ref is still the job's
// current running attempt with an unexpired lease, the guard held when the
// merge ran too (a fence never goes back and the clock only forward), so
// the merged object was over the size bound; otherwise DiagnoseJob.
func DiagnoseMerge(ref fencedtype.JobRef, row *fencedtype.Job, maxBytes int) error {
	if row != nil && row.Fence == ref.Fence && row.State == fencedtype.JobRunning &&
		row.LeaseExpiresAt != nil && row.LeaseExpiresAt.After(row.DecidedAt) {
		return fencedtype.Invalid("metadata", "merged with the patch would exceed %d bytes; nothing was merged", maxBytes)
	}
	return DiagnoseJob(ref, row)
}

// WithRowAttempts appends to the recorded history the attempt that lives on
// the job row: the attempt in progress, until it ends; and a succeeded
// job's last attempt, which no history row records (the statement that
// completes a job writes no history row: the row it leaves holds that
// attempt's number, fence, owner, start and end, and a succeeded job's row
// never changes again). A history written before that rule may hold the
// succeeded attempt already; it is not repeated.
func WithRowAttempts(j *fencedtype.Job, ended []fencedtype.JobAttempt) []fencedtype.JobAttempt {
	if j.AttemptedAt == nil {
		return ended
	}
	a := fencedtype.JobAttempt{Attempt: j.Attempt, Fence: j.Fence, Owner: j.Owner, StartedAt: *j.AttemptedAt}
	switch {
	case j.State == fencedtype.JobRunning:
		a.Outcome = string(fencedtype.JobRunning)
	case j.State == fencedtype.JobSucceeded && j.FinishedAt != nil &&
		(len(ended) == 0 || ended[len(ended)-1].Attempt < j.Attempt):
		a.Outcome, a.EndedAt = fencedtype.OutcomeSucceeded, j.FinishedAt
	default:
		return ended
	}
	return append(ended, a)
}

// JobListener is implemented by job-queue backends that can wake idle
// workers when jobs are enqueued (PostgreSQL LISTEN/NOTIFY). Others are
// polled.
type JobListener interface {
	// ListenJobs calls listening once it listens (every enqueue committed
	// after that is notified; the caller wakes every waiter then, for those
	// it missed before), then wake with a queue name whenever jobs were
	// enqueued in it, until ctx ends or the connection fails.
	ListenJobs(ctx context.Context, listening func(), wake func(queue string)) error
}
