-- The fenced job queue. Every worker-owned write is guarded by
-- id + fence + state = 'running' + unexpired lease.

CREATE TABLE fenced_jobs (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text        NOT NULL CHECK (octet_length(kind) BETWEEN 1 AND 200),
    queue            text        NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 100),
    args             jsonb       NOT NULL,
    priority         integer     NOT NULL DEFAULT 0 CHECK (priority >= 0),
    state            text        NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at           timestamptz NOT NULL,
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    -- bumped by every claim: the attempt's fencing token
    fence            bigint      NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner            text,
    lease_expires_at timestamptz,
    cancel_requested boolean     NOT NULL DEFAULT false,
    output           jsonb,
    last_error       text,
    progress         jsonb,
    idempotency_key  text        CHECK (octet_length(idempotency_key) BETWEEN 1 AND 200),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    attempted_at     timestamptz,
    finished_at      timestamptz,
    CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);

-- Claims read only eligible rows, so their cost stays flat as finished jobs
-- pile up.
CREATE INDEX fenced_jobs_claim ON fenced_jobs (queue, priority, run_at, id) WHERE state = 'queued';
-- Recovery of expired work.
CREATE INDEX fenced_jobs_running ON fenced_jobs (lease_expires_at) WHERE state = 'running';
-- Retention of finished jobs.
CREATE INDEX fenced_jobs_finished ON fenced_jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE UNIQUE INDEX fenced_jobs_idempotency_key ON fenced_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX fenced_jobs_state_id ON fenced_jobs (state, id);

-- One row per ended attempt; the running attempt is read from the job row.
CREATE TABLE fenced_job_attempts (
    job_id     bigint      NOT NULL REFERENCES fenced_jobs (id) ON DELETE CASCADE,
    attempt    integer     NOT NULL,
    fence      bigint      NOT NULL,
    owner      text        NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    outcome    text        NOT NULL
               CHECK (outcome IN ('succeeded', 'retry', 'failed', 'snoozed', 'cancelled', 'lost')),
    error      text,
    PRIMARY KEY (job_id, attempt)
);

-- Wake idle workers: one notification per queue per inserting statement,
-- delivered when the inserting transaction commits.
CREATE FUNCTION fenced_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fenced_jobs', q.queue) FROM (SELECT DISTINCT queue FROM fenced_new_jobs) q;
    RETURN NULL;
END $$;

CREATE TRIGGER fenced_jobs_notify AFTER INSERT ON fenced_jobs
REFERENCING NEW TABLE AS fenced_new_jobs
FOR EACH STATEMENT EXECUTE FUNCTION fenced_jobs_notify();
