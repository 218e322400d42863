package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// staleCompletionTTL is worker 1's lease: short, so it runs out while the
// worker is still busy.
const staleCompletionTTL = 500 * time.Millisecond

// Reads of the lease's expiry by the database clock, the clock fenced
// judges it by (PostgreSQL clock_timestamp(); MySQL UTC_TIMESTAMP(6); SQLite
// the host clock read in the statement, as the SQLite driver reads it).
const (
	pgJobExpiredSQL = `SELECT lease_expires_at <= clock_timestamp()
FROM fenced_jobs WHERE id = $1 AND state = 'running'`
	mysqlJobExpiredSQL = `SELECT lease_expires_at <= UTC_TIMESTAMP(6)
FROM fenced_jobs WHERE id = $1 AND state = 'running'`
	sqliteJobExpiredSQL = `SELECT lease_expires_us <= ` + sqliteNow + `
FROM fenced_jobs WHERE id = $1 AND state = 'running'`
)

// The workers' business writes, in a table of the run's own (%s).
const (
	businessInsertSQL = `INSERT INTO %s (job, worker, fence) VALUES ($1, $2, $3)`
	businessSelectSQL = `SELECT worker, fence FROM %s WHERE job = $1 ORDER BY fence`
)

// staleCompletion: W1 claims a job with a short lease and works past it;
// recovery takes the job back and W2 claims it with the next fence. W1 then
// finishes the way a job queue's users do: in one transaction, its business
// INSERT and CompleteJobTx. The completion carries the old fence and is
// rejected as stale, so the transaction rolls back and W1's business row
// never exists; W2's completion and business row commit. (River completes by
// id and state only: there W1's completion and row would both commit.)
func staleCompletion(ctx context.Context, e *env) []Step {
	var t timeline
	ps, closeAll, err := e.peers(ctx, "W1", "W2")
	if err != nil {
		t.fail("W1+W2", "open a client each", "open", err)
		return t.steps
	}
	defer closeAll()
	w1, w2 := ps[0], ps[1]
	table := e.table("fenced_demo_business")
	if _, err := execSQL(ctx, e.d, fmt.Sprintf(businessDDL, table)); err != nil {
		t.fail("—", "create "+table, "created", err)
		return t.steps
	}
	q := e.queue("stale-completion")
	j, err := enqueue(ctx, e.c, q)
	if err != nil {
		t.fail("—", "enqueue a job", "queued", err)
		return t.steps
	}
	t.add("—", fmt.Sprintf("enqueue job %d", j.ID), "queued", string(j.State))
	f1 := j.Fence + 1

	jobs, err := w1.c.ClaimJobs(ctx, q, w1.name, 1, staleCompletionTTL)
	t.add(w1.name, fmt.Sprintf("claim (lease %s)", staleCompletionTTL), fmt.Sprintf("job %d, fence %d", j.ID, f1), claimed(jobs, err))
	if len(jobs) != 1 {
		return t.steps
	}
	ref1 := jobs[0].Ref()
	t.add("—", "W1 works on past its lease: poll until it expires by the database clock", "expired", waitJobExpired(ctx, e, j.ID))

	// Like a maintainer's round, this takes back every expired job in the
	// database, not only the demo's.
	_, err = e.c.RecoverJobs(ctx, nil, 1000, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1})
	t.add("—", "maintenance: RecoverJobs takes back expired work (retry in 1ms)",
		fmt.Sprintf("queued; #1 W1 fence %d lost", f1), recovered(ctx, e.c, j.ID, err))

	jobs, err = claimWhenDue(ctx, w2, q)
	t.add(w2.name, "claim", fmt.Sprintf("job %d, fence %d", j.ID, f1+1), claimed(jobs, err))
	if len(jobs) != 1 {
		return t.steps
	}
	ref2 := jobs[0].Ref()

	completeWithBusiness(ctx, &t, table, w1, ref1, fmt.Sprintf("rejected: stale (superseded, current fence %d, held by W2)", f1+1), "rolled back")
	completeWithBusiness(ctx, &t, table, w2, ref2, "accepted", "committed")

	t.add("—", "business rows of the job", fmt.Sprintf("W2 fence %d", f1+1), businessRows(ctx, e.d, table, j.ID))
	t.add("—", "read the job", fmt.Sprintf("succeeded, attempt 2, fence %d, owner W2", f1+1), jobState(ctx, e.c, j.ID))
	t.add("—", "its attempts", fmt.Sprintf("#1 W1 fence %d lost; #2 W2 fence %d succeeded", f1, f1+1), history(ctx, e.c, j.ID))
	return t.steps
}

