-- Paused queues (docs/design.md, "Pausing a queue"). A queue with a row here
-- is not claimed from: every claim statement probes this table by its
-- primary key. Running jobs and enqueues are not affected. Resuming deletes
-- the row. paused_us is integer microseconds since the Unix epoch.
CREATE TABLE fenced_queue_pauses (
    queue     TEXT    PRIMARY KEY CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 100),
    paused_us INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
