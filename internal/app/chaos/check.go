package chaos

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/internal/test/linmodel"
)

// linTimeout is the default bound of the linearizability check; a check
// that runs out of time is reported as an anomaly (it proved nothing).
const linTimeout = 5 * time.Minute

// check runs every checker over the histories and the database, adding its
// counts and anomalies to rep.
func check(ctx context.Context, r *run, rep *Report, enqueued []int64, workflows []enqueuedWorkflow) error {
	h, err := readHistories(r.dir)
	if err != nil {
		return fmt.Errorf("read histories: %w", err)
	}
	rep.LeaseOps, rep.Unknown = len(h.ops), h.unknown
	for _, j := range h.jobs {
		if j.Result == jobFailed {
			rep.Deliberate++
		} else {
			rep.JobWrites++
		}
	}
	rep.Operations = rep.LeaseOps + rep.JobWrites
	rep.UnknownCauses = h.errs
	rep.Stale = map[string]int{}
	for _, op := range h.ops {
		if op.Output.(linmodel.Output).Result == linmodel.Stale {
			rep.Stale[op.Input.(linmodel.Input).Kind.String()]++
			rep.StaleRejected++
		}
	}
	for _, j := range h.jobs {
		switch j.Result {
		case jobStale:
			rep.Stale["job"]++
			rep.StaleRejected++
		case jobNotFound:
			rep.anomaly(anomalyNotFound, "job %d: the write of attempt fence %d was rejected as not found, not stale", j.Job, j.Fence)
		}
	}
	checkLeaseFences(h.ops, rep)
	checkJobFences(h.jobs, rep)
	checkLinearizable(r, h.ops, rep)
	if !r.workFrom.IsZero() {
		w, err := countWork(ctx, r, h.ops, r.workFrom, r.workTo)
		if err != nil {
			return err
		}
		rep.AfterFailover = &w
	}
	switch r.o.Workload {
	case WorkloadKeyed:
		if err := checkKeyed(ctx, r, rep); err != nil {
			return err
		}
	case WorkloadWorkflow:
		if err := checkWorkflows(ctx, r, rep, workflows); err != nil {
			return err
		}
	}
	return checkJobs(ctx, r, h, rep, enqueued)
}

// checkLinearizable checks the lease and resource history against the
// model with porcupine.
func checkLinearizable(r *run, ops []porcupine.Operation, rep *Report) {
	start := time.Now()
	model := linmodel.Model(linmodel.Spec{})
	res, info := porcupine.CheckOperationsVerbose(model, ops, r.o.CheckTimeout)
	rep.CheckSeconds = time.Since(start).Seconds()
	switch res {
	case porcupine.Ok:
		rep.Linearizable = "ok"
	case porcupine.Illegal:
		rep.Linearizable = "illegal"
		path := filepath.Join(r.dir, "linearizability.html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			rep.anomaly(anomalyLin, "the lease and resource history is not linearizable (see %s)", path)
		} else {
			rep.anomaly(anomalyLin, "the lease and resource history is not linearizable")
		}
	default:
		rep.Linearizable = "unknown"
		rep.anomaly(anomalyLin, "the linearizability check did not finish in %s", r.o.CheckTimeout)
	}
}

// checkLeaseFences: each fence of a lease is granted to one owner only,
// and in the order of the database's decisions fences never go down.
func checkLeaseFences(ops []porcupine.Operation, rep *Report) {
	type grant struct {
		owner   string
		fence   int64
		decided int64
	}
	byName := map[string][]grant{}
	for _, op := range ops {
		in, out := op.Input.(linmodel.Input), op.Output.(linmodel.Output)
		if in.Kind == linmodel.Acquire && out.Result == linmodel.OK {
			byName[in.Name] = append(byName[in.Name], grant{out.Owner, out.Fence, out.DecidedAt})
			rep.Grants++
		}
	}
	for name, gs := range byName {
		owner := map[int64]string{}
		for _, g := range gs {
			if o, ok := owner[g.fence]; ok && o != g.owner {
				rep.anomaly(anomalyLeaseFence, "lease %s: fence %d granted to both %s and %s", name, g.fence, o, g.owner)
			}
			owner[g.fence] = g.owner
		}
		slices.SortStableFunc(gs, func(a, b grant) int { return cmp.Compare(a.decided, b.decided) })
		for i := 1; i < len(gs); i++ {
			if gs[i].fence < gs[i-1].fence {
				rep.anomaly(anomalyLeaseFence, "lease %s: fence %d granted after fence %d", name, gs[i].fence, gs[i-1].fence)
			}
		}
	}
}

