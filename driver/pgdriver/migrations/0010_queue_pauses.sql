-- Paused queues (docs/design.md, "Pausing a queue"). A queue with a row here
-- is not claimed from: every claim statement probes this table by its
-- primary key, once per statement. Running jobs and enqueues are not
-- affected. Resuming deletes the row.
CREATE TABLE fenced_queue_pauses (
    queue     text        PRIMARY KEY CHECK (octet_length(queue) BETWEEN 1 AND 100),
    paused_at timestamptz NOT NULL
);
