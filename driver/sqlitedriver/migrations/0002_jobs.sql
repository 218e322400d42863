-- The fenced job queue. Every worker-owned write is guarded by
-- id + fence + state = 'running' + unexpired lease. Times are integer
-- microseconds since the Unix epoch; JSON is stored as checked TEXT.

-- AUTOINCREMENT: ids are never reused, even after the newest job is deleted,
-- and fence advance can move them on through sqlite_sequence.
CREATE TABLE fenced_jobs (
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
    output           TEXT    CHECK (json_valid(output)),
    last_error       TEXT,
    progress         TEXT    CHECK (json_valid(progress)),
    idempotency_key  TEXT    CHECK (length(CAST(idempotency_key AS BLOB)) BETWEEN 1 AND 200),
    created_us       INTEGER NOT NULL,
    updated_us       INTEGER NOT NULL,
    attempted_us     INTEGER,
    finished_us      INTEGER,
    CHECK ((state = 'running') = (lease_expires_us IS NOT NULL))
) STRICT;

-- Claims read only eligible rows, so their cost stays flat as finished jobs
-- pile up.
CREATE INDEX fenced_jobs_claim ON fenced_jobs (queue, priority, run_at_us, id) WHERE state = 'queued';
-- Recovery of expired work.
CREATE INDEX fenced_jobs_running ON fenced_jobs (lease_expires_us) WHERE state = 'running';
-- Retention of finished jobs.
CREATE INDEX fenced_jobs_finished ON fenced_jobs (finished_us) WHERE finished_us IS NOT NULL;
CREATE UNIQUE INDEX fenced_jobs_idempotency_key ON fenced_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX fenced_jobs_state_id ON fenced_jobs (state, id);

-- One row per ended attempt; the running attempt is read from the job row.
CREATE TABLE fenced_job_attempts (
    job_id     INTEGER NOT NULL REFERENCES fenced_jobs (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL,
    fence      INTEGER NOT NULL,
    owner      TEXT    NOT NULL,
    started_us INTEGER NOT NULL,
    ended_us   INTEGER NOT NULL,
    outcome    TEXT    NOT NULL
               CHECK (outcome IN ('succeeded', 'retry', 'failed', 'snoozed', 'cancelled', 'lost')),
    error      TEXT,
    PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;
