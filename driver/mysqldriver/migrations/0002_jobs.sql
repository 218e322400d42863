-- The fenced job queue. Every worker-owned write is guarded by
-- id + fence + state = 'running' + unexpired lease.
--
-- JSON is the JSON type (on MariaDB an alias of LONGTEXT with a json_valid
-- check). Error texts are MEDIUMTEXT: a stored error may be 64 KiB, one byte
-- more than TEXT holds. MySQL has no partial indexes, so the claim and
-- recovery indexes lead with the state.

CREATE TABLE IF NOT EXISTS fenced_jobs (
    id               BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind             VARBINARY(200) NOT NULL CHECK (LENGTH(kind) BETWEEN 1 AND 200),
    queue            VARBINARY(100) NOT NULL CHECK (LENGTH(queue) BETWEEN 1 AND 100),
    args             JSON           NOT NULL,
    priority         INT            NOT NULL DEFAULT 0 CHECK (priority >= 0),
    state            VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at           DATETIME(6)    NOT NULL,
    attempt          INT            NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     INT            NOT NULL CHECK (max_attempts >= 1),
    -- bumped by every claim: the attempt's fencing token
    fence            BIGINT         NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner            VARBINARY(200),
    lease_expires_at DATETIME(6),
    cancel_requested BOOLEAN        NOT NULL DEFAULT FALSE,
    output           JSON,
    last_error       MEDIUMTEXT,
    progress         JSON,
    idempotency_key  VARBINARY(200) CHECK (LENGTH(idempotency_key) BETWEEN 1 AND 200),
    created_at       DATETIME(6)    NOT NULL,
    updated_at       DATETIME(6)    NOT NULL,
    attempted_at     DATETIME(6),
    finished_at      DATETIME(6),
    CONSTRAINT fenced_jobs_lease_iff_running CHECK ((state = 'running') = (lease_expires_at IS NOT NULL)),
    -- Several NULLs are allowed in a unique index.
    UNIQUE KEY fenced_jobs_idempotency_key (idempotency_key),
    -- Claims: equality on state and queue, then the claim order.
    KEY fenced_jobs_claim (state, queue, priority, run_at, id),
    -- Recovery of expired work.
    KEY fenced_jobs_running (state, lease_expires_at),
    -- Retention of finished jobs.
    KEY fenced_jobs_finished (finished_at),
    KEY fenced_jobs_state_id (state, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per ended attempt; the running attempt is read from the job row.
CREATE TABLE IF NOT EXISTS fenced_job_attempts (
    job_id     BIGINT      NOT NULL,
    attempt    INT         NOT NULL,
    fence      BIGINT      NOT NULL,
    owner      VARBINARY(200) NOT NULL,
    started_at DATETIME(6) NOT NULL,
    ended_at   DATETIME(6) NOT NULL,
    outcome    VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
               CHECK (outcome IN ('succeeded', 'retry', 'failed', 'snoozed', 'cancelled', 'lost')),
    error      MEDIUMTEXT,
    PRIMARY KEY (job_id, attempt),
    CONSTRAINT fenced_job_attempts_job FOREIGN KEY (job_id) REFERENCES fenced_jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
