package main

import (
	"encoding/json"
	"time"

	"github.com/fenced/fenced"
)

// jobJSON is a job as every --json output prints it. Times are RFC 3339 in
// UTC; args, output and progress are the stored JSON; all of them are null
// when absent. Keep this the one JSON form of a job.
type jobJSON struct {
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

func jobOut(j *fenced.Job) jobJSON {
	return jobJSON{
		ID: j.ID, Kind: j.Kind, Args: rawJSON(j.Args), Queue: j.Queue, Priority: j.Priority,
		State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Fence: j.Fence, Owner: j.Owner,
		RunAt: j.RunAt.UTC(), LeaseExpiresAt: utcPtr(j.LeaseExpiresAt), CancelRequested: j.CancelRequested,
		Output: rawJSON(j.Output), Error: j.LastError, Progress: rawJSON(j.Progress),
		IdempotencyKey: j.IdempotencyKey, CreatedAt: j.CreatedAt.UTC(),
		AttemptedAt: utcPtr(j.AttemptedAt), FinishedAt: utcPtr(j.FinishedAt),
	}
}

func jobsOut(jobs []*fenced.Job) []jobJSON {
	out := make([]jobJSON, len(jobs)) // [] rather than null when empty
	for i, j := range jobs {
		out[i] = jobOut(j)
	}
	return out
}

// enqueueJSON is the outcome of "job enqueue --json": the job, and whether
// its idempotency key matched a job enqueued before.
type enqueueJSON struct {
	jobJSON
	Existing bool `json:"existing"`
}

// attemptJSON is one attempt of a job's history. EndedAt is null while the
// attempt runs (outcome "running").
type attemptJSON struct {
	Attempt   int        `json:"attempt"`
	Fence     int64      `json:"fence"`
	Owner     string     `json:"owner"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Outcome   string     `json:"outcome"`
	Error     string     `json:"error"`
}

// jobShowJSON is "job show --json": the job and its attempts, oldest first.
type jobShowJSON struct {
	Job      jobJSON       `json:"job"`
	Attempts []attemptJSON `json:"attempts"`
}

func jobShowOut(j *fenced.Job, attempts []fenced.JobAttempt) jobShowJSON {
	out := jobShowJSON{Job: jobOut(j), Attempts: make([]attemptJSON, len(attempts))}
	for i, a := range attempts {
		out.Attempts[i] = attemptJSON{Attempt: a.Attempt, Fence: a.Fence, Owner: a.Owner,
			StartedAt: a.StartedAt.UTC(), EndedAt: utcPtr(a.EndedAt), Outcome: a.Outcome, Error: a.Error}
	}
	return out
}

// queueCountsJSON is one queue's line of "job counts --json": every state,
// zero included, and the total.
type queueCountsJSON struct {
	Queue     string `json:"queue"`
	Queued    int64  `json:"queued"`
	Running   int64  `json:"running"`
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	Cancelled int64  `json:"cancelled"`
	Total     int64  `json:"total"`
}

// countsOut pivots counts by (queue, state) into one line per queue, in
// the order the queues first appear.
func countsOut(counts []fenced.JobCount) []queueCountsJSON {
	out := []queueCountsJSON{}
	at := map[string]int{}
	for _, c := range counts {
		i, ok := at[c.Queue]
		if !ok {
			i = len(out)
			at[c.Queue] = i
			out = append(out, queueCountsJSON{Queue: c.Queue})
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
