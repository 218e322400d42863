package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"
	"sort"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// enqueueSQL enqueues a batch in one statement. A row whose idempotency key
// exists already (or repeats within the batch) is skipped here and read back
// by the caller. Rows are inserted in input order, so their ids ascend in it.
// %s is enqueueOnConflict when a job of the batch has an idempotency key,
// else nothing: a plain insert logs no confirmation record per row, as an
// insert that may conflict does (48 bytes of WAL a job).
const enqueueSQL = `
INSERT INTO fenced_jobs AS j (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, created_at, updated_at)
SELECT i.kind, i.queue, i.args, i.priority,
    COALESCE(i.run_at, clock_timestamp() + i.delay_us * interval '1 microsecond'),
    i.max_attempts, NULLIF(i.ikey, ''), NULLIF(i.ckey, ''), NULLIF(i.skey, ''), i.scont,
    clock_timestamp(), clock_timestamp()
FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[], $6::bigint[], $7::int[], $8::text[],
        $9::text[], $10::text[], $11::bool[])
    WITH ORDINALITY AS i(kind, queue, args, priority, run_at, delay_us, max_attempts, ikey, ckey, skey, scont, ord)
ORDER BY i.ord%s`

const enqueueOnConflict = `
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

// The enqueue statements of batches with and without idempotency keys.
var (
	// EnqueueBulk's, which read nothing back.
	enqueueKeyedBulkSQL = fmt.Sprintf(enqueueSQL, enqueueOnConflict)
	enqueuePlainBulkSQL = fmt.Sprintf(enqueueSQL, "")
	// Enqueue's, which read the jobs back.
	enqueueKeyedSQL = enqueueKeyedBulkSQL + enqueueReturning
	enqueuePlainSQL = enqueuePlainBulkSQL + enqueueReturning
)

const enqueueReturning = `
RETURNING ` + jobColumns

// Enqueue implements driver.JobDriver.
func (d *Driver) Enqueue(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	n := len(jobs)
	args, keyed := enqueueArgs(jobs)
	query := enqueuePlainSQL
	if keyed {
		query = enqueueKeyedSQL
	}
	var q querier = d.pool
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return nil, err
		}
		q = ptx
	}
	inserted, err := collectJobs(q.Query(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	// Ids are drawn in input order, so sorted by id the inserted rows are in
	// input order; the rest had an idempotency key that already existed.
	sort.Slice(inserted, func(a, b int) bool { return inserted[a].ID < inserted[b].ID })
	out := make([]fencedtype.EnqueueResult, n)
	byKey := map[string]*fencedtype.Job{}
	for _, j := range inserted {
		if j.IdempotencyKey != "" {
			byKey[j.IdempotencyKey] = j
		}
	}
	next, used := 0, map[string]bool{}
	var existing []string
	for i, in := range jobs {
		if k := in.IdempotencyKey; k != "" && (byKey[k] == nil || used[k]) {
			existing = append(existing, k)
			continue
		} else if k != "" {
			used[k] = true
		}
		out[i].Job = inserted[next]
		next++
	}
	if len(existing) == 0 {
		return out, nil
	}
	found, err := collectJobs(q.Query(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.idempotency_key = ANY($1)`, existing))
	if err != nil {
		return nil, fmt.Errorf("enqueue: read existing keys: %w", err)
	}
	for _, j := range found {
		byKey[j.IdempotencyKey] = j
	}
	for i, in := range jobs {
		if out[i].Job == nil {
			out[i] = fencedtype.EnqueueResult{Job: byKey[in.IdempotencyKey], Existing: true}
			if out[i].Job == nil {
				return nil, fmt.Errorf("enqueue: idempotency key %q conflicted but its job was not found", in.IdempotencyKey)
			}
		}
	}
	return out, nil
}

// enqueueArgs are enqueueSQL's arguments for jobs, and whether one of them
// has an idempotency key.
func enqueueArgs(jobs []driver.EnqueueParams) (args []any, keyed bool) {
	n := len(jobs)
	kinds, queues, jargs, keys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	prios, maxes, delays := make([]int32, n), make([]int32, n), make([]int64, n)
	runAts := make([]*time.Time, n)
	ckeys, skeys, sconts := make([]string, n), make([]string, n), make([]bool, n)
	for i, j := range jobs {
		kinds[i], queues[i], jargs[i], keys[i] = j.Kind, j.Queue, string(j.Args), j.IdempotencyKey
		keyed = keyed || j.IdempotencyKey != ""
		ckeys[i], skeys[i], sconts[i] = j.ConcurrencyKey, j.SequenceKey, j.SequenceContinueOnFailed
		prios[i], maxes[i], delays[i] = int32(j.Priority), int32(j.MaxAttempts), j.Delay.Microseconds()
		if !j.RunAt.IsZero() {
			t := j.RunAt
			runAts[i] = &t
		}
	}
	return []any{kinds, queues, jargs, prios, runAts, delays, maxes, keys, ckeys, skeys, sconts}, keyed
}

