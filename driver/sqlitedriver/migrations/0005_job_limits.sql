-- Concurrency limits and sequences (docs/design.md, "Concurrency limits and
-- sequences"). A job may name a concurrency key, whose running attempts
-- are bounded by the declared limits, and a sequence key, whose jobs run one
-- at a time in id order.
ALTER TABLE fenced_jobs ADD COLUMN concurrency_key TEXT
    CHECK (length(CAST(concurrency_key AS BLOB)) BETWEEN 1 AND 200);
ALTER TABLE fenced_jobs ADD COLUMN sequence_key TEXT
    CHECK (length(CAST(sequence_key AS BLOB)) BETWEEN 1 AND 200);
ALTER TABLE fenced_jobs ADD COLUMN sequence_continue_on_failed INTEGER NOT NULL DEFAULT 0
    CHECK (sequence_continue_on_failed IN (0, 1));

-- A key's running attempts are counted from the index alone.
CREATE INDEX fenced_jobs_key_running ON fenced_jobs (queue, concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
-- A sequence's jobs that can block it, in id order.
CREATE INDEX fenced_jobs_sequence ON fenced_jobs (queue, sequence_key, id)
    WHERE sequence_key IS NOT NULL AND state IN ('queued', 'running', 'failed');
-- A queue's running jobs, for its global limits, are counted through the
-- running-jobs index of recovery: an index of its own would cost every
-- claim of every job a write, limited or not.

-- Declared limits. The scope is (queue, kind, concurrency_key), '' where a
-- scope does not name one; 0 declares no limit.
CREATE TABLE fenced_job_limits (
    queue           TEXT    NOT NULL CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 100),
    kind            TEXT    NOT NULL DEFAULT '' CHECK (length(CAST(kind AS BLOB)) <= 200),
    concurrency_key TEXT    NOT NULL DEFAULT '' CHECK (length(CAST(concurrency_key AS BLOB)) <= 200),
    per_key_limit   INTEGER NOT NULL DEFAULT 0 CHECK (per_key_limit >= 0),
    global_limit    INTEGER NOT NULL DEFAULT 0 CHECK (global_limit >= 0),
    updated_us      INTEGER NOT NULL,
    PRIMARY KEY (queue, kind, concurrency_key),
    CHECK (concurrency_key = '' OR (kind = '' AND global_limit = 0))
) STRICT, WITHOUT ROWID;
