-- Concurrency limits and sequences (docs/design.md, "Concurrency limits and
-- sequences"). A job may name a concurrency key, whose running attempts
-- are bounded by the declared limits, and a sequence key, whose jobs run one
-- at a time in id order.
--
-- Idempotent, as every migration must be: MySQL 8 has no ADD COLUMN IF NOT
-- EXISTS, so the columns and their indexes are added, in one ALTER, only
-- when the catalog does not list them yet. MySQL has no partial indexes, so
-- the key and sequence indexes are on virtual columns that hold the key
-- only while the job's state makes it count (running; queued, running or
-- failed) and NULL otherwise: the job without keys, whose columns stay NULL
-- whatever its state, never changes them, and no claim or end of it writes
-- to these indexes (an index on the key and the state would take a write
-- at every state change of every job).
SET @fenced_add_job_keys = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'concurrency_key'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN concurrency_key VARBINARY(200) NULL CHECK (LENGTH(concurrency_key) BETWEEN 1 AND 200),
        ADD COLUMN sequence_key VARBINARY(200) NULL CHECK (LENGTH(sequence_key) BETWEEN 1 AND 200),
        ADD COLUMN sequence_continue_on_failed BOOLEAN NOT NULL DEFAULT FALSE,
        ADD COLUMN running_concurrency_key VARBINARY(200)
            AS (IF(state = ''running'', concurrency_key, NULL)) VIRTUAL,
        ADD COLUMN open_sequence_key VARBINARY(200)
            AS (IF(state IN (''queued'', ''running'', ''failed''), sequence_key, NULL)) VIRTUAL,
        ADD KEY fenced_jobs_key_running (queue, running_concurrency_key),
        ADD KEY fenced_jobs_sequence (queue, open_sequence_key, id)');
PREPARE fenced_add_job_keys FROM @fenced_add_job_keys;
EXECUTE fenced_add_job_keys;
DEALLOCATE PREPARE fenced_add_job_keys;

-- Declared limits. The scope is (queue, kind, concurrency_key), '' where a
-- scope does not name one; 0 declares no limit.
CREATE TABLE IF NOT EXISTS fenced_job_limits (
    queue           VARBINARY(100) NOT NULL CHECK (LENGTH(queue) BETWEEN 1 AND 100),
    kind            VARBINARY(200) NOT NULL DEFAULT '',
    concurrency_key VARBINARY(200) NOT NULL DEFAULT '',
    per_key_limit   INT            NOT NULL DEFAULT 0 CHECK (per_key_limit >= 0),
    global_limit    INT            NOT NULL DEFAULT 0 CHECK (global_limit >= 0),
    updated_at      DATETIME(6)    NOT NULL,
    PRIMARY KEY (queue, kind, concurrency_key),
    CONSTRAINT fenced_job_limits_key_scope CHECK (concurrency_key = '' OR (kind = '' AND global_limit = 0))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per lock name of a limited claim (a concurrency key, a sequence
-- key or a queue with a global limit): claimers lock the rows of their
-- candidates' names, in name order, before they count running attempts.
-- Rows are added when a name is first used and never removed.
CREATE TABLE IF NOT EXISTS fenced_job_gates (
    name VARBINARY(400) NOT NULL PRIMARY KEY
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