// checkJobFences: each fence of a job is one attempt, claimed by one worker
// process: two processes writing for the same job under the same fence
// means the fence was granted twice (as a promotion that lost commits
// would, without a fence advance).
func checkJobFences(recs []record, rep *Report) {
	type attempt struct{ job, fence int64 }
	by := map[attempt]string{}
	for _, rec := range recs {
		a := attempt{rec.Job, rec.Fence}
		if p, ok := by[a]; ok && p != rec.Proc {
			rep.anomaly(anomalyJobFence, "job %d: fence %d was used by both %s and %s", rec.Job, rec.Fence, p, rec.Proc)
			continue
		}
		by[a] = rec.Proc
	}
}

// jobRow is what the checker reads of one job.
type jobRow struct {
	id, fence         int64
	state, lastError  string
	ledger            int64 // ledger rows (effects)
	ledgerFenceMin    int64
	ledgerFenceMax    int64
	succeededAttempts int64
	succeededFence    int64
}

// jobsCheckSQL reads each job of the run's queue with its effects and its
// succeeded attempts. Both are aggregated per job first and then joined:
// a subquery per job over attemptsSQL, correlated by job, made SQLite scan
// every attempt and every succeeded job for each job (the check of a
// 10-minute run's 48,560 jobs was still running after 7 minutes).
const jobsCheckSQL = `
SELECT j.id, j.state, j.fence, coalesce(j.last_error, ''),
    coalesce(l.n, 0), coalesce(l.lo, 0), coalesce(l.hi, 0), coalesce(s.n, 0), coalesce(s.hi, 0)
FROM fenced_jobs j
LEFT JOIN (SELECT job_id, count(*) AS n, min(fence) AS lo, max(fence) AS hi FROM chaos_ledger GROUP BY job_id) l
    ON l.job_id = j.id
LEFT JOIN (SELECT a.job_id, count(*) AS n, max(a.fence) AS hi FROM ` + attemptsSQL + ` a
    WHERE a.outcome = 'succeeded' GROUP BY a.job_id) s
    ON s.job_id = j.id
WHERE j.queue = ?`

// attemptsSQL is every ended attempt: the history's rows, and the attempt a
// succeeded job's row holds when no history row records it (the completing
// statement writes none; driver.WithRowAttempts reads it the same way).
const attemptsSQL = `(
    SELECT job_id, attempt, fence, outcome FROM fenced_job_attempts
    UNION ALL
    SELECT r.id, r.attempt, r.fence, 'succeeded' FROM fenced_jobs r
    WHERE r.state = 'succeeded' AND NOT EXISTS (
        SELECT 1 FROM fenced_job_attempts h WHERE h.job_id = r.id AND h.attempt >= r.attempt))`

// orphanLedgerSQL counts effects whose job does not exist.
const orphanLedgerSQL = `SELECT count(*) FROM chaos_ledger l WHERE NOT EXISTS (SELECT 1 FROM fenced_jobs j WHERE j.id = l.job_id)`

