package mysqldriver

import "fmt"

// The statements of MySQL's limited claim (driver/internal/claimlimit for
// its steps; docs/design.md §10, "The limited claim", for their design and
// measurements). MySQL has no partial indexes: a key's running attempts and
// a sequence's open jobs are found through the virtual columns
// running_concurrency_key and open_sequence_key (migration 5), which hold
// the key only in the states that count, and every read of them names its
// index: left to itself, MariaDB 10.11 may read a key's running attempts
// through the sequence index by queue alone, and a sequence's open jobs
// through the running-key index likewise (every job of the queue, once per
// candidate).

// keyLimitSQL is MySQL's one statement of the limit rule: the per-key limit
// (0 none) that applies to the row aliased j, which has the columns queue,
// kind and concurrency_key: the key's own limit in its queue, else the
// default of its kind, else the queue's. A limit of 0 declares none at its
// scope, so the next scope is asked. With an empty kind the kind's step
// reads the queue's own row: a job of a kind that declares no default, or a
// key whose jobs are of several kinds, gets the key's own limit, else the
// queue's.
const keyLimitSQL = `COALESCE(
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = j.concurrency_key),
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = j.kind AND l.concurrency_key = ''),
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = ''),
    0)`

// runningKeysSQL defines running_keys: the running attempts of each
// concurrency key of a queue, read once from fenced_jobs_key_running, which
// holds the key of running jobs alone: as many entries as the queue has
// running keyed jobs. Expired attempts not yet recovered are running and
// count: their slot frees only when recovery takes the job back.
// Parameter: queue.
const runningKeysSQL = `running_keys AS (
    SELECT r.queue, r.running_concurrency_key AS concurrency_key, COUNT(*) AS n
    FROM fenced_jobs r FORCE INDEX (fenced_jobs_key_running)
    WHERE r.queue = ? AND r.running_concurrency_key IS NOT NULL
    GROUP BY r.queue, r.running_concurrency_key
)`

// sequenceBlockedSQL is true when the job row aliased j has a sequence key
// and may not run yet: a job of its sequence is running, or an earlier one
// (by id) is queued, or failed without sequence_continue_on_failed. A
// cancelled or succeeded job does not block.
const sequenceBlockedSQL = `(j.sequence_key IS NOT NULL AND EXISTS (SELECT 1 FROM fenced_jobs s FORCE INDEX (fenced_jobs_sequence)
    WHERE s.queue = j.queue AND s.open_sequence_key = j.sequence_key
    AND s.id <> j.id
    AND (s.state = 'running' OR (s.id < j.id AND (s.state = 'queued' OR NOT s.sequence_continue_on_failed)))))`

// fullKeysSQL defines, for a pick of a queue, running_keys (runningKeysSQL);
// key_kinds: the kinds of the queue that declare a per-key default, and the
// empty kind standing for every other; and full_keys: the running keys whose running attempts reach keyLimitSQL,
// each with the kinds of key_kinds it is full for. Only keys at or above
// the queue's smallest declared limit are asked: no limit below it can
// apply. A locking read's CTEs read without locking. Parameters: queue
// (three times).
const fullKeysSQL = runningKeysSQL + `,
key_kinds AS (
    SELECT '' AS kind
    UNION ALL
    SELECT d.kind FROM fenced_job_limits d
    WHERE d.queue = ? AND d.concurrency_key = '' AND d.kind <> '' AND d.per_key_limit > 0
),
full_keys AS (
    SELECT j.concurrency_key, j.kind FROM (
        SELECT rk.queue, rk.concurrency_key, rk.n, k.kind FROM running_keys rk CROSS JOIN key_kinds k
        WHERE rk.n >= (SELECT MIN(l.per_key_limit) FROM fenced_job_limits l WHERE l.queue = ? AND l.per_key_limit > 0)
    ) j
    WHERE j.n >= NULLIF(` + keyLimitSQL + `, 0)
)`

// notFullSQL is true when the job row aliased j has no concurrency key, or
// its key is not full for its kind in fullKeysSQL's sets: a job of a kind
// of key_kinds is looked up under its kind, any other under the empty kind
// (MariaDB takes no subquery inside a row compared with IN): lookups in
// sets, not a count per job (docs/design.md §10, "The limited claim").
const notFullSQL = `(j.concurrency_key IS NULL OR (
        (j.concurrency_key, j.kind) NOT IN (SELECT concurrency_key, kind FROM full_keys WHERE kind <> '')
        AND NOT (j.concurrency_key IN (SELECT concurrency_key FROM full_keys WHERE kind = '')
            AND j.kind NOT IN (SELECT kind FROM key_kinds))))`

