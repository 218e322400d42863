package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/internal/test/linmodel"
)

// Work counts what the workload got done in a window of the database
// clock: jobs enqueued (their rows' creation), attempts claimed (their
// start), jobs completed (their success), from the job rows and their
// attempt history; and lease grants (their decision time), from the
// workers' histories. Every time counted is the database's own, as the
// server that wrote the row read it.
type Work struct {
	Enqueued  int64 `json:"enqueued"`
	Claimed   int64 `json:"claimed"`
	Completed int64 `json:"completed"`
	Grants    int64 `json:"lease_grants"`
}

func (w Work) String() string {
	return fmt.Sprintf("%d enqueued, %d claimed, %d completed, %d lease grants", w.Enqueued, w.Claimed, w.Completed, w.Grants)
}

// workSQL counts the run's jobs created, attempts started and jobs
// succeeded in [$2, $3). An attempt is a history row, or the attempt a
// succeeded job's row holds when no history row records it (the completing
// statement writes none), as attemptsSQL reads them.
const workSQL = `SELECT
    (SELECT count(*) FROM fenced_jobs WHERE queue = $1 AND created_at >= $2 AND created_at < $3),
    (SELECT count(*) FROM (
        SELECT a.started_at AS at FROM fenced_job_attempts a JOIN fenced_jobs j ON j.id = a.job_id WHERE j.queue = $1
        UNION ALL
        SELECT r.attempted_at FROM fenced_jobs r
        WHERE r.queue = $1 AND r.state = 'succeeded' AND NOT EXISTS (
            SELECT 1 FROM fenced_job_attempts h WHERE h.job_id = r.id AND h.attempt >= r.attempt)
    ) s WHERE s.at >= $2 AND s.at < $3),
    (SELECT count(*) FROM fenced_jobs WHERE queue = $1 AND state = 'succeeded' AND finished_at >= $2 AND finished_at < $3)`

// countWork counts the work done in [from, to) of the database clock.
func countWork(ctx context.Context, r *run, ops []porcupine.Operation, from, to time.Time) (Work, error) {
	var w Work
	if err := r.c.db.QueryRow(ctx, workSQL, queue, from, to).Scan(&w.Enqueued, &w.Claimed, &w.Completed); err != nil {
		return w, fmt.Errorf("count the work after the failover: %w", err)
	}
	lo, hi := from.UnixMicro(), to.UnixMicro()
	for _, op := range ops {
		in, out := op.Input.(linmodel.Input), op.Output.(linmodel.Output)
		if in.Kind == linmodel.Acquire && out.Result == linmodel.OK && out.DecidedAt >= lo && out.DecidedAt < hi {
			w.Grants++
		}
	}
	return w, nil
}
