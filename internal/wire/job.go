package wire

import (
	"encoding/json"
	"time"

	"github.com/fenced/fenced"
)

// Job is a job. Args, output and progress are the stored JSON; times are
// null when absent. Fence is the current attempt's fencing token: a worker
// passes it back with every write for the job.
type Job struct {
	ID              int64           `json:"id"`
	Kind            string          `json:"kind"`
	Args            json.RawMessage `json:"args"`
	Queue           string          `json:"queue"`
	Priority        int             `json:"priority"`
	State           fenced.JobState `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"max_attempts"`
	Fence           int64           `json:"fence"`
	Owner           string          `json:"owner"`
	RunAt           time.Time       `json:"run_at"`
	LeaseExpiresAt  *time.Time      `json:"lease_expires_at"`
	CancelRequested bool            `json:"cancel_requested"`
	Output          json.RawMessage `json:"output"`
	Error           string          `json:"error"`
	Progress        json.RawMessage `json:"progress"`
	IdempotencyKey  string          `json:"idempotency_key"`
	CreatedAt       time.Time       `json:"created_at"`
	AttemptedAt     *time.Time      `json:"attempted_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
}

// JobFrom is the wire form of j.
func JobFrom(j *fenced.Job) Job {
	return Job{
		ID: j.ID, Kind: j.Kind, Args: rawJSON(j.Args), Queue: j.Queue, Priority: j.Priority,
		State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Fence: j.Fence, Owner: j.Owner,
		RunAt: j.RunAt.UTC(), LeaseExpiresAt: utcPtr(j.LeaseExpiresAt), CancelRequested: j.CancelRequested,
		Output: rawJSON(j.Output), Error: j.LastError, Progress: rawJSON(j.Progress),
		IdempotencyKey: j.IdempotencyKey, CreatedAt: j.CreatedAt.UTC(),
		AttemptedAt: utcPtr(j.AttemptedAt), FinishedAt: utcPtr(j.FinishedAt),
	}
}

// JobsFrom is the wire form of jobs; never nil, so it encodes as [].
func JobsFrom(jobs []*fenced.Job) []Job {
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		out[i] = JobFrom(j)
	}
	return out
}

// Enqueued is the outcome of an enqueue: the job, and whether its
// idempotency key matched a job enqueued before (which is returned instead
// of a new one).
type Enqueued struct {
	Job
	Existing bool `json:"existing"`
}

// Attempt is one attempt of a job's history. EndedAt is null while the
// attempt runs (outcome "running").
type Attempt struct {
	Attempt   int        `json:"attempt"`
	Fence     int64      `json:"fence"`
	Owner     string     `json:"owner"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Outcome   string     `json:"outcome"`
	Error     string     `json:"error"`
}

// JobHistory is a job with its attempts, oldest first.
type JobHistory struct {
	Job      Job       `json:"job"`
	Attempts []Attempt `json:"attempts"`
}

// JobHistoryFrom is the wire form of j and its attempts.
func JobHistoryFrom(j *fenced.Job, attempts []fenced.JobAttempt) JobHistory {
	out := JobHistory{Job: JobFrom(j), Attempts: make([]Attempt, len(attempts))}
	for i, a := range attempts {
		out.Attempts[i] = Attempt{Attempt: a.Attempt, Fence: a.Fence, Owner: a.Owner,
			StartedAt: a.StartedAt.UTC(), EndedAt: utcPtr(a.EndedAt), Outcome: a.Outcome, Error: a.Error}
	}
	return out
}

// QueueCounts is one queue's job counts: every state, zero included, and
// the total.
type QueueCounts struct {
	Queue     string `json:"queue"`
	Queued    int64  `json:"queued"`
	Running   int64  `json:"running"`
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	Cancelled int64  `json:"cancelled"`
	Total     int64  `json:"total"`
}

// CountsByQueue pivots counts by (queue, state) into one line per queue, in
// the order the queues first appear; never nil.
func CountsByQueue(counts []fenced.JobCount) []QueueCounts {
	out := []QueueCounts{}
	at := map[string]int{}
	for _, c := range counts {
		i, ok := at[c.Queue]
		if !ok {
			i = len(out)
			at[c.Queue] = i
			out = append(out, QueueCounts{Queue: c.Queue})
		}
		q := &out[i]
		switch c.State {
		case fenced.JobQueued:
			q.Queued += c.Count
		case fenced.JobRunning:
			q.Running += c.Count
		case fenced.JobSucceeded:
			q.Succeeded += c.Count
		case fenced.JobFailed:
			q.Failed += c.Count
		case fenced.JobCancelled:
			q.Cancelled += c.Count
		}
		q.Total += c.Count
	}
	return out
}

// rawJSON is stored JSON as it is, or nil (null) when there is none.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// utcPtr is *t in UTC, or nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
