-- Concurrency limits and sequences (docs/design.md, "Concurrency limits and
-- sequences"). A job may name a concurrency key, whose running attempts
-- are bounded by the declared limits, and a sequence key, whose jobs run one
-- at a time in id order.
ALTER TABLE fenced_jobs
    ADD COLUMN concurrency_key text CHECK (octet_length(concurrency_key) BETWEEN 1 AND 200),
    ADD COLUMN sequence_key text CHECK (octet_length(sequence_key) BETWEEN 1 AND 200),
    ADD COLUMN sequence_continue_on_failed boolean NOT NULL DEFAULT false;

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
    queue           text        NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 100),
    kind            text        NOT NULL DEFAULT '' CHECK (octet_length(kind) <= 200),
    concurrency_key text        NOT NULL DEFAULT '' CHECK (octet_length(concurrency_key) <= 200),
    per_key_limit   integer     NOT NULL DEFAULT 0 CHECK (per_key_limit >= 0),
    global_limit    integer     NOT NULL DEFAULT 0 CHECK (global_limit >= 0),
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (queue, kind, concurrency_key),
    CHECK (concurrency_key = '' OR (kind = '' AND global_limit = 0))
);
