-- Workflows (docs/design.md §6.18): named tasks, each a job, that run after
-- the tasks they depend on.
--
-- A task with a dependency waits in a sixth job state, pending, which no
-- claim reads (claims read queued_queue, migration 9, so their statements
-- and indexes are unchanged). The state's CHECK gains it: on MariaDB the
-- CHECK of migration 2 is a column constraint named state, which no DROP
-- CONSTRAINT reaches, so the column is modified without it; MySQL 8 made
-- it a table constraint with a name of its own (fenced_jobs_chk_N), read
-- from the catalog and dropped with DROP CHECK, which MySQL has since
-- 8.0.16 (written for MySQL, run only on MariaDB).
-- The new CHECK is a named table constraint on both.
--
-- On the job row: workflow_id and task_name, unique together (a job that
-- is no task has NULLs, which never collide; the key also reads a
-- workflow's tasks), deps_waiting and deps_failed (the task's edges still
-- waiting, and failed), run_anyway and workflow_cancelled. The columns
-- have constant defaults; a job that is no task stores nothing more.
--
-- Idempotent, as every migration must be: one ALTER, whole or absent,
-- made only when the catalog does not list workflow_id. It checks every
-- existing row against the new CHECK, which copies the table: a large
-- queue takes a while to migrate. Stop the workers, migrate, then start
-- the new build.
SET @fenced_state_check = (SELECT tc.CONSTRAINT_NAME
    FROM information_schema.TABLE_CONSTRAINTS tc
    JOIN information_schema.CHECK_CONSTRAINTS cc
        ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
    WHERE tc.TABLE_SCHEMA = DATABASE() AND tc.TABLE_NAME = 'fenced_jobs' AND tc.CONSTRAINT_TYPE = 'CHECK'
        AND cc.CHECK_CLAUSE LIKE '%`state` in (%' AND cc.CHECK_CLAUSE NOT LIKE '%pending%'
    LIMIT 1);
SET @fenced_workflows = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'workflow_id'),
    'DO 0',
    CONCAT('ALTER TABLE fenced_jobs ',
        CASE WHEN @fenced_state_check IS NULL THEN ''
            WHEN @fenced_state_check = 'state' THEN
                'MODIFY COLUMN state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''queued'', '
            ELSE CONCAT('DROP CHECK `', @fenced_state_check, '`, ') END,
        'ADD CONSTRAINT fenced_jobs_state_valid
            CHECK (state IN (''pending'', ''queued'', ''running'', ''succeeded'', ''failed'', ''cancelled'')),
        ADD COLUMN workflow_id BIGINT NULL,
        ADD COLUMN task_name VARBINARY(200) NULL CHECK (LENGTH(task_name) BETWEEN 1 AND 200),
        ADD COLUMN deps_waiting INT NOT NULL DEFAULT 0 CHECK (deps_waiting >= 0),
        ADD COLUMN deps_failed INT NOT NULL DEFAULT 0 CHECK (deps_failed >= 0),
        ADD COLUMN run_anyway BOOLEAN NOT NULL DEFAULT FALSE,
        ADD COLUMN workflow_cancelled BOOLEAN NOT NULL DEFAULT FALSE,
        ADD UNIQUE KEY fenced_jobs_task (workflow_id, task_name)'));
PREPARE fenced_workflows FROM @fenced_workflows;
EXECUTE fenced_workflows;
DEALLOCATE PREPARE fenced_workflows;

-- One row per workflow. Names need not be unique; listings filter by name
-- in id order.
CREATE TABLE IF NOT EXISTS fenced_workflows (
    id           BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name         VARBINARY(200) NOT NULL CHECK (LENGTH(name) BETWEEN 1 AND 200),
    created_at   DATETIME(6)    NOT NULL,
    cancelled_at DATETIME(6)    NULL,
    KEY fenced_workflows_name (name, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per dependency edge: the task job_id runs after the task dep_id.
-- status: 0 waiting, 1 done (the dependency succeeded), 2 failed (it failed
-- or was cancelled). Keyed by (dep_id, job_id), so that a dependency's
-- resolution reads exactly its own edges; indexed by job_id for a task's
-- dependencies. Edges are deleted with their workflow, by the driver (no
-- foreign key: its checks would share-lock the jobs at every insert).
CREATE TABLE IF NOT EXISTS fenced_job_deps (
    job_id BIGINT  NOT NULL,
    dep_id BIGINT  NOT NULL,
    status TINYINT NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    PRIMARY KEY (dep_id, job_id),
    KEY fenced_job_deps_job (job_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
