-- Charts over time (docs/design.md, "Charts over time"): what each queue's
-- jobs did in each minute, rolled up by the maintenance once the minute is
-- over, so that a page of charts reads at most an hour of these rows
-- whatever the size of fenced_jobs. The row of queue '' marks a minute as
-- rolled up (its counts are zero). minute_us is the minute's start in
-- microseconds since the Unix epoch; waits holds the claim-wait counts per
-- bucket, comma separated (fencedtype.WaitBucketsMS).
CREATE TABLE fenced_job_minutes (
    minute_us INTEGER NOT NULL,
    queue     TEXT    NOT NULL CHECK (length(CAST(queue AS BLOB)) <= 100),
    succeeded INTEGER NOT NULL,
    failed    INTEGER NOT NULL,
    cancelled INTEGER NOT NULL,
    retried   INTEGER NOT NULL,
    lost      INTEGER NOT NULL,
    depth     INTEGER NOT NULL, -- -1: not known (rolled up late)
    waits     TEXT    NOT NULL,
    PRIMARY KEY (minute_us, queue)
) STRICT, WITHOUT ROWID;

-- The rollup counts a minute's retried and lost attempts through this
-- index; the attempts that succeed or fail at once are not in it.
CREATE INDEX fenced_job_attempts_requeued ON fenced_job_attempts (ended_us)
WHERE outcome IN ('retry', 'lost');
