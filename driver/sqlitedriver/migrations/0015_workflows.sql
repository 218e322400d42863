-- Workflows (docs/design.md §6.18): named tasks, each a job, that run once
-- the tasks they depend on have finished. A task waiting for a dependency
-- is pending, a sixth state that no claim reads, so no claim statement or
-- index changes.
--
-- The state check gains 'pending', and SQLite cannot change a CHECK: the
-- jobs table is rebuilt as migration 10 rebuilt it (see there: a new table
-- with every column in the same order, every row copied, the id sequence
-- carried over, the old table dropped, the new one renamed, and every index
-- made again exactly as it was; the driver runs migrations with foreign
-- keys off and checks them before it commits). The rebuilt table has the
-- columns of migrations 10 to 14 with their checks as they were, then the
-- task's columns:
--
--   workflow_id, task_name  the workflow (fenced_workflows.id) and the
--                           task's name in it; both NULL for a job that is
--                           no task, unique together for a task
--   deps_waiting            its edges still waiting (fenced_job_deps)
--   deps_failed             its edges failed (a dependency failed for good
--                           or was cancelled)
--   run_anyway              it runs once no edge waits, failed ones or not
--   workflow_cancelled      the release rule cancelled it (a dependency
--                           failed); a retry of that dependency resumes it
--
-- No foreign key on workflow_id: its check would cost every insert of a
-- task, and a workflow is deleted with its tasks and edges by the
-- statements that delete it (DeleteWorkflow, retention).
CREATE TABLE fenced_jobs_rebuilt (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT    NOT NULL CHECK (length(CAST(kind AS BLOB)) BETWEEN 1 AND 200),
    queue            TEXT    NOT NULL CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 100),
    args             TEXT    NOT NULL CHECK (json_valid(args)),
    priority         INTEGER NOT NULL DEFAULT 0 CHECK (priority >= 0),
    state            TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('pending', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
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
    metadata         TEXT    CHECK (metadata IS NULL OR json_valid(metadata) AND json_type(metadata) = 'object'),
    tags             TEXT    CHECK (tags IS NULL OR json_valid(tags) AND json_type(tags) = 'array'),
    unique_key       BLOB    CHECK (unique_key IS NULL OR length(unique_key) = 32),
    unique_bucket    INTEGER,
    unique_states    INTEGER,
    policy           TEXT    CHECK (policy IS NULL OR json_valid(policy) AND json_type(policy) = 'object'),
    workflow_id      INTEGER,
    task_name        TEXT    CHECK (length(CAST(task_name AS BLOB)) BETWEEN 1 AND 200),
    deps_waiting     INTEGER NOT NULL DEFAULT 0 CHECK (deps_waiting >= 0),
    deps_failed      INTEGER NOT NULL DEFAULT 0 CHECK (deps_failed >= 0),
    run_anyway       INTEGER NOT NULL DEFAULT 0 CHECK (run_anyway IN (0, 1)),
    workflow_cancelled INTEGER NOT NULL DEFAULT 0 CHECK (workflow_cancelled IN (0, 1)),
    CHECK ((state = 'running') = (lease_expires_us IS NOT NULL)),
    CHECK ((workflow_id IS NULL) = (task_name IS NULL))
) STRICT;

INSERT INTO fenced_jobs_rebuilt (
    id, kind, queue, args, priority, state, run_at_us, attempt, max_attempts, fence, owner,
    lease_expires_us, cancel_requested, output, last_error, progress, idempotency_key,
    created_us, updated_us, attempted_us, finished_us,
    concurrency_key, sequence_key, sequence_continue_on_failed,
    metadata, tags, unique_key, unique_bucket, unique_states, policy)
SELECT
    id, kind, queue, args, priority, state, run_at_us, attempt, max_attempts, fence, owner,
    lease_expires_us, cancel_requested, output, last_error, progress, idempotency_key,
    created_us, updated_us, attempted_us, finished_us,
    concurrency_key, sequence_key, sequence_continue_on_failed,
    metadata, tags, unique_key, unique_bucket, unique_states, policy
FROM fenced_jobs ORDER BY id;

-- The copy set the new table's sequence to its largest id; the old one's
-- may be above it, and goes on.
DELETE FROM sqlite_sequence WHERE name = 'fenced_jobs_rebuilt';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'fenced_jobs_rebuilt', seq FROM sqlite_sequence WHERE name = 'fenced_jobs';

DROP TABLE fenced_jobs;
ALTER TABLE fenced_jobs_rebuilt RENAME TO fenced_jobs;

-- The indexes of migrations 10 and 13, as they were.
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
CREATE UNIQUE INDEX fenced_jobs_unique ON fenced_jobs (unique_key, unique_bucket)
    WHERE unique_key IS NOT NULL AND (unique_states & CASE state WHEN 'queued' THEN 1 WHEN 'running' THEN 2
        WHEN 'succeeded' THEN 4 WHEN 'failed' THEN 8 WHEN 'cancelled' THEN 16 ELSE 0 END) <> 0;

-- A workflow's tasks, by name; also the reads of a workflow's tasks and
-- counts (its prefix).
CREATE UNIQUE INDEX fenced_jobs_task ON fenced_jobs (workflow_id, task_name) WHERE workflow_id IS NOT NULL;

-- A workflow: its name (need not be unique), when it was enqueued and when
-- CancelWorkflow cancelled it (NULL when it was not, or was retried since).
-- AUTOINCREMENT: an id is never handed out again, so a workflow deleted
-- (by hand or by retention) is never mistaken for a newer one.
CREATE TABLE fenced_workflows (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT    NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 200),
    created_us   INTEGER NOT NULL,
    cancelled_us INTEGER
) STRICT;
CREATE INDEX fenced_workflows_name ON fenced_workflows (name, id);

-- One row per dependency edge: the task job_id runs after the task dep_id.
-- status: 0 waiting, 1 done (the dependency succeeded), 2 failed (it failed
-- for good or was cancelled). Keyed by (dep_id, job_id): a dependency's
-- resolution reads exactly its own edges, by the key's prefix; a task's
-- dependencies are read by job_id.
CREATE TABLE fenced_job_deps (
    dep_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    status INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    PRIMARY KEY (dep_id, job_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX fenced_job_deps_job ON fenced_job_deps (job_id);
