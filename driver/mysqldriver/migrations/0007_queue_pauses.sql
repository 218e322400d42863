-- Paused queues (docs/design.md, "Pausing a queue"). A queue with a row here
-- is not claimed from: every claim's pick probes this table by its primary
-- key. Running jobs and enqueues are not affected. Resuming deletes the
-- row. Idempotent, as every migration must be.
CREATE TABLE IF NOT EXISTS fenced_queue_pauses (
    queue     VARBINARY(100) NOT NULL PRIMARY KEY CHECK (LENGTH(queue) BETWEEN 1 AND 100),
    paused_at DATETIME(6)    NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
