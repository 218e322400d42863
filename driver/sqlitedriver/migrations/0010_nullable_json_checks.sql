-- The checks of the nullable JSON columns (output, progress) accept NULL
-- explicitly. CHECK (json_valid(output)) passed for a NULL output only
-- because the SQLite this driver embeds makes json_valid(NULL) NULL; older
-- SQLite makes it 0 (the 3.40 of Debian 12's sqlite3, for one), so there
-- PRAGMA integrity_check reported "CHECK constraint failed" on every job
-- without output or progress, a false alarm of corruption on a healthy
-- database, and such a job could not be written.
--
-- SQLite cannot change a CHECK, so the table is rebuilt as SQLite's
-- documentation says (ALTER TABLE, "Making Other Kinds Of Table Schema
-- Changes"): a new table with the same columns in the same order, every
-- row copied, the old table dropped, the new one renamed, and its indexes
-- made again as they were. The driver runs migrations with foreign keys
-- off (dropping the jobs would otherwise delete every attempt of
-- fenced_job_attempts, whose reference follows the rename) and checks
-- them before it commits. The id sequence is carried over, so no id is
-- handed out again: a fence advance or a deleted newest job may have left
-- it above the largest id. (Statistics of an ANALYZE of fenced_jobs, which
-- the driver never runs, would be dropped with the old table.)
CREATE TABLE fenced_jobs_rebuilt (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT    NOT NULL CHECK (length(CAST(kind AS BLOB)) BETWEEN 1 AND 200),
    queue            TEXT    NOT NULL CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 100),
    args             TEXT    NOT NULL CHECK (json_valid(args)),
    priority         INTEGER NOT NULL DEFAULT 0 CHECK (priority >= 0),
    state            TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at_us        INTEGER NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    -- bumped by every claim: the attempt's fencing token
    fence            INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner            TEXT,
    lease_expires_us INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    output           TEXT    CHECK (output IS NULL OR json_valid(output)),
    last_error       TEXT,
    progress         TEXT    CHECK (progress IS NULL OR json_valid(progress)),
    idempotency_key  TEXT    CHECK (length(CAST(idempotency_key AS BLOB)) BETWEEN 1 AND 200),
    created_us       INTEGER NOT NULL,
    updated_us       INTEGER NOT NULL,
    attempted_us     INTEGER,
    finished_us      INTEGER,
    concurrency_key  TEXT    CHECK (length(CAST(concurrency_key AS BLOB)) BETWEEN 1 AND 200),
    sequence_key     TEXT    CHECK (length(CAST(sequence_key AS BLOB)) BETWEEN 1 AND 200),
    sequence_continue_on_failed INTEGER NOT NULL DEFAULT 0
                     CHECK (sequence_continue_on_failed IN (0, 1)),
    CHECK ((state = 'running') = (lease_expires_us IS NOT NULL))
) STRICT;

INSERT INTO fenced_jobs_rebuilt (
    id, kind, queue, args, priority, state, run_at_us, attempt, max_attempts, fence, owner,
    lease_expires_us, cancel_requested, output, last_error, progress, idempotency_key,
    created_us, updated_us, attempted_us, finished_us,
    concurrency_key, sequence_key, sequence_continue_on_failed)
SELECT
    id, kind, queue, args, priority, state, run_at_us, attempt, max_attempts, fence, owner,
    lease_expires_us, cancel_requested, output, last_error, progress, idempotency_key,
    created_us, updated_us, attempted_us, finished_us,
    concurrency_key, sequence_key, sequence_continue_on_failed
FROM fenced_jobs ORDER BY id;

-- The copy set the new table's sequence to its largest id; the old one's
-- may be above it, and goes on.
DELETE FROM sqlite_sequence WHERE name = 'fenced_jobs_rebuilt';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'fenced_jobs_rebuilt', seq FROM sqlite_sequence WHERE name = 'fenced_jobs';

DROP TABLE fenced_jobs;
ALTER TABLE fenced_jobs_rebuilt RENAME TO fenced_jobs;

-- The indexes of migrations 2, 4 and 5, as they were.
CREATE INDEX fenced_jobs_claim ON fenced_jobs (queue, priority, run_at_us, id) WHERE state = 'queued';
CREATE INDEX fenced_jobs_running ON fenced_jobs (lease_expires_us) WHERE state = 'running';
CREATE INDEX fenced_jobs_finished ON fenced_jobs (finished_us) WHERE finished_us IS NOT NULL;
CREATE UNIQUE INDEX fenced_jobs_idempotency_key ON fenced_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX fenced_jobs_state_id ON fenced_jobs (state, id);
CREATE INDEX fenced_jobs_claim_kind ON fenced_jobs (queue, kind, priority, run_at_us, id) WHERE state = 'queued';
CREATE INDEX fenced_jobs_key_running ON fenced_jobs (queue, concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
CREATE INDEX fenced_jobs_sequence ON fenced_jobs (queue, sequence_key, id)
    WHERE sequence_key IS NOT NULL AND state IN ('queued', 'running', 'failed');
