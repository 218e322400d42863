-- Bulk enqueue (docs/design.md §10, PostgreSQL).
--
-- EnqueueBulk copies jobs in (COPY), which sends only each job's own
-- fields: the times a job is created and runnable at come from these
-- defaults, the database's clock read as Enqueue's INSERT reads it
-- (clock_timestamp(), not now(): a job copied late in a long transaction
-- is not dated from the transaction's start). A change of defaults only: it
-- rewrites nothing.
ALTER TABLE fenced_jobs
    ALTER COLUMN run_at SET DEFAULT clock_timestamp(),
    ALTER COLUMN created_at SET DEFAULT clock_timestamp(),
    ALTER COLUMN updated_at SET DEFAULT clock_timestamp();