// waitJobExpired polls the database clock until job id's lease has expired.
func waitJobExpired(ctx context.Context, e *env, id int64) string {
	query := map[fenced.Dialect]string{fenced.DialectPostgres: pgJobExpiredSQL, fenced.DialectMySQL: mysqlJobExpiredSQL}[e.dialect]
	if query == "" {
		query = sqliteJobExpiredSQL
	}
	deadline := time.Now().Add(staleCompletionTTL + 30*time.Second)
	for time.Now().Before(deadline) {
		var expired bool
		err := scanSQL(ctx, e.d, query, []any{id}, &expired)
		switch {
		case noRows(err):
			return "not running"
		case err != nil:
			return "error: " + err.Error()
		case expired:
			return "expired"
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "still running"
}

// recovered describes the job after recovery: its state and attempts.
func recovered(ctx context.Context, c *fenced.Client, id int64, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	j, _, err := c.GetJob(ctx, id)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s; %s", j.State, history(ctx, c, id))
}

// claimWhenDue claims from q until a job is returned (recovery scheduled the
// retry a moment ahead) or ten seconds pass.
func claimWhenDue(ctx context.Context, p *peer, q string) ([]*fenced.Job, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, err := p.c.ClaimJobs(ctx, q, p.name, 1, time.Minute)
		if err != nil || len(jobs) > 0 || time.Now().After(deadline) {
			return jobs, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// completeWithBusiness is a worker finishing its attempt as a job queue's
// users do: in its own transaction, its business INSERT and then
// CompleteJobTx; the transaction commits only if the completion was
// accepted, and rolls back on its error.
func completeWithBusiness(ctx context.Context, t *timeline, table string, p *peer, ref fenced.JobRef, wantComplete, wantEnd string) {
	tx, err := begin(ctx, p.d)
	if err != nil {
		t.fail(p.name, "begin a transaction", "begun", err)
		return
	}
	n, err := tx.Exec(ctx, fmt.Sprintf(businessInsertSQL, table), ref.ID, p.name, ref.Fence)
	inserted := fmt.Sprintf("%d row inserted", n)
	if err != nil {
		inserted = "error: " + err.Error()
	}
	t.add(p.name, fmt.Sprintf("in one transaction: business INSERT (job %d, %s, fence %d)", ref.ID, p.name, ref.Fence),
		"1 row inserted", inserted)
	if err == nil {
		err = p.c.CompleteJobTx(ctx, tx.raw, ref, map[string]string{"by": p.name})
		t.add(p.name, fmt.Sprintf("… and CompleteJobTx with fence %d", ref.Fence), wantComplete, jobOutcome(err))
	}
	end := "committed"
	if err != nil {
		end = "rolled back"
		err = tx.rollback(ctx)
	} else {
		err = tx.commit(ctx)
	}
	if err != nil {
		end = "error: " + err.Error()
	}
	t.add(p.name, "… then commit if accepted, else roll back", wantEnd, end)
}

// businessRows lists the business rows of job id in table.
func businessRows(ctx context.Context, d driver.Driver, table string, id int64) string {
	var rows []string
	err := withTx(ctx, d, func(tx fenced.Tx) error {
		rs, err := tx.Query(ctx, fmt.Sprintf(businessSelectSQL, table), id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var worker string
			var fence int64
			if err := rs.Scan(&worker, &fence); err != nil {
				return err
			}
			rows = append(rows, fmt.Sprintf("%s fence %d", worker, fence))
		}
		return rs.Err()
	})
	switch {
	case err != nil:
		return "error: " + err.Error()
	case len(rows) == 0:
		return "none"
	}
	return strings.Join(rows, "; ")
}