// checkJobs: every job the enqueuer was told about exists, and every job
// ended once, succeeded or failed (failed only by running out of attempts
// the workload failed on purpose, which a correct run all but never does);
// each succeeded job has exactly one effect, written under its succeeding
// fence, a failed job none, and no effect lacks its job; counters equal
// their ledgers with no increment lost; attempt fences increase; and no
// worker saw a write succeed that did not stick.
func checkJobs(ctx context.Context, r *run, h *history, rep *Report, enqueued []int64) error {
	p := r.c.db
	rows, err := p.Query(ctx, r.d.sql(jobsCheckSQL), queue)
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	jobs := map[int64]*jobRow{}
	for rows.Next() {
		j := &jobRow{}
		if err := rows.Scan(&j.id, &j.state, &j.fence, &j.lastError, &j.ledger, &j.ledgerFenceMin, &j.ledgerFenceMax,
			&j.succeededAttempts, &j.succeededFence); err != nil {
			rows.Close()
			return err
		}
		jobs[j.id] = j
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	rep.Jobs = int64(len(jobs))
	for _, j := range jobs {
		switch j.state {
		case "succeeded":
			// The succeeded attempt's fence is its history's (an older
			// history row, or the row's own, which a fence advance
			// leaves alone on a succeeded job).
			rep.Succeeded++
			if j.ledger != 1 {
				rep.anomaly(anomalyJobEffect, "job %d succeeded with %d effects in the ledger, not 1", j.id, j.ledger)
			} else if j.ledgerFenceMin != j.succeededFence {
				rep.anomaly(anomalyJobEffect, "job %d: its effect was written under fence %d, but it succeeded under fence %d", j.id, j.ledgerFenceMin, j.succeededFence)
			}
			if j.succeededAttempts != 1 || j.succeededFence > j.fence {
				rep.anomaly(anomalyJobEffect, "job %d: %d succeeded attempts in its history (fence %d), want 1 with a fence up to the job's %d",
					j.id, j.succeededAttempts, j.succeededFence, j.fence)
			}
		case "failed":
			rep.Failed++
			if j.lastError != errDeliberate {
				rep.anomaly(anomalyJobEnd, "job %d failed, its last error %q", j.id, j.lastError)
			}
			if j.ledger != 0 {
				rep.anomaly(anomalyJobEffect, "job %d failed but has %d effects in the ledger", j.id, j.ledger)
			}
		default:
			rep.anomaly(anomalyJobEnd, "job %d ended %s, not succeeded or failed", j.id, j.state)
		}
	}
	for _, id := range enqueued {
		if jobs[id] == nil {
			rep.anomaly(anomalyJobLost, "job %d was enqueued but is not in the database", id)
		}
	}
	var orphans int64
	if err := p.QueryRow(ctx, orphanLedgerSQL).Scan(&orphans); err != nil {
		return fmt.Errorf("read ledger: %w", err)
	}
	if orphans > 0 {
		rep.anomaly(anomalyJobLost, "%d effects in the ledger belong to no job", orphans)
	}
	for _, rec := range h.jobs {
		j := jobs[rec.Job]
		switch {
		case j == nil:
			rep.anomaly(anomalyJobLost, "job %d, worked by %s, is not in the database", rec.Job, rec.Proc)
		case rec.Result == jobOK && (j.state != "succeeded" || j.succeededFence != rec.Fence):
			rep.anomaly(anomalyJobTold, "job %d: %s's attempt (fence %d) was told it committed, but the job is %s under fence %d",
				rec.Job, rec.Proc, rec.Fence, j.state, j.succeededFence)
		case rec.Result == jobStale && j.state == "succeeded" && j.succeededFence == rec.Fence:
			rep.anomaly(anomalyJobTold, "job %d: %s's attempt (fence %d) was rejected as stale, yet the job succeeded under it",
				rec.Job, rec.Proc, rec.Fence)
		}
	}
	if err := checkCounters(ctx, r, rep); err != nil {
		return err
	}
	return checkAttemptFences(ctx, r, rep)
}

// checkCounters: each counter equals its ledger rows, and each increment
// read a distinct value (none lost).
func checkCounters(ctx context.Context, r *run, rep *Report) error {
	rows, err := r.c.db.Query(ctx, `SELECT c.ckey, c.n, count(l.id), coalesce(max(l.n_before), -1), count(DISTINCT l.n_before)
FROM chaos_counters c LEFT JOIN chaos_ledger l ON l.ckey = c.ckey GROUP BY c.ckey, c.n ORDER BY c.ckey`)
	if err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var n, ledger, maxBefore, distinct int64
		if err := rows.Scan(&key, &n, &ledger, &maxBefore, &distinct); err != nil {
			return err
		}
		if n != ledger {
			rep.anomaly(anomalyCounter, "counter %s is %d but its ledger holds %d increments", key, n, ledger)
		}
		if distinct != ledger || maxBefore != ledger-1 {
			rep.anomaly(anomalyCounter, "counter %s: %d increments read %d distinct values up to %d: an update was lost", key, ledger, distinct, maxBefore)
		}
	}
	return rows.Err()
}

// checkAttemptFences: in each job's attempt history, later attempts carry
// higher fences.
func checkAttemptFences(ctx context.Context, r *run, rep *Report) error {
	rows, err := r.c.db.Query(ctx, r.d.sql(`SELECT a.job_id, a.attempt, a.fence FROM `+attemptsSQL+` a
JOIN fenced_jobs j ON j.id = a.job_id WHERE j.queue = ? ORDER BY a.job_id, a.attempt, a.fence`), queue)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	var prevJob, prevAttempt, prevFence int64
	for rows.Next() {
		var job, attempt, fence int64
		if err := rows.Scan(&job, &attempt, &fence); err != nil {
			return err
		}
		rep.Attempts++
		if job == prevJob && (attempt <= prevAttempt || fence <= prevFence) {
			rep.anomaly(anomalyAttempt, "job %d: attempt %d has fence %d after attempt %d with fence %d", job, attempt, fence, prevAttempt, prevFence)
		}
		prevJob, prevAttempt, prevFence = job, attempt, fence
	}
	return rows.Err()
}
