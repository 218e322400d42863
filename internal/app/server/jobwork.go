package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// The worker's side of a job over HTTP: claim (with long-poll), then
// heartbeat, progress and one final write — complete, fail or snooze — each
// carrying the fence the claim granted. Once the attempt is no longer
// current (its lease expired and it was taken back, or it was re-claimed)
// every one of them is refused with 409 stale_fence and changes nothing.

type claimRequest struct {
	Owner   string   `json:"owner"`
	Limit   *int64   `json:"limit"`    // default 1, at most fenced.MaxClaimBatch
	LeaseMs *int64   `json:"lease_ms"` // default 30000
	WaitMs  *int64   `json:"wait_ms"`  // default 0; capped at the server's MaxWait
	Kinds   []string `json:"kinds"`    // claim only these kinds; absent, null or [] claims every kind
}

// claimReply is what a claim took: each job with the fence of its new
// attempt. Empty when nothing was eligible within wait_ms.
type claimReply struct {
	Jobs   []*fenced.Job `json:"jobs"`
	DBTime wire.Time     `json:"db_time,omitzero"`
}

// claim: POST /v1/queues/{queue}/claim {owner, limit, lease_ms, wait_ms,
// kinds} → {"jobs": [...]}, waiting up to wait_ms (at most MaxWait; larger
// waits are cut to it) for a job when none is eligible now. With kinds, only
// jobs of those kinds are claimed (at most fenced.MaxClaimKinds names); a job
// of another kind is never taken, and does not end the wait.
func (s *Server) claim(r *http.Request) (*reply, error) {
	var req claimRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	limit := int64(1)
	if req.Limit != nil {
		limit = *req.Limit
		if limit < 1 || limit > fenced.MaxClaimBatch {
			return nil, invalid("limit", "is outside 1 to 1000")
		}
	}
	ttl, err := millis("lease_ms", req.LeaseMs, fenced.DefaultJobTTL, fenced.MinTTL, fenced.MaxTTL)
	if err != nil {
		return nil, err
	}
	if req.WaitMs != nil && *req.WaitMs > s.cfg.MaxWait.Milliseconds() {
		*req.WaitMs = s.cfg.MaxWait.Milliseconds()
	}
	wait, err := millis("wait_ms", req.WaitMs, 0, 0, s.cfg.MaxWait)
	if err != nil {
		return nil, err
	}
	if len(req.Kinds) > fenced.MaxClaimKinds {
		return nil, invalid("kinds", fmt.Sprintf("has %d kinds, the limit is %d", len(req.Kinds), fenced.MaxClaimKinds))
	}
	queue := r.PathValue("queue")
	jobs, err := s.claimWait(r.Context(), queue, req.Owner, int(limit), ttl, wait, req.Kinds)
	if err != nil {
		return nil, err
	}
	s.metrics.claimed(queue, len(jobs))
	out := claimReply{Jobs: wire.List(jobs)}
	if len(jobs) > 0 {
		out.DBTime = wire.Time(jobs[0].DecidedAt)
	} else {
		out.DBTime = wire.Time(s.dbNow(r.Context()))
	}
	return ok(out, time.Time(out.DBTime)), nil
}

// claimWait claims, and while nothing is eligible waits for a wake (an
// enqueue) or its group's poll (claimpoll.go) and claims again, until wait
// has passed, the client goes away or the server closes. A claim that
// would wait while MaxWaiters others do is refused with 503
// too_many_waiters. It never claims after the client's context ended; a
// claim whose answer cannot be delivered still holds its jobs until their
// lease expires and recovery takes them back.
func (s *Server) claimWait(ctx context.Context, queue, owner string, limit int, ttl, wait time.Duration, kinds []string) ([]*fenced.Job, error) {
	deadline := time.Now().Add(wait)
	waitLabel := ""   // the claim counts as waiting from its first empty try until it returns
	var m *pollMember // set once it waits
	defer func() {
		if m != nil {
			m.leave()
			s.waiters.Add(-1)
		}
		if waitLabel != "" {
			s.metrics.waiting.done(waitLabel)
		}
	}()
	polled := false // this claim is the group's poll
	for {
		woken, done := s.c.WaitForJobs(queue)
		jobs, err := s.c.ClaimJobs(ctx, queue, owner, limit, ttl, kinds...)
		if m != nil {
			m.claimed(polled, err == nil && len(jobs) > 0) // a failed poll backs off too
		}
		left := time.Until(deadline)
		if err != nil || len(jobs) > 0 || left <= 0 {
			done()
			return jobs, err
		}
		if m == nil {
			if s.waiters.Add(1) > int64(s.cfg.MaxWaiters) {
				s.waiters.Add(-1)
				done()
				return nil, s.tooManyWaiters()
			}
			m = s.polls.join(queue, kinds)
			waitLabel = s.metrics.waiting.wait(queue)
		}
		timer := time.NewTimer(left)
		polled = false
		select {
		case <-woken:
		case <-m.turn:
			polled = true
		case <-timer.C:
		case <-ctx.Done():
		case <-s.closing:
		}
		timer.Stop()
		done()
		if ctx.Err() != nil || s.isClosing() {
			return nil, nil
		}
	}
}