// cancelJobSQL cancels a queued job at once and flags a running one; the
// running job's worker learns it at its next heartbeat.
const cancelJobSQL = `
UPDATE fenced_jobs j SET
    state = CASE WHEN j.state = 'queued' THEN 'cancelled' ELSE j.state END,
    finished_at = CASE WHEN j.state = 'queued' THEN clock_timestamp() ELSE j.finished_at END,
    cancel_requested = (j.state = 'running'),
    updated_at = clock_timestamp()
WHERE j.id = $1 AND j.state IN ('queued', 'running')
RETURNING ` + jobColumns

// CancelJob implements driver.JobDriver.
func (d *Driver) CancelJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "cancel", id, cancelJobSQL)
}

// retryJobSQL puts a failed or cancelled job back to queued with a fresh
// budget of max_attempts more attempts.
const retryJobSQL = `
UPDATE fenced_jobs j SET
    state = 'queued', run_at = clock_timestamp(), finished_at = NULL, cancel_requested = false,
    max_attempts = j.attempt + j.max_attempts,
    updated_at = clock_timestamp()
WHERE j.id = $1 AND j.state IN ('failed', 'cancelled')
RETURNING ` + jobColumns

// RetryJob implements driver.JobDriver.
func (d *Driver) RetryJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "retry", id, retryJobSQL)
}

// jobAdmin runs a conditional state change; zero rows is ErrNotFound or
// a *fencedtype.JobStateError naming the state found.
func (d *Driver) jobAdmin(ctx context.Context, op string, id int64, query string) (*fencedtype.Job, error) {
	j, err := scanJob(d.pool.QueryRow(ctx, query, id))
	if err == nil {
		return j, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s job %d: %w", op, id, err)
	}
	cur, _, err := d.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return nil, &fencedtype.JobStateError{Op: op, ID: id, State: cur.State}
}

// GetJob implements driver.JobDriver.
func (d *Driver) GetJob(ctx context.Context, id int64) (*fencedtype.Job, []fencedtype.JobAttempt, error) {
	j, err := scanJob(d.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, err)
	}
	rows, err := d.pool.Query(ctx, `SELECT attempt, fence, owner, started_at, ended_at, outcome, COALESCE(error, '')
		FROM fenced_job_attempts WHERE job_id = $1 ORDER BY attempt`, id)
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d attempts: %w", id, err)
	}
	attempts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fencedtype.JobAttempt, error) {
		var a fencedtype.JobAttempt
		err := r.Scan(&a.Attempt, &a.Fence, &a.Owner, &a.StartedAt, &a.EndedAt, &a.Outcome, &a.Error)
		return a, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d attempts: %w", id, err)
	}
	return j, driver.WithRowAttempts(j, attempts), nil
}

// ListJobs implements driver.JobDriver: one statement with a condition
// for each filter given (so that a state's page reads the (state, id)
// index) and the ids within (AfterID, BeforeID), a missing BeforeID passed
// as the largest id: either order is an index range, and a deep page costs
// what the first does. Running jobs are not in that index; their page
// reads fenced_jobs_running and sorts what it finds, as many rows as
// attempts run at once. A known state is written into the statement, not
// passed as a parameter, so that a plan made for any value (after a few
// runs of one statement) still knows which partial index holds it.
func (d *Driver) ListJobs(ctx context.Context, p fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	where := []string{"j.id > $1", "j.id < $2"}
	args := []any{p.AfterID, reads.BeforeBound(p.BeforeID)}
	state := string(p.State)
	if p.State.Valid() {
		where, state = append(where, "j.state = '"+state+"'"), ""
	}
	for _, f := range []struct{ column, value string }{{"j.state", state}, {"j.queue", p.Queue}, {"j.kind", p.Kind}} {
		if f.value != "" {
			args = append(args, f.value)
			where = append(where, fmt.Sprintf("%s = $%d", f.column, len(args)))
		}
	}
	if p.Failing {
		where = append(where, "j.last_error IS NOT NULL")
	}
	order := "ASC"
	if p.Desc {
		order = "DESC"
	}
	args = append(args, p.Limit)
	query := fmt.Sprintf(`SELECT %s FROM fenced_jobs j WHERE %s ORDER BY j.id %s LIMIT $%d`,
		jobColumns, strings.Join(where, " AND "), order, len(args))
	jobs, err := collectJobs(d.pool.Query(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// DeleteJob implements driver.JobDriver. The attempt history goes with the
// job (the fenced_jobs_delete_history trigger).
func (d *Driver) DeleteJob(ctx context.Context, id int64) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM fenced_jobs WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// CountJobs implements driver.JobDriver.
func (d *Driver) CountJobs(ctx context.Context) ([]fencedtype.JobCount, error) {
	rows, err := d.pool.Query(ctx, `SELECT queue, state, count(*) FROM fenced_jobs GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (fencedtype.JobCount, error) { return reads.ScanJobCount(r) })
}
