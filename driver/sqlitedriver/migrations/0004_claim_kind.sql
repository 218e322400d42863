-- Claims filtered by one kind (a worker that runs only some of a queue's
-- kinds) read that kind's queued jobs in claim order, however many jobs of
-- other kinds wait ahead of them.
CREATE INDEX IF NOT EXISTS fenced_jobs_claim_kind ON fenced_jobs (queue, kind, priority, run_at_us, id) WHERE state = 'queued';
