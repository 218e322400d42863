-- Charts over time (docs/design.md, "Charts over time"): what each queue's
-- jobs did in each minute, rolled up by the maintenance once the minute is
-- over, so that a page of charts reads at most an hour of these rows
-- whatever the size of fenced_jobs. The row of queue '' marks a minute as
-- rolled up (its counts are zero). waits holds the claim-wait counts per
-- bucket, comma separated (fencedtype.WaitBucketsMS). Idempotent, as every
-- migration must be.
CREATE TABLE IF NOT EXISTS fenced_job_minutes (
    minute    DATETIME(6)    NOT NULL,
    queue     VARBINARY(100) NOT NULL,
    succeeded BIGINT         NOT NULL,
    failed    BIGINT         NOT NULL,
    cancelled BIGINT         NOT NULL,
    retried   BIGINT         NOT NULL,
    lost      BIGINT         NOT NULL,
    depth     BIGINT         NOT NULL, -- -1: not known (rolled up late)
    waits     VARCHAR(400) CHARACTER SET ascii NOT NULL,
    PRIMARY KEY (minute, queue)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The rollup counts a minute's retried and lost attempts through this
-- index (MySQL has no partial index: every attempt is in it). MySQL 8 has
-- no CREATE INDEX IF NOT EXISTS, so the index is added only when the
-- catalog does not list it yet.
SET @fenced_add_requeued = IF(EXISTS (SELECT 1 FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_job_attempts'
        AND INDEX_NAME = 'fenced_job_attempts_requeued'),
    'DO 0',
    'CREATE INDEX fenced_job_attempts_requeued ON fenced_job_attempts (outcome, ended_at)');
PREPARE fenced_add_requeued FROM @fenced_add_requeued;
EXECUTE fenced_add_requeued;
DEALLOCATE PREPARE fenced_add_requeued;
