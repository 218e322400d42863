package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// peer is an in-process worker with its own client: its own PostgreSQL pool
// or its own SQLite handle, so its statements travel on its own connections.
type peer struct {
	name string
	c    *fenced.Client
	d    driver.Driver // c's, for the demo's own statements (raw.go)
}

// peers opens one client per name; closeAll closes them.
func (e *env) peers(ctx context.Context, names ...string) (ps []*peer, closeAll func(), err error) {
	closeAll = func() {
		for _, p := range ps {
			p.c.Close()
			p.d.Close()
		}
	}
	for _, n := range names {
		c, d, err := open(ctx, e.url)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ps = append(ps, &peer{name: n, c: c, d: d})
	}
	return ps, closeAll, nil
}

// enqueue adds one job of the demo to q.
func enqueue(ctx context.Context, c *fenced.Client, q string) (*fenced.Job, error) {
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "demo", Queue: q})
	return j, err
}

// jobOutcome is a job write's result in the demo's words.
func jobOutcome(err error) string {
	var stale *fenced.StaleError
	var state *fenced.JobStateError
	switch {
	case err == nil:
		return "accepted"
	case errors.As(err, &stale):
		s := fmt.Sprintf("rejected: stale (%s, current fence %d", stale.Reason, stale.CurrentFence)
		if stale.CurrentOwner != "" {
			s += ", held by " + stale.CurrentOwner
		}
		return s + ")"
	case errors.As(err, &state) && errors.Is(err, fenced.ErrJobFinished):
		return fmt.Sprintf("refused: finished (%s)", state.State)
	}
	return "error: " + err.Error()
}

// claimed describes what one claim returned.
func claimed(jobs []*fenced.Job, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case len(jobs) == 0:
		return "nothing"
	case len(jobs) == 1:
		return fmt.Sprintf("job %d, fence %d", jobs[0].ID, jobs[0].Fence)
	}
	return fmt.Sprintf("%d jobs", len(jobs))
}

// jobState describes a job as stored now.
func jobState(ctx context.Context, c *fenced.Client, id int64) string {
	j, _, err := c.GetJob(ctx, id)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s, attempt %d, fence %d, owner %s", j.State, j.Attempt, j.Fence, j.Owner)
}

// history describes a job's attempts: number, owner, fence, outcome.
func history(ctx context.Context, c *fenced.Client, id int64) string {
	_, attempts, err := c.GetJob(ctx, id)
	if err != nil {
		return "error: " + err.Error()
	}
	var s []string
	for _, a := range attempts {
		s = append(s, fmt.Sprintf("#%d %s fence %d %s", a.Attempt, a.Owner, a.Fence, a.Outcome))
	}
	return strings.Join(s, "; ")
}