// claimLimitedPickSQL picks and locks the candidates of a limited round:
// eligible queued jobs in claim order, read whole (the claim returns the
// ones it starts as the start leaves them, without reading them again:
// startPicked), that the pre-filter lets through, skipping rows other
// claimers hold; none when the queue is paused (queueNotPausedMySQL). Each
// row also says whether the queue has a global limit (a primary-key range
// of fenced_job_limits) and whether the full keys are any. %[1]s is the
// WITH of fullKeysSQL or nothing, %[2]s whether any key is full (FALSE
// without them), %[3]s names the index, %[4]s is the kind filter, %[5]s the
// pre-filter: claimableSQL, or claimableNoFullSQL without the full keys
// (limitcheck.go). A locking read's subqueries and CTEs read without
// locking. Parameters: queue (claimLimitedPickQueues(full) times), the
// kinds, window.
const claimLimitedPickSQL = `
%[1]sSELECT ` + jobColumns + `,
    EXISTS (SELECT 1 FROM fenced_job_limits l WHERE l.queue = ? AND l.global_limit > 0), %[2]s
FROM fenced_jobs j%[3]s
WHERE ` + queueNotPausedMySQL + ` AND j.queued_queue = ? AND j.run_at <= ` + now + `%[4]s
    AND %[5]s
ORDER BY j.priority, j.run_at, j.id
LIMIT ?
FOR UPDATE SKIP LOCKED`

// claimLimitedPickQueues is how many times the limited pick, with or
// without the full keys, takes the queue.
func claimLimitedPickQueues(full bool) int {
	if full {
		return 6
	}
	return 3
}

// claimLimitedPick returns the limited pick of a kind filter of kinds
// kinds, with the full keys or without them.
func claimLimitedPick(kinds int, full bool) string {
	with, anyFull, prefilter := "", "FALSE", claimableNoFullSQL
	if full {
		with, anyFull, prefilter = "WITH "+fullKeysSQL+"\n", "EXISTS (SELECT 1 FROM full_keys)", claimableSQL
	}
	switch kinds {
	case 0:
		return fmt.Sprintf(claimLimitedPickSQL, with, anyFull, "", "", prefilter)
	case 1:
		return fmt.Sprintf(claimLimitedPickSQL, with, anyFull, " FORCE INDEX (fenced_jobs_queued_kind)", " AND j.kind = ?", prefilter)
	default:
		return fmt.Sprintf(claimLimitedPickSQL, with, anyFull, " FORCE INDEX (fenced_jobs_queued)", " AND j.kind IN ("+placeholders(kinds)+")", prefilter)
	}
}

// The gate rows of a limited claim (fenced_job_gates): claimGatesLockSQL
// locks them in name order inside the claim's transaction (%s is the
// names' placeholders); claimGatesAddSQL adds the missing ones, in name
// order, in one statement outside it (%s is a (?) row per name).
const (
	claimGatesAddSQL  = `INSERT IGNORE INTO fenced_job_gates (name) VALUES %s`
	claimGatesLockSQL = `SELECT name FROM fenced_job_gates FORCE INDEX (PRIMARY) WHERE name IN (%s) ORDER BY name FOR UPDATE`
)

// claimLimitLoadSQL reads the locked candidates afresh, after the gate
// locks (a READ COMMITTED read: a snapshot of its own), as
// claimlimit.ScanCandidate scans them: each one's key limit, its key's
// running attempts (from running_keys, the queue's running keys read once
// and joined: a count per candidate, a dependent subquery each, took
// MariaDB 10.11 about a quarter longer for a window of 1,016 candidates of
// 1,000 keys) and whether its sequence is blocked. The rows come in no order:
// the caller puts them in claim order. %s is the ids' placeholders.
// Parameters: queue, the ids.
const claimLimitLoadSQL = `WITH ` + runningKeysSQL + `
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''),
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + keyLimitSQL + ` END,
    COALESCE(rk.n, 0),
    CASE WHEN ` + sequenceBlockedSQL + ` THEN 1 ELSE 0 END
FROM fenced_jobs j FORCE INDEX (PRIMARY)
LEFT JOIN running_keys rk ON rk.concurrency_key = j.concurrency_key
WHERE j.id IN (%s) AND j.state = 'queued'`

// claimGlobalLimitsSQL reads the global limits of a queue: kind (empty for
// the whole queue) and limit.
const claimGlobalLimitsSQL = `SELECT kind, global_limit FROM fenced_job_limits
WHERE queue = ? AND concurrency_key = '' AND global_limit > 0`

// claimRunningByKindSQL counts the running jobs of a queue by kind from
// the state index alone (it holds queue and kind, migration 9), as many as
// run at once. Left to itself the optimizer may read every job of the queue
// through an index that leads with it.
const claimRunningByKindSQL = `SELECT kind, COUNT(*) FROM fenced_jobs FORCE INDEX (fenced_jobs_state)
WHERE state = 'running' AND queue = ? GROUP BY kind`
