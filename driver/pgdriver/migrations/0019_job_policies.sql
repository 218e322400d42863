-- A job's own policies (docs/design.md §6.15): the attempt timeout and retry
-- backoff given at enqueue, a JSON object {"timeout_us", "retry": {"base_us",
-- "max_us", "jitter"}} whose absent keys are unset. NULL when none was
-- given, so adding the column rewrites no row and a job without policies
-- costs nothing.
ALTER TABLE fenced_jobs ADD COLUMN policy jsonb CHECK (policy IS NULL OR jsonb_typeof(policy) = 'object');
