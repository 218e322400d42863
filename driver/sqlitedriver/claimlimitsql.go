package sqlitedriver

import "fmt"

// The statements of SQLite's limited claim (driver/internal/claimlimit for
// its steps; docs/design.md §10, "The limited claim", for their design and
// measurements). SQLite has one writer: in one write transaction nothing
// can change between the reads and the start, so it takes no lock of its
// own.

// keyLimitSQL is SQLite's one statement of the limit rule: the per-key
// limit (0 none) that applies to the row aliased j, which has the columns
// queue, kind and concurrency_key: the key's own limit in its queue, else
// the default of its kind, else the queue's. A limit of 0 declares none at
// its scope, so the next scope is asked. With an empty kind the kind's step
// reads the queue's own row: a key whose jobs are of several kinds gets
// its own limit, else the queue's.
const keyLimitSQL = `COALESCE(
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = j.concurrency_key),
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = j.kind AND l.concurrency_key = ''),
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = ''),
    0)`

// keyRunningSQL counts the running attempts of the concurrency key of the
// job row aliased j, in its queue. Expired attempts not yet recovered are
// running and count: their slot frees only when recovery takes the job
// back.
const keyRunningSQL = `(SELECT COUNT(*) FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = j.queue AND r.concurrency_key = j.concurrency_key)`

// sequenceBlockedSQL is true when the job row aliased j has a sequence key
// and may not run yet: a job of its sequence is running, or an earlier one
// (by id) is queued, or failed without sequence_continue_on_failed. A
// cancelled or succeeded job does not block.
const sequenceBlockedSQL = `(j.sequence_key IS NOT NULL AND EXISTS (SELECT 1 FROM fenced_jobs s
    WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.state IN ('queued', 'running', 'failed')
    AND s.id <> j.id
    AND (s.state = 'running' OR (s.id < j.id AND (s.state = 'queued' OR NOT s.sequence_continue_on_failed)))))`

// keyNotFullSQL is true when the job row aliased j has no concurrency key,
// or its key's running attempts are below the limit that applies to it.
const keyNotFullSQL = `(j.concurrency_key IS NULL
        OR ` + keyRunningSQL + ` < COALESCE(NULLIF(` + keyLimitSQL + `, 0), 2147483647))`

// claimLimitedPickSQL picks the candidates of a limited round: eligible
// queued jobs in claim order that the pre-filter (claimableSQL,
// limitcheck.go) lets through; none when the queue is paused
// (queueNotPausedSQLite). %s is the kind filter (?3). Parameters: ?1
// queue, ?2 window.
const claimLimitedPickSQL = `
SELECT j.id FROM fenced_jobs j
WHERE j.state = 'queued' AND j.queue = ?1 AND j.run_at_us <= ` + nowUS + `%s
    AND ` + queueNotPausedSQLite + `
    AND ` + claimableSQL + `
ORDER BY j.priority, j.run_at_us, j.id
LIMIT ?2`

// The limited pick of each kind filter.
var (
	claimLimitedPickAnyKindSQL = fmt.Sprintf(claimLimitedPickSQL, "")
	claimLimitedPickOneKindSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind = ?3")
	claimLimitedPickOfKindsSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind IN (SELECT value FROM json_each(?3))")
)

// claimLimitLoadSQL reads the candidates (?1, a JSON array of ids) in
// claim order, as claimlimit.ScanCandidate scans them: each one's key
// limit, its key's running attempts and whether its sequence is blocked.
const claimLimitLoadSQL = `SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''),
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + keyLimitSQL + ` END,
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + keyRunningSQL + ` END,
    CASE WHEN ` + sequenceBlockedSQL + ` THEN 1 ELSE 0 END
FROM fenced_jobs j WHERE j.id IN (SELECT value FROM json_each(?1)) AND j.state = 'queued'
ORDER BY j.priority, j.run_at_us, j.id`

// claimLimitedStartSQL starts the admitted candidates. Parameters: ?1
// queue, ?2 owner, ?3 the ids (a JSON array), ?4 ttl_us.
const claimLimitedStartSQL = `
UPDATE fenced_jobs SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = ?2,
    lease_expires_us = ` + nowUS + ` + ?4,
    attempted_us = ` + nowUS + `, updated_us = ` + nowUS + `,
    cancel_requested = 0, progress = NULL
WHERE id IN (SELECT value FROM json_each(?3)) AND queue = ?1 AND state = 'queued'
RETURNING ` + jobColumns

// claimGlobalLimitsSQL reads the global limits of queue ?1: kind (empty
// for the whole queue) and limit.
const claimGlobalLimitsSQL = `SELECT kind, global_limit FROM fenced_job_limits
WHERE queue = ?1 AND concurrency_key = '' AND global_limit > 0`

// claimRunningByKindSQL counts the running jobs of queue ?1 by kind.
const claimRunningByKindSQL = `SELECT kind, COUNT(*) FROM fenced_jobs WHERE state = 'running' AND queue = ?1 GROUP BY kind`