// tooManyWaiters is the answer to a claim that would wait while
// MaxWaiters claims already do.
func (s *Server) tooManyWaiters() *apiError {
	e := newError(http.StatusServiceUnavailable, codeTooManyWaiters,
		fmt.Sprintf("the server already holds %d waiting claims, its limit: claim again after Retry-After, or without wait_ms", s.cfg.MaxWaiters))
	e.retryAfter = time.Second
	return e
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

type heartbeatRequest struct {
	Fence   *int64 `json:"fence"`
	LeaseMs *int64 `json:"lease_ms"` // default 30000
}

// heartbeatReply is an extended attempt: its new lease expiry, and whether
// the job was asked to cancel (the worker should stop and fail or snooze it;
// it then ends cancelled).
type heartbeatReply struct {
	ID              int64     `json:"id"`
	Fence           int64     `json:"fence"`
	LeaseExpiresAt  wire.Time `json:"lease_expires_at"`
	CancelRequested bool      `json:"cancel_requested"`
	DBTime          wire.Time `json:"db_time,omitzero"`
}

// heartbeat: POST /v1/jobs/{id}/heartbeat {fence, lease_ms} → the new
// expiry; 409 stale_fence when the attempt is no longer current.
func (s *Server) heartbeat(r *http.Request) (*reply, error) {
	var req heartbeatRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	ttl, err := millis("lease_ms", req.LeaseMs, fenced.DefaultJobTTL, fenced.MinTTL, fenced.MaxTTL)
	if err != nil {
		return nil, err
	}
	hb, err := s.c.HeartbeatJob(r.Context(), ref, ttl)
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	// Extended: the expiry is the database's now plus the ttl, read in the
	// statement. Not extended (its row was held by a transaction of the
	// same attempt): current, not stale; its lease as it stands is the
	// answer, and the next heartbeat extends it.
	t := hb.DecidedAt
	return ok(heartbeatReply{ID: ref.ID, Fence: ref.Fence, LeaseExpiresAt: wire.Time(hb.ExpiresAt),
		CancelRequested: hb.CancelRequested, DBTime: wire.Time(t)}, t), nil
}

// endReply is an accepted final write or progress report. The job's new
// state is not read back: GET /v1/jobs/{id} shows it. Replayed: the
// attempt had already ended this same way (a repeat of an end whose reply
// was lost); nothing was written, and db_time is the first end's.
type endReply struct {
	ID       int64     `json:"id"`
	Fence    int64     `json:"fence"`
	Replayed bool      `json:"replayed"`
	DBTime   wire.Time `json:"db_time,omitzero"`
}

// ended is the reply to a write the database recorded at t.
func ended(ref fenced.JobRef, t time.Time) *reply {
	return ok(endReply{ID: ref.ID, Fence: ref.Fence, DBTime: wire.Time(t)}, t)
}

// endedAs is the reply to an end of ref answered e: written, or replayed
// as the first end of its attempt was.
func endedAs(ref fenced.JobRef, e *fenced.JobEnded) *reply {
	return ok(endReply{ID: ref.ID, Fence: ref.Fence, Replayed: e.Replayed, DBTime: wire.Time(e.At)}, e.At)
}

type completeRequest struct {
	Fence  *int64          `json:"fence"`
	Output json.RawMessage `json:"output"` // any JSON; absent or null stores none
}

// complete: POST /v1/jobs/{id}/complete {fence, output?}: the job
// succeeded. A repeat with the same fence and output is answered as the
// first was, replayed.
func (s *Server) complete(r *http.Request) (*reply, error) {
	var req completeRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	end := fenced.JobEnd{Ref: ref, Kind: fenced.EndComplete}
	if len(req.Output) > 0 && string(req.Output) != "null" {
		end.Output = req.Output // checked once, by EndJob: a backend can store it
	}
	e, err := s.c.EndJob(r.Context(), nil, end)
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	if !e.Replayed {
		s.metrics.completions.Inc()
	}
	return endedAs(ref, e), nil
}

type failRequest struct {
	Fence     *int64 `json:"fence"`
	Error     string `json:"error"`
	RetryInMs *int64 `json:"retry_in_ms"` // default: the job's retry backoff or fenced.DefaultBackoff, of the attempt, computed by the database
	Discard   bool   `json:"discard"`     // fail for good whatever attempts remain
}

// fail: POST /v1/jobs/{id}/fail {fence, error, retry_in_ms?, discard?}:
// the attempt failed; the job runs again after retry_in_ms (default: the
// job's own retry backoff of its attempt, else the default backoff's), or
// is failed for good (the dead letter) when its attempts are exhausted or
// discard is true.
func (s *Server) fail(r *http.Request) (*reply, error) {
	var req failRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	end := fenced.JobEnd{Ref: ref, Kind: fenced.EndFail, Error: req.Error, Discard: req.Discard}
	if req.RetryInMs != nil {
		if end.Delay, err = millis("retry_in_ms", req.RetryInMs, 0, 0, fenced.MaxRetryDelay); err != nil {
			return nil, err
		}
	} else if !req.Discard {
		// The job's own retry backoff (given at enqueue, never changed
		// since, so reading it first decides nothing the fence guards),
		// else the default: computed by the database from the job's
		// attempt number as it records the failure.
		b := fenced.DefaultBackoff
		if j, _, err := s.c.GetJob(r.Context(), ref.ID); err == nil && j.Retry != nil {
			b = j.Retry.Restored()
		}
		end.Backoff = &b
	}
	e, err := s.c.EndJob(r.Context(), nil, end)
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	if !e.Replayed {
		s.metrics.failures.Inc()
	}
	return endedAs(ref, e), nil
}

type snoozeRequest struct {
	Fence   *int64 `json:"fence"`
	DelayMs *int64 `json:"delay_ms"` // required
}

// snooze: POST /v1/jobs/{id}/snooze {fence, delay_ms}: back to queued to
// run after delay_ms; the attempt does not count against max_attempts.
func (s *Server) snooze(r *http.Request) (*reply, error) {
	var req snoozeRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	ms, err := required("delay_ms", req.DelayMs)
	if err != nil {
		return nil, err
	}
	delay, err := millis("delay_ms", &ms, 0, 0, fenced.MaxRetryDelay)
	if err != nil {
		return nil, err
	}
	e, err := s.c.EndJob(r.Context(), nil, fenced.JobEnd{Ref: ref, Kind: fenced.EndSnooze, Delay: delay})
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	return endedAs(ref, e), nil
}

type progressRequest struct {
	Fence    *int64           `json:"fence"`
	Stage    string           `json:"stage"`
	Counters map[string]int64 `json:"counters"`
}

// progress: POST /v1/jobs/{id}/progress {fence, stage?, counters?}: the
// running attempt's progress, shown with the job.
func (s *Server) progress(r *http.Request) (*reply, error) {
	var req progressRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	t, err := s.c.ReportProgress(r.Context(), ref, fenced.Progress{Stage: req.Stage, Counters: req.Counters})
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	return ended(ref, t), nil
}

type mergeMetadataRequest struct {
	Fence *int64          `json:"fence"`
	Patch json.RawMessage `json:"patch"` // a JSON object, required
}

// metadataReply is a job's metadata after a merge.
type metadataReply struct {
	ID       int64           `json:"id"`
	Fence    int64           `json:"fence"`
	Metadata json.RawMessage `json:"metadata"`
	DBTime   wire.Time       `json:"db_time,omitzero"`
}

// mergeMetadata: POST /v1/jobs/{id}/metadata {fence, patch}: the running
// attempt merges patch into its job's metadata as a JSON Merge Patch (RFC
// 7396), a write guarded as progress is: 409 stale_fence when the attempt
// is no longer current, 400 when the merged object would exceed 64 KiB;
// either changes nothing.
func (s *Server) mergeMetadata(r *http.Request) (*reply, error) {
	var req mergeMetadataRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	if len(req.Patch) == 0 || string(req.Patch) == "null" {
		return nil, invalid("patch", "is required: a JSON object")
	}
	m, at, err := s.c.MergeJobMetadata(r.Context(), ref, req.Patch)
	if err != nil {
		return nil, jobNotFound(ref.ID, err)
	}
	return ok(metadataReply{ID: ref.ID, Fence: ref.Fence, Metadata: m, DBTime: wire.Time(at)}, at), nil
}

// jobWrite decodes the body of a worker-owned write into req and returns
// the attempt it names: the path's id and the body's fence (required).
func (s *Server) jobWrite(r *http.Request, req any, fence func() *int64) (fenced.JobRef, error) {
	if err := decodeBody(r, req, false); err != nil {
		return fenced.JobRef{}, err
	}
	id, err := pathJobID(r)
	if err != nil {
		return fenced.JobRef{}, err
	}
	f, err := required("fence", fence())
	if err != nil {
		return fenced.JobRef{}, err
	}
	return fenced.JobRef{ID: id, Fence: f}, nil
}
