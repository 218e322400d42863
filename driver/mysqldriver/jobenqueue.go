package mysqldriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// enqueueSQL enqueues jobs, one VALUES row each (jobInsertRow).
// Parameters per row: kind, queue, args, priority, run_at or NULL,
// delay_us, max_attempts, idempotency key, concurrency key, sequence key
// (NULL for none), sequence_continue_on_failed, metadata (NULL for none),
// policy (NULL for none), tags (a JSON array, NULL for none).
const (
	enqueueSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags)
VALUES `
	jobInsertValues = `?, ?, ?, ?, COALESCE(CAST(? AS DATETIME(6)), ` + now + ` + INTERVAL ? MICROSECOND), ?, ?, ?, ?, ?, ?, ` +
		now + `, ` + now + `, ?, ?`
	jobInsertRow = `(` + jobInsertValues + `)`
)

// enqueueKeyedSQL enqueues one job with an idempotency key unless a job
// holds the key already: its parameters are jobInsertRow's and the key
// again. The key is looked up before the insert, not only left to the
// unique index: InnoDB allocates an auto-increment id to a row before the
// index refuses it as a duplicate, so every repeat would consume an id.
// Under READ COMMITTED the lookup is a consistent read; a job with the key
// committed since (or not yet committed) still meets the unique index, as
// before, and that race alone consumes an id. Under REPEATABLE READ the
// lookup takes a shared next-key lock, and a deadlock between two such
// enqueuers is retried as the driver's own transactions are.
const enqueueKeyedSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags)
SELECT ` + jobInsertValues + ` FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = ?)`

// jobByKeySQL reads the job holding an idempotency key: a locking read, so
// it sees the committed row of a concurrent enqueuer, whose commit the
// failed insert waited for.
const jobByKeySQL = `SELECT ` + jobColumns + ` FROM fenced_jobs j WHERE j.idempotency_key = ? LOCK IN SHARE MODE`

// Limits on one multiple-row INSERT, kept well under max_allowed_packet
// though a job's args may be 1 MiB.
const (
	insertRunJobs  = 500
	insertRunBytes = 4 << 20
)

