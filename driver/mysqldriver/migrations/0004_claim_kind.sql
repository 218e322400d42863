-- Claims filtered by one kind (a worker that runs only some of a queue's
-- kinds) read that kind's queued jobs in claim order, however many jobs of
-- other kinds wait ahead of them.
--
-- Idempotent, as every migration must be: MySQL 8 has no CREATE INDEX IF NOT
-- EXISTS, so the index is added only when the catalog does not list it yet,
-- nor the index of migration 9 that replaced it.
SET @fenced_add_claim_kind = IF(EXISTS (SELECT 1 FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs'
        AND INDEX_NAME IN ('fenced_jobs_claim_kind', 'fenced_jobs_queued_kind')),
    'DO 0',
    'CREATE INDEX fenced_jobs_claim_kind ON fenced_jobs (state, queue, kind, priority, run_at, id)');
PREPARE fenced_add_claim_kind FROM @fenced_add_claim_kind;
EXECUTE fenced_add_claim_kind;
DEALLOCATE PREPARE fenced_add_claim_kind;
