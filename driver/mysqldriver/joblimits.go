package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// claimLimitedPickSQL picks and locks the candidates of a limited claim:
// eligible queued jobs in claim order whose key is not among the queue's
// full ones (fullKeysMySQL) and whose sequence is not blocked as this
// statement reads them (claimableSQL; its subqueries and the full keys'
// CTE read without locking), skipping rows other claimers hold; none when
// the queue is paused (queueNotPausedMySQL). The first %s names the
// index, the second is the kind filter. Parameters: queue (six times),
// the kinds, window.
var claimLimitedPickSQL = `
WITH ` + fullKeysMySQL + `
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, '') FROM fenced_jobs j%s
WHERE ` + queueNotPausedMySQL + ` AND j.queued_queue = ? AND j.run_at <= ` + now + `%s
    AND %s
ORDER BY j.priority, j.run_at, j.id
LIMIT ?
FOR UPDATE SKIP LOCKED`

// fullKeysMySQL is driver.FullKeysCTE with the running keyed rows read
// from MySQL's key column through fenced_jobs_key_running. Tested by
// driver.FullKeysTestSQL, it costs a candidate lookups in sets, where a
// count of its key's running attempts and probes of its limits each (the
// shared driver.JobClaimableSQL) made a pick that passed over a backlog of
// full keys read every running attempt of those keys once per queued job.
// Parameters: queue (four times).
var fullKeysMySQL = mysqlParams(rewrite(driver.FullKeysCTE,
	`SELECT r.concurrency_key, count(*) AS n FROM fenced_jobs r
        WHERE r.state = 'running' AND r.queue = $1 AND r.concurrency_key IS NOT NULL
        GROUP BY r.concurrency_key`,
	`SELECT r.running_concurrency_key AS concurrency_key, COUNT(*) AS n
        FROM fenced_jobs r FORCE INDEX (fenced_jobs_key_running)
        WHERE r.queue = $1 AND r.running_concurrency_key IS NOT NULL
        GROUP BY r.running_concurrency_key`))

// claimLimitedPick returns the limited pick of a kind filter.
func claimLimitedPick(kinds int) string {
	switch kinds {
	case 0:
		return fmt.Sprintf(claimLimitedPickSQL, "", "", claimableSQL)
	case 1:
		return fmt.Sprintf(claimLimitedPickSQL, " FORCE INDEX (fenced_jobs_queued_kind)", " AND j.kind = ?", claimableSQL)
	default:
		return fmt.Sprintf(claimLimitedPickSQL, " FORCE INDEX (fenced_jobs_queued)",
			" AND j.kind IN ("+placeholders(kinds)+")", claimableSQL)
	}
}

// MySQL has no partial indexes: a key's running attempts and a sequence's
// open jobs are found through the virtual columns running_concurrency_key
// and open_sequence_key (migration 5), which hold the key only in the
// states that count. keyColumns rewrites the shared statements' conditions
// on the key and the state into conditions on those columns, and names
// each one's index: left to itself, MariaDB 10.11 may read a key's running
// attempts through the sequence index by queue alone (seen in a keyed
// burn-down: every queued job of the queue read once per candidate, 28 s
// for one claim's 2,016 candidates), and a sequence's open jobs through
// the running-key index likewise. The rewrite must find each condition (a
// change to the shared text panics at start, and every test with it).
var keyColumns = []string{
	"FROM fenced_jobs r\n    WHERE r.state = 'running' AND r.queue = j.queue AND r.concurrency_key = j.concurrency_key",
	"FROM fenced_jobs r FORCE INDEX (fenced_jobs_key_running)\n    WHERE r.queue = j.queue AND r.running_concurrency_key = j.concurrency_key",
	"FROM fenced_jobs s\n    WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.state IN ('queued', 'running', 'failed')",
	"FROM fenced_jobs s FORCE INDEX (fenced_jobs_sequence)\n    WHERE s.queue = j.queue AND s.open_sequence_key = j.sequence_key",
}

// onKeyColumns is query with keyColumns' rewrites of the running key's
// condition and of the open sequence's.
func onKeyColumns(query string) string {
	return onSequenceColumns(rewrite(query, keyColumns[0], keyColumns[1]))
}

