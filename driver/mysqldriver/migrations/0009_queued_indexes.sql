-- Claims read queued jobs through two indexes (claim order, and claim order
-- within a kind). MySQL has no partial indexes, and both used to lead with
-- state: every state change moved a job's entry in each, the end of an
-- attempt included. They now lead with queued_queue, a virtual column that
-- holds the queue while the job is queued and NULL otherwise: a claim
-- moves each entry once (to NULL), and an attempt that ends without
-- coming back to the queue (a completion, a failure out of attempts, a
-- cancel) leaves both alone. That is two index entries fewer per job in a
-- queue's usual life (docs/design.md §10).
--
-- And one index, (state, lease_expires_at, id, queue, kind), serves both
-- recovery (running jobs by expiry) and job listings by state (by id: a
-- job not running has no lease, so within its state, which a listing names
-- with lease_expires_at IS NULL, the entries are in id order), where two,
-- one for each, moved an entry at every state change. Its queue and kind
-- let the counts by queue and state (every metrics scrape) and a limited
-- claim's running jobs by kind read it alone.
--
-- Old and new builds do not mix across it: a build from before fails its
-- claims once the old indexes are gone, and a build from after fails its
-- claims until the column exists. Stop the workers, migrate, then start
-- the new build.
--
-- One ALTER, so the step is whole or absent; run again, it finds the column
-- and does nothing (and migration 4 does not bring its index back). Building
-- the indexes took 5.2 s for 800,000 jobs on MariaDB 10.11 here; writes
-- went on, but one insert waited 3.2 s of it. MySQL 8 (untested) builds an
-- index on a virtual column added by the same statement with writes held
-- off for the whole build.
SET @fenced_queued_indexes = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'queued_queue'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN queued_queue VARBINARY(100) AS (IF(state = ''queued'', queue, NULL)) VIRTUAL,
        DROP INDEX fenced_jobs_claim,
        DROP INDEX fenced_jobs_claim_kind,
        ADD KEY fenced_jobs_queued (queued_queue, priority, run_at, id),
        ADD KEY fenced_jobs_queued_kind (queued_queue, kind, priority, run_at, id),
        DROP INDEX fenced_jobs_running,
        DROP INDEX fenced_jobs_state_id,
        ADD KEY fenced_jobs_state (state, lease_expires_at, id, queue, kind)');
PREPARE fenced_queued_indexes FROM @fenced_queued_indexes;
EXECUTE fenced_queued_indexes;
DEALLOCATE PREPARE fenced_queued_indexes;
