package wire

import "github.com/fenced/fenced"

// Enqueued is the outcome of an enqueue: the job, and whether its
// idempotency key matched a job enqueued before (which is returned instead
// of a new one).
type Enqueued struct {
	fenced.Job
	Existing bool `json:"existing"`
}

// MarshalJSON encodes the job's fields, then "existing".
func (e Enqueued) MarshalJSON() ([]byte, error) {
	return Merge(e.Job, struct {
		Existing bool `json:"existing"`
	}{e.Existing})
}

// JobHistory is a job with its attempts, oldest first.
type JobHistory struct {
	Job      *fenced.Job         `json:"job"`
	Attempts []fenced.JobAttempt `json:"attempts"`
}

// JobHistoryFrom is the wire form of j and its attempts.
func JobHistoryFrom(j *fenced.Job, attempts []fenced.JobAttempt) JobHistory {
	return JobHistory{Job: j, Attempts: List(attempts)}
}

// QueueCounts is one queue's job counts: every state, zero included, and
// the total.
type QueueCounts struct {
	Queue     string `json:"queue"`
	Pending   int64  `json:"pending"` // workflow tasks waiting for their dependencies
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
		case fenced.JobPending:
			q.Pending += c.Count
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

// List is s, or an empty slice when s is nil, so that it encodes as [].
func List[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
