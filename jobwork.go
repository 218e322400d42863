package fenced

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// The worker-owned writes. Each is guarded, inside its statement, by the
// job id, the attempt's fence, state = running and an unexpired lease by the
// database clock. A write that no longer holds gets a *StaleError (reason
// superseded, not_running or expired) or ErrNotFound; it never changes
// anything. The Worker uses these; they are public for callers that drive
// jobs themselves (the HTTP service, other runtimes).

// Limits of the worker-owned writes.
const (
	MaxClaimBatch = 1000
	MaxClaimKinds = 1000 // kinds in one claim's filter
	MaxErrorBytes = 64 << 10
	DefaultJobTTL = 30 * time.Second
	MaxRetryDelay = fencedtype.MaxRetryDelay
)

// ClaimJobs starts a new attempt on up to limit eligible jobs of queue (run_at
// reached; ordered by priority, run_at, id), for owner, with a lease of ttl by
// the database clock. Each returned job carries its new Fence.
//
// kinds, when given, restricts the claim to jobs of those kinds (at most
// MaxClaimKinds distinct names; a repeated one counts once): the filter is
// part of the claim statement, so a job of another kind is never claimed,
// not even for a moment. None claims every kind. With kinds, on PostgreSQL,
// the claim reads each kind's lanes from past the jobs claimed before
// (docs/design.md §6.17), so a long transaction elsewhere in the database
// does not slow it; within a priority it takes the due jobs waiting outside
// the lanes (retried, scheduled, enqueued in a caller's transaction) first,
// then the lanes' in enqueue order. On the other backends, with one kind the
// claim reads that kind's queued jobs in claim order; with several it walks
// the queue's queued jobs in claim order and skips the other kinds.
func (c *Client) ClaimJobs(ctx context.Context, queue, owner string, limit int, ttl time.Duration, kinds ...string) ([]*Job, error) {
	if err := validQueue(queue); err != nil {
		return nil, err
	}
	if err := validName("owner", owner); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxClaimBatch {
		return nil, fencedtype.Invalid("limit", "%d is outside 1 to %d", limit, MaxClaimBatch)
	}
	if err := validTTL(ttl); err != nil {
		return nil, err
	}
	kinds, err := claimKinds(kinds)
	if err != nil {
		return nil, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	rows, err := jd.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: queue, Owner: owner, Limit: limit, TTL: ttl, Kinds: kinds})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// claimKinds checks a claim's kind filter and returns its distinct kinds,
// sorted.
func claimKinds(kinds []string) ([]string, error) {
	for i, k := range kinds {
		var inv *InvalidError
		if err := validName("kind", k); errors.As(err, &inv) {
			return nil, fencedtype.Invalid("kinds", "kind %d %s", i+1, inv.Reason)
		}
	}
	kinds = slices.Compact(slices.Sorted(slices.Values(kinds)))
	if len(kinds) > MaxClaimKinds {
		return nil, fencedtype.Invalid("kinds", "%d distinct kinds, the limit is %d", len(kinds), MaxClaimKinds)
	}
	return kinds, nil
}

// HeartbeatResult reports how a heartbeat went for each job.
type HeartbeatResult = fencedtype.HeartbeatResult

// HeartbeatJobs extends the leases of running attempts (one per job) in one
// statement. Jobs whose attempt is no longer current are reported Lost
// (their worker must stop); jobs asked to cancel are reported in
// CancelRequested; jobs whose row was held by an open JobTx of the same
// attempt are reported Busy (current, not extended this time).
func (c *Client) HeartbeatJobs(ctx context.Context, refs []JobRef, ttl time.Duration) (*HeartbeatResult, error) {
	if err := validRefs(refs); err != nil {
		return nil, err
	}
	seen := make(map[int64]bool, len(refs))
	for _, r := range refs {
		if seen[r.ID] {
			return nil, fencedtype.Invalid("jobs", "job %d appears twice in one heartbeat", r.ID)
		}
		seen[r.ID] = true
	}
	if err := validTTL(ttl); err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return &HeartbeatResult{}, nil
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.HeartbeatJobs(ctx, refs, ttl)
}

