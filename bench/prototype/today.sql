-- Layout (a), today's: the job table of the product's PostgreSQL migrations
-- 0002, 0006, 0008, 0010, 0012 and 0016, columns, indexes and fillfactor as
-- they stand, without the triggers, history and rollup tables a claim and a
-- completion do not touch. The claim and completion statements are in
-- layouts.go (copied from driver/pgdriver/job.go and jobend.go).

CREATE TABLE fenced_jobs (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text        NOT NULL CHECK (octet_length(kind) BETWEEN 1 AND 200),
    queue            text        NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 100),
    args             jsonb       NOT NULL,
    priority         integer     NOT NULL DEFAULT 0 CHECK (priority >= 0),
    state            text        NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    fence            bigint      NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner            text,
    lease_expires_at timestamptz,
    cancel_requested boolean     NOT NULL DEFAULT false,
    output           jsonb,
    last_error       text,
    progress         jsonb,
    idempotency_key  text        CHECK (octet_length(idempotency_key) BETWEEN 1 AND 200),
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempted_at     timestamptz,
    finished_at      timestamptz,
    concurrency_key  text CHECK (octet_length(concurrency_key) BETWEEN 1 AND 200),
    sequence_key     text CHECK (octet_length(sequence_key) BETWEEN 1 AND 200),
    sequence_continue_on_failed boolean NOT NULL DEFAULT false,
    metadata         jsonb CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object'),
    CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
) WITH (fillfactor = 50);

CREATE INDEX fenced_jobs_claim ON fenced_jobs (queue, priority, run_at, id) WHERE state = 'queued';
CREATE INDEX fenced_jobs_claim_kind ON fenced_jobs (queue, kind, priority, run_at, id) WHERE state = 'queued';
CREATE INDEX fenced_jobs_running ON fenced_jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX fenced_jobs_finished ON fenced_jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE UNIQUE INDEX fenced_jobs_idempotency_key ON fenced_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX fenced_jobs_state_id ON fenced_jobs (state, id) WHERE state <> 'running';
CREATE INDEX fenced_jobs_key_running ON fenced_jobs (queue, concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
CREATE INDEX fenced_jobs_sequence ON fenced_jobs (queue, sequence_key, id)
    WHERE sequence_key IS NOT NULL AND state IN ('queued', 'running', 'failed');

CREATE TABLE fenced_job_limits (
    queue           text        NOT NULL,
    kind            text        NOT NULL DEFAULT '',
    concurrency_key text        NOT NULL DEFAULT '',
    per_key_limit   integer     NOT NULL DEFAULT 0,
    global_limit    integer     NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (queue, kind, concurrency_key)
);

CREATE TABLE fenced_queue_pauses (
    queue     text        PRIMARY KEY,
    paused_at timestamptz NOT NULL
);
