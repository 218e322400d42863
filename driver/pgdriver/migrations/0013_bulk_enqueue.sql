-- Bulk enqueue (docs/design.md §10, PostgreSQL).
--
-- EnqueueBulk copies jobs in (COPY), which sends only each job's own
-- fields: the times a job is created and runnable at come from these
-- defaults, that is from the database's clock. now() is the start of the
-- copying transaction; Enqueue's INSERT reads clock_timestamp() instead,
-- but a volatile default would make PostgreSQL copy row by row. A change of
-- defaults only: it rewrites nothing.
ALTER TABLE fenced_jobs
    ALTER COLUMN run_at SET DEFAULT now(),
    ALTER COLUMN created_at SET DEFAULT now(),
    ALTER COLUMN updated_at SET DEFAULT now();