// Enqueue implements driver.JobDriver: in one transaction (or the
// caller's), the jobs inserted in input order, so their ids ascend in it,
// then read back together.
//
// MySQL returns only the first id of a multiple-row INSERT. The ids of one
// are consecutive (by auto_increment_increment) only when
// innodb_autoinc_lock_mode is 0 or 1 (MariaDB's default): then runs of jobs
// without an idempotency key go in one statement each. Otherwise (MySQL 8's
// default of 2 interleaves concurrent inserts' ids), and for every job with
// a key, one statement per job: a duplicate key fails the statement, and in
// MySQL a failed statement undoes only itself, so the existing job is read
// and the transaction, the caller's too, goes on.
func (d *Driver) Enqueue(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	var out []fencedtype.EnqueueResult
	var err error
	if tx != nil {
		var stx *sql.Tx
		if stx, err = sqlOf(tx); err != nil {
			return nil, err
		}
		out, err = insertJobs(ctx, stx, jobs, d.consecutiveIDs)
	} else {
		err = d.inTx(ctx, func(tx *sql.Tx) (err error) {
			out, err = insertJobs(ctx, tx, jobs, d.consecutiveIDs)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return out, nil
}

// inserter enqueues one batch in tx.
type inserter struct {
	tx       *sql.Tx
	jobs     []driver.EnqueueParams
	out      []fencedtype.EnqueueResult
	inserted map[int]int64 // index in jobs → id of the row inserted for it
	step     int64         // auto_increment_increment, once read
}

func insertJobs(ctx context.Context, tx *sql.Tx, jobs []driver.EnqueueParams, consecutive bool) ([]fencedtype.EnqueueResult, error) {
	in := &inserter{tx: tx, jobs: jobs, out: make([]fencedtype.EnqueueResult, len(jobs)), inserted: map[int]int64{}}
	for i := 0; i < len(jobs); {
		end := i + 1
		if consecutive {
			end = runEnd(jobs, i)
		}
		var err error
		if end-i > 1 {
			err = in.run(ctx, i, end)
		} else {
			err = in.one(ctx, i)
		}
		if err != nil {
			return nil, err
		}
		i = end
	}
	if err := in.readBack(ctx); err != nil {
		return nil, err
	}
	return in.out, nil
}

// runEnd returns where the multiple-row INSERT of jobs from start ends:
// after a run of jobs without an idempotency key, within the statement's
// limits, or after jobs[start] alone when it has a key.
func runEnd(jobs []driver.EnqueueParams, start int) int {
	end := start + 1
	if jobs[start].IdempotencyKey != "" || jobs[start].UniqueKey != nil {
		return end
	}
	size := len(jobs[start].Args) + len(jobs[start].Metadata) + tagsSize(jobs[start].Tags)
	for end < len(jobs) && jobs[end].IdempotencyKey == "" && jobs[end].UniqueKey == nil && end-start < insertRunJobs && size < insertRunBytes {
		size += len(jobs[end].Args) + len(jobs[end].Metadata) + tagsSize(jobs[end].Tags)
		end++
	}
	return end
}

// insertSQL is the INSERT of jobs[from:to] and its arguments: for one job
// with an idempotency key, enqueueKeyedSQL, which inserts no row when the
// key exists.
func insertSQL(jobs []driver.EnqueueParams, from, to int) (string, []any) {
	if to-from == 1 && jobs[from].UniqueKey != nil {
		return enqueueUniqueSQL, uniqueArgs(jobs[from])
	}
	if to-from == 1 && jobs[from].IdempotencyKey != "" {
		return enqueueKeyedSQL, append(insertArgs(jobs[from]), []byte(jobs[from].IdempotencyKey))
	}
	rows := make([]string, 0, to-from)
	var args []any
	for i := from; i < to; i++ {
		rows, args = append(rows, jobInsertRow), append(args, insertArgs(jobs[i])...)
	}
	return enqueueSQL + strings.Join(rows, ", "), args
}

// insertArgs are the arguments of p's jobInsertRow.
func insertArgs(p driver.EnqueueParams) []any {
	var runAt any
	if !p.RunAt.IsZero() {
		runAt = timeArg(p.RunAt)
	}
	// No key is NULL, decided here: in SQL, NULLIF(?, '') would compare under
	// the connection's PAD SPACE collation, where a key of spaces equals ''.
	var key any
	if p.IdempotencyKey != "" {
		key = []byte(p.IdempotencyKey)
	}
	var meta any // NULL
	if p.Metadata != nil {
		meta = string(p.Metadata)
	}
	var policy any // NULL
	if p.Policy != nil {
		policy = string(p.Policy)
	}
	return []any{p.Kind, p.Queue, string(p.Args), p.Priority, runAt, p.Delay.Microseconds(), p.MaxAttempts, key,
		nullIfEmpty(p.ConcurrencyKey), nullIfEmpty(p.SequenceKey), p.SequenceContinueOnFailed, meta,
		policy, tagsJSON(p.Tags)}
}

// tagsJSON is tags as stored: a JSON array, or nil (NULL) for none.
func tagsJSON(tags []string) any {
	if len(tags) == 0 {
		return nil
	}
	b, _ := json.Marshal(tags) // []string always encodes
	return string(b)
}

// tagsSize is about the bytes tags take in a statement.
func tagsSize(tags []string) int {
	n := 0
	for _, t := range tags {
		n += len(t) + 3
	}
	return n
}

// one inserts jobs[i], or finds the job holding its idempotency key.
func (in *inserter) one(ctx context.Context, i int) error {
	if in.jobs[i].UniqueKey != nil {
		return in.oneUnique(ctx, i)
	}
	query, args := insertSQL(in.jobs, i, i+1)
	res, err := in.tx.ExecContext(ctx, query, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 1 {
		id, err := res.LastInsertId()
		in.inserted[i] = id
		return err
	}
	key := in.jobs[i].IdempotencyKey
	if err != nil && !isDuplicate(err) || key == "" {
		if err == nil {
			err = fmt.Errorf("insert of a job without a key wrote %d rows", n)
		}
		return err
	}
	j, err := scanJob(in.tx.QueryRowContext(ctx, jobByKeySQL, key))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("idempotency key %q conflicted but its job was not found", key)
	}
	if err != nil {
		return fmt.Errorf("read existing key %q: %w", key, err)
	}
	in.out[i] = fencedtype.EnqueueResult{Job: j, Existing: true}
	return nil
}

// run inserts jobs[from:to], none with an idempotency key, in one statement
// whose ids are consecutive.
func (in *inserter) run(ctx context.Context, from, to int) error {
	query, args := insertSQL(in.jobs, from, to)
	res, err := in.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	first, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if in.step == 0 {
		if err := in.tx.QueryRowContext(ctx, `SELECT @@SESSION.auto_increment_increment`).Scan(&in.step); err != nil {
			return err
		}
	}
	for i := from; i < to; i++ {
		in.inserted[i] = first + int64(i-from)*in.step
	}
	return nil
}

// readBack reads the inserted rows, still locked by the transaction, and
// checks each is the job it was inserted for.
func (in *inserter) readBack(ctx context.Context) error {
	ids := make([]int64, 0, len(in.inserted))
	for _, id := range in.inserted {
		ids = append(ids, id)
	}
	byID := map[int64]*fencedtype.Job{}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 1000)]
		ids = ids[len(chunk):]
		got, err := readJobs(ctx, in.tx, chunk)
		if err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		for id, j := range got {
			byID[id] = j
		}
	}
	for i, id := range in.inserted {
		j, p := byID[id], in.jobs[i]
		if j == nil || j.Kind != p.Kind || j.Queue != p.Queue || j.Priority != p.Priority ||
			j.MaxAttempts != p.MaxAttempts || j.IdempotencyKey != p.IdempotencyKey {
			return fmt.Errorf("job %d read back is not the job inserted for it", id)
		}
		j.DecidedAt = j.CreatedAt // the insert's own clock reading
		in.out[i] = fencedtype.EnqueueResult{Job: j}
	}
	return nil
}

// nullIfEmpty is NULL for an empty key, decided here (see args).
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return []byte(s)
}
