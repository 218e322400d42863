-- Fewer writes per job (docs/design.md §10, PostgreSQL).
--
-- Half of each fenced_jobs page is left free at insert. A job's row is
-- written three times: by its enqueue, its claim and its end. With room on
-- its own page, the claim's and the end's new versions stay there:
-- PostgreSQL then logs only the bytes that changed, and needs no extra
-- record to lock the old version while it looks for another page. A
-- burn-down of 100,000 jobs wrote 11% less WAL per job (2,021 -> 1,798
-- bytes). Dead versions on the page are pruned by later reads, making room
-- again. It applies to pages filled from now on; a backlog takes up to twice
-- the pages.
ALTER TABLE fenced_jobs SET (fillfactor = 50);

-- The (state, id) index leaves running jobs out: every claim wrote an entry
-- to it, and a listing of running jobs reads fenced_jobs_running instead
-- (running jobs are as many as the workers run at once). Listings of the
-- other states still read a range of it.
DROP INDEX fenced_jobs_state_id;
CREATE INDEX fenced_jobs_state_id ON fenced_jobs (state, id) WHERE state <> 'running';
