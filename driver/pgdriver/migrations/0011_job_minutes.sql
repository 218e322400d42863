-- Charts over time (docs/design.md, "Charts over time"): what each queue's
-- jobs did in each minute, rolled up by the maintenance once the minute is
-- over, so that a page of charts reads at most an hour of these rows
-- whatever the size of fenced_jobs. The row of queue '' marks a minute as
-- rolled up (its counts are zero). waits holds the claim-wait counts per
-- bucket, comma separated (fencedtype.WaitBucketsMS).
CREATE TABLE fenced_job_minutes (
    minute    timestamptz NOT NULL,
    queue     text        NOT NULL CHECK (octet_length(queue) <= 100),
    succeeded bigint      NOT NULL,
    failed    bigint      NOT NULL,
    cancelled bigint      NOT NULL,
    retried   bigint      NOT NULL,
    lost      bigint      NOT NULL,
    depth     bigint      NOT NULL, -- -1: not known (rolled up late)
    waits     text        NOT NULL,
    PRIMARY KEY (minute, queue)
);

-- The rollup counts a minute's retried and lost attempts through this
-- index; the attempts that succeed or fail at once are not in it.
CREATE INDEX fenced_job_attempts_requeued ON fenced_job_attempts (ended_at)
WHERE outcome IN ('retry', 'lost');
