-- Migration 0003's truncate trigger truncated fenced_job_attempts itself,
-- which PostgreSQL refuses when one statement truncates both tables
-- ("TRUNCATE fenced_jobs, fenced_job_attempts"). Deleting the rows works
-- in both cases (and finds none when both tables were truncated).
CREATE OR REPLACE FUNCTION fenced_jobs_truncate_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM fenced_job_attempts;
    RETURN NULL;
END $$;