// onSequenceColumns is query with the rewrite of the open sequence's
// condition alone.
func onSequenceColumns(query string) string {
	return rewrite(query, keyColumns[2], keyColumns[3])
}

// rewrite replaces from in query with to; from must be there.
func rewrite(query, from, to string) string {
	if !strings.Contains(query, from) {
		panic("mysqldriver: the shared claim statement no longer reads " + from)
	}
	return strings.ReplaceAll(query, from, to)
}

// claimableSQL is the pick's pre-filter (driver.JobClaimableSQL with the
// key's fullness read from the sets of fullKeysMySQL, and the sequence's
// test on MySQL's key columns). Read before the locks, it only saves
// picking jobs that cannot be admitted. The deliberately broken build's filters nothing and
// has nothing to rewrite.
var claimableSQL = func() string {
	if !driver.LimitsEnforced {
		return driver.JobClaimableSQL
	}
	return `NOT ` + onSequenceColumns(driver.JobSequenceBlockedSQL) + `
    AND (j.concurrency_key IS NULL OR (` + driver.FullKeysTestSQL + `))`
}()

// The gate rows of a limited claim (fenced_job_gates): claimGatesLockSQL
// locks them in name order inside the claim's transaction (%s is the
// names' placeholders); claimGateAddSQL adds a missing one, outside it.
const (
	claimGateAddSQL   = `INSERT IGNORE INTO fenced_job_gates (name) VALUES (?)`
	claimGatesLockSQL = `SELECT name FROM fenced_job_gates FORCE INDEX (PRIMARY) WHERE name IN (%s) ORDER BY name FOR UPDATE`
)

// claimLimitLoadSQL reads the locked candidates afresh, after the gate
// locks (a READ COMMITTED read: a snapshot of its own): each one's key
// limit, its key's running attempts and whether its sequence is blocked, in
// claim order. %s is the ids' placeholders.
var claimLimitLoadSQL = `SELECT ` + onKeyColumns(driver.JobClaimLoadColumns) + `
FROM fenced_jobs j FORCE INDEX (PRIMARY) WHERE j.id IN (%s) AND j.state = 'queued'
ORDER BY j.priority, j.run_at, j.id`

// mysqlParams rewrites the shared statements' $1 into MySQL's ?.
func mysqlParams(query string) string { return strings.ReplaceAll(query, "$1", "?") }

// claimLimitedJobs is the claim of a queue gated by keys or limits (see
// driver/claimlimits.go): one transaction that picks and locks
// candidates, locks the gate rows of their keys in name order, reads their
// load afresh, admits and starts. The transaction is READ COMMITTED
// whatever the session's level, so that each read after the gate locks
// takes a snapshot of its own: under REPEATABLE READ the load would be read
// from the snapshot of the pick, before the locks. A deadlock is retried.
//
// A gate row missing (a key's first claim) ends the transaction; the rows
// are added, each by a statement that commits at once, and the claim runs
// again. They are never added inside the claim's transaction: two claimers
// inserting the same row there would deadlock, and adding them on another
// connection while the transaction holds one could exhaust the pool.
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	for try := 1; ; try++ {
		jobs, missing, err := d.claimLimitedOnce(ctx, p)
		if err != nil || len(missing) == 0 || try == 5 {
			return jobs, err
		}
		for _, n := range missing {
			if _, err := d.db.ExecContext(ctx, claimGateAddSQL, n); err != nil {
				return nil, err
			}
		}
	}
}

