-- A job's own policies (docs/design.md §6.15): the attempt timeout and retry
-- backoff given at enqueue, a JSON object {"timeout_us", "retry": {"base_us",
-- "max_us", "jitter"}} whose absent keys are unset. NULL when none was
-- given, so a job without policies costs nothing. The check accepts NULL
-- explicitly (see migration 10); AND binds before OR, so a NULL passes and
-- any other value must be a valid JSON object.
ALTER TABLE fenced_jobs ADD COLUMN policy TEXT
    CHECK (policy IS NULL OR json_valid(policy) AND json_type(policy) = 'object');