// JobHeartbeat is how a heartbeat left one running attempt.
type JobHeartbeat = fencedtype.JobHeartbeat

// HeartbeatJob extends the lease of one running attempt to ttl from the
// database's now, and says whether the job was asked to cancel. An attempt
// no longer current gets a *StaleError (its DecidedAt the reading that
// found it stale) or ErrNotFound, diagnosed by the backend, and nothing is
// written. An attempt whose row is held by an open transaction of the
// attempt itself (a JobTx, or its own progress or final write in flight)
// is current: the answer is its lease as it stands, with Extended false,
// and the next heartbeat extends it.
func (c *Client) HeartbeatJob(ctx context.Context, ref JobRef, ttl time.Duration) (*JobHeartbeat, error) {
	if err := validRefs([]JobRef{ref}); err != nil {
		return nil, err
	}
	if err := validTTL(ttl); err != nil {
		return nil, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.HeartbeatJob(ctx, ref, ttl)
}

func validRefs(refs []JobRef) error {
	if len(refs) > MaxClaimBatch*10 {
		return fencedtype.Invalid("jobs", "%d in one call, the limit is %d", len(refs), MaxClaimBatch*10)
	}
	for _, r := range refs {
		if r.ID <= 0 {
			return fencedtype.Invalid("job id", "%d is not positive", r.ID)
		}
		if err := validFence(r.Fence); err != nil {
			return err
		}
	}
	return nil
}

// JobEnd is a worker's final write for one attempt; see EndJobs.
type JobEnd = fencedtype.JobEnd

// The ways an attempt ends.
const (
	EndComplete = fencedtype.EndComplete
	EndFail     = fencedtype.EndFail
	EndSnooze   = fencedtype.EndSnooze
	EndCancel   = fencedtype.EndCancel
)

// JobEnded is the answer to an end that held; see EndJob.
type JobEnded = fencedtype.JobEnded

// EndJobs ends several attempts in one statement (inside tx when non-nil):
// complete with output; fail, which retries after Delay (or, with Backoff
// set, after the backoff of the attempt, computed by the database) unless
// attempts are exhausted or Discard is set (then the job is failed: the
// dead letter); snooze, back to queued after Delay without counting the
// attempt; cancel, the final write after a cancel request. Each job is
// guarded by its own fence; errs[i] is nil or that job's *StaleError /
// ErrNotFound, or its *InvalidError — an invalid end is refused alone, the
// others are written.
//
// An end of an attempt that already ended the same way — the same kind,
// with the same output (a completion) or error message (the others): a
// repeat of an end whose answer was lost — writes nothing and is answered
// as the first end was: errs[i] is nil (EndJob reports it Replayed). An
// end of another kind, or with another output or message, is refused as
// stale, as is any end of an attempt recovery took back.
//
// at is the database clock reading the ends this call wrote were recorded
// at (their attempts' ended_at, and the base of a retry's or snooze's
// run_at; the latest, when the backend records one batch at several), zero
// when it wrote none. err is for the call as a whole.
func (c *Client) EndJobs(ctx context.Context, tx Tx, ends []JobEnd) (errs []error, at time.Time, err error) {
	errs, answers, err := c.endJobs(ctx, tx, ends, false)
	if err != nil {
		return nil, time.Time{}, err
	}
	for i, a := range answers {
		if errs[i] == nil && !a.Replayed && a.At.After(at) {
			at = a.At
		}
	}
	return errs, at, nil
}

// endJobs is EndJobs, answering each end that held; outputChecked says the
// caller already checked every end's output with jsonArg (the Worker does,
// to discard a job whose output cannot be stored), so it is not checked
// twice.
func (c *Client) endJobs(ctx context.Context, tx Tx, ends []JobEnd, outputChecked bool) (errs []error, answers []JobEnded, err error) {
	errs, answers, _, _, err = c.endJobsHandingOff(ctx, tx, ends, outputChecked, nil)
	return errs, answers, err
}

// endJobsHandingOff is endJobs with the hand-off of released tasks to h
// (driver.TaskHandoff) when h is non-nil, tx nil and the backend hands off:
// taken[i] is the attempt handed to end i, or nil (taken itself nil when
// nothing could be handed off), and spare the attempts handed to the spare
// slots of h.
func (c *Client) endJobsHandingOff(ctx context.Context, tx Tx, ends []JobEnd, outputChecked bool, h *driver.Handoff) (errs []error, answers []JobEnded, taken, spare []*Job, err error) {
	errs = make([]error, len(ends))
	answers = make([]JobEnded, len(ends))
	valid := make([]JobEnd, 0, len(ends))
	pos := make([]int, 0, len(ends))
	for i := range ends {
		e := ends[i]
		if err := validEnd(&e, outputChecked); err != nil {
			errs[i] = fmt.Errorf("job %d: %w", e.Ref.ID, err)
			continue
		}
		valid, pos = append(valid, e), append(pos, i)
	}
	if len(valid) == 0 {
		return errs, answers, nil, nil, nil
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var written []error
	var ended []JobEnded
	var handed []*Job
	if ho, ok := jd.(driver.TaskHandoff); ok && h != nil && tx == nil {
		written, ended, handed, spare, err = ho.EndJobsHandingOff(ctx, valid, *h)
	} else {
		written, ended, err = jd.EndJobs(ctx, tx, valid)
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if handed != nil {
		taken = make([]*Job, len(ends))
	}
	for k, i := range pos {
		errs[i] = written[k]
		if written[k] == nil {
			answers[i] = ended[k]
		}
		if handed != nil {
			taken[i] = handed[k]
		}
	}
	return errs, answers, taken, spare, nil
}

// EndJob ends one attempt (see EndJobs), inside tx when non-nil, and
// returns the database clock reading its end was recorded at: the
// attempt's ended_at, the base of a retry's or snooze's run_at. When the
// attempt had already ended the same way (a repeat of an end whose answer
// was lost), nothing is written and the answer is the first end's, with
// Replayed set. An attempt no longer current gets a *StaleError (its
// DecidedAt the reading that found it stale) or ErrNotFound, and nothing
// is written.
func (c *Client) EndJob(ctx context.Context, tx Tx, e JobEnd) (*JobEnded, error) {
	errs, answers, err := c.endJobs(ctx, tx, []JobEnd{e}, false)
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		return nil, errs[0]
	}
	return &answers[0], nil
}

// validEnd checks an end and brings its error message into shape. The
// output is checked here, once, unless outputChecked.
func validEnd(e *JobEnd, outputChecked bool) error {
	if err := validRefs([]JobRef{e.Ref}); err != nil {
		return err
	}
	switch e.Kind {
	case EndComplete, EndFail, EndSnooze, EndCancel:
	default:
		return fencedtype.Invalid("end", "%q is not complete, fail, snooze or cancel", e.Kind)
	}
	if e.Backoff != nil {
		if e.Kind != EndFail {
			return fencedtype.Invalid("backoff", "is for a fail, not a %s", e.Kind)
		}
		b := e.Backoff.WithDefaults()
		e.Backoff, e.Delay = &b, 0 // Delay is ignored
	}
	if e.Delay < 0 || e.Delay > MaxRetryDelay {
		return fencedtype.Invalid("delay", "%s is outside 0 to %s", e.Delay, MaxRetryDelay)
	}
	// An error message is always kept: made valid UTF-8 without NULs (which
	// no backend stores) and truncated on a character boundary.
	if len(e.Error) > MaxErrorBytes {
		e.Error = e.Error[:MaxErrorBytes]
	}
	e.Error = strings.ReplaceAll(strings.ToValidUTF8(e.Error, "\uFFFD"), "\x00", "")
	if e.Output != nil && !outputChecked {
		return checkJSONArg("output", e.Output)
	}
	return nil
}

// CompleteJob marks the attempt ref succeeded with output (marshalled as
// JSON; nil stores none). Completing it again with the same output (after
// a lost answer) returns nil and writes nothing; see EndJobs.
func (c *Client) CompleteJob(ctx context.Context, ref JobRef, output any) error {
	return c.CompleteJobTx(ctx, nil, ref, output)
}

// CompleteJobTx completes the attempt inside the caller's transaction (a
// JobTx's, or the caller's own wrapped with the driver's WrapTx): the job is
// succeeded only if that transaction commits, and if the attempt is stale the
// caller gets a *StaleError and must roll back its business writes. The
// output is encoded here and checked once, with the end (see EndJobs).
func (c *Client) CompleteJobTx(ctx context.Context, tx Tx, ref JobRef, output any) error {
	var out []byte
	if output != nil {
		var err error
		if out, err = encodeJSON("output", output); err != nil {
			return err
		}
	}
	// EndJob checks it (size, JSON every backend stores), once.
	_, err := c.EndJob(ctx, tx, JobEnd{Ref: ref, Kind: EndComplete, Output: out})
	return err
}

// RetryBackoff, passed as FailJob's retryIn, retries the job after
// DefaultBackoff's delay for the attempt that failed: min(1h, 1s·2^(n−1))
// for attempt n, scaled by a random factor in [0.5, 1], computed by the
// database from the job's attempt number in the statement that records the
// failure (nothing is read first). For another backoff, end the attempt
// with EndJob and set JobEnd.Backoff.
const RetryBackoff time.Duration = -1

// FailJob records a failed attempt: the job runs again after retryIn (or,
// with RetryBackoff, after the default backoff of its attempt), or is
// failed (the dead letter) when attempts are exhausted or discard is set.
// Failing it again with the same message returns nil and writes nothing;
// see EndJobs.
func (c *Client) FailJob(ctx context.Context, ref JobRef, message string, retryIn time.Duration, discard bool) error {
	end := JobEnd{Ref: ref, Kind: EndFail, Error: message, Delay: retryIn, Discard: discard}
	if retryIn == RetryBackoff {
		b := DefaultBackoff
		end.Backoff, end.Delay = &b, 0
	}
	_, err := c.EndJob(ctx, nil, end)
	return err
}

// SnoozeJob puts the job back to queued to run after delay; the attempt does
// not count against MaxAttempts.
func (c *Client) SnoozeJob(ctx context.Context, ref JobRef, delay time.Duration) error {
	_, err := c.EndJob(ctx, nil, JobEnd{Ref: ref, Kind: EndSnooze, Delay: delay})
	return err
}

// Progress is what a running attempt reports of itself.
type Progress struct {
	Stage    string           `json:"stage,omitempty"`
	Counters map[string]int64 `json:"counters,omitempty"`
}

// ReportProgress stores the attempt's progress (shown with the job) and
// returns the database clock reading it was stored at. A stale attempt gets
// a *StaleError or ErrNotFound and nothing is stored.
func (c *Client) ReportProgress(ctx context.Context, ref JobRef, p Progress) (time.Time, error) {
	if err := validRefs([]JobRef{ref}); err != nil {
		return time.Time{}, err
	}
	b, err := jsonArg("progress", p, nil)
	if err != nil {
		return time.Time{}, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return time.Time{}, err
	}
	return jd.ReportProgress(ctx, ref, b)
}

// JobTx runs fn in a transaction that commits only under attempt ref: it
// first share-locks the job row and checks id, fence, state running and an
// unexpired lease; recovery and re-claims wait for it. A stale attempt gets a
// *StaleError and fn is not called; fn's error rolls back. Call
// CompleteJobTx with the same tx to complete the job in the same commit.
func (c *Client) JobTx(ctx context.Context, ref JobRef, fn func(Tx) error) error {
	if err := validRefs([]JobRef{ref}); err != nil {
		return err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return err
	}
	return jd.JobTx(ctx, ref, fn)
}