// claimLimitedOnce runs the limited claim's transaction once. When gate
// rows are missing it claims nothing and returns their names.
func (d *Driver) claimLimitedOnce(ctx context.Context, p driver.ClaimJobsParams) (jobs []*fencedtype.Job, missing []string, err error) {
	err = d.inTxOpts(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		jobs, missing = nil, nil
		pick := append(append([]any{p.Queue, p.Queue, p.Queue, p.Queue, p.Queue, p.Queue}, anys(p.Kinds)...), driver.ClaimWindow(p.Limit))
		cands, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (driver.ClaimCandidate, error) {
			var c driver.ClaimCandidate
			return c, r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey)
		}, claimLimitedPick(len(p.Kinds)), pick...)
		if err != nil || len(cands) == 0 {
			return err // an empty pick leaves the hint: the next pick decides
		}
		var load driver.ClaimLoad
		if err := readClaimGlobals(ctx, tx, p.Queue, &load, false); err != nil {
			return err
		}
		names := driver.LimitLockNames(p.Queue, cands, load.HasGlobal())
		d.limited.Set(p.Queue, len(names) > 0)
		if missing, err = lockGates(ctx, tx, names); err != nil || len(missing) > 0 {
			return err
		}
		ids := make([]int64, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		cands, err = sqldb.All(ctx, tx, func(r sqldb.Scanner) (driver.ClaimCandidate, error) {
			return driver.ScanClaimCandidate(r)
		}, fmt.Sprintf(claimLimitLoadSQL, placeholders(len(ids))), anys(ids)...)
		if err != nil {
			return err
		}
		if load.HasGlobal() {
			if err := readClaimGlobals(ctx, tx, p.Queue, &load, true); err != nil {
				return err
			}
		}
		admitted := driver.AdmitClaims(cands, load, p.Limit)
		if len(admitted) == 0 {
			return nil
		}
		jobs, err = startJobs(ctx, tx, p, admitted)
		return err
	})
	return jobs, missing, err
}

// lockGates locks the gate rows of names (sorted) inside tx, in name order,
// and returns the names that have no row yet (then it locked nothing that
// matters: the caller ends the transaction).
func lockGates(ctx context.Context, tx *sql.Tx, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	locked, err := sqldb.All(ctx, tx, sqldb.Value[string], fmt.Sprintf(claimGatesLockSQL, placeholders(len(names))), anys(names)...)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(locked))
	for _, n := range locked {
		have[n] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// runningByKindSQL is driver.JobRunningByKindSQL read from the state index
// alone (it holds queue and kind, migration 9): the running jobs of every
// queue, as many as run at once. Left to itself the optimizer may read every
// job of the queue through an index that leads with it.
const runningByKindSQL = `SELECT kind, COUNT(*) FROM fenced_jobs FORCE INDEX (fenced_jobs_state)
WHERE state = 'running' AND queue = ? GROUP BY kind`

// readClaimGlobals reads the queue's global limits into load, or, with
// running, the queue's running jobs by kind.
func readClaimGlobals(ctx context.Context, tx *sql.Tx, queue string, load *driver.ClaimLoad, running bool) error {
	query, add := mysqlParams(driver.JobGlobalLimitsSQL), load.AddGlobal
	if running {
		query, add = runningByKindSQL, load.AddRunning
	}
	type kindCount struct {
		kind string
		n    int
	}
	rows, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (kindCount, error) {
		var k kindCount
		return k, r.Scan(&k.kind, &k.n)
	}, query, queue)
	for _, r := range rows {
		add(r.kind, r.n)
	}
	return err
}

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits (queue, kind, concurrency_key, per_key_limit, global_limit, updated_at)
VALUES (?, ?, ?, ?, ?, ` + now + `)
ON DUPLICATE KEY UPDATE per_key_limit = VALUES(per_key_limit), global_limit = VALUES(global_limit),
    updated_at = VALUES(updated_at)`

// SetJobLimit implements driver.JobDriver: the upsert and its read back in
// one transaction.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT queue, kind, concurrency_key, per_key_limit, global_limit
FROM fenced_job_limits WHERE queue = ? AND kind = ? AND concurrency_key = ?`, l.Queue, l.Kind, l.ConcurrencyKey).
			Scan(&out.Queue, &out.Kind, &out.ConcurrencyKey, &out.PerKey, &out.Global)
	})
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = ? AND kind = ? AND concurrency_key = ?`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	n, err := execCount(ctx, d.db, deleteJobLimitSQL, queue, kind, key)
	if err != nil {
		return fmt.Errorf("delete job limit: %w", notMigrated(err))
	}
	if n == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of a queue, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE ? = '' OR queue = ?
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	out, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.JobLimit, error) {
		var l fencedtype.JobLimit
		return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
	}, listJobLimitsSQL, queue, queue)
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", notMigrated(err))
	}
	return out, nil
}
