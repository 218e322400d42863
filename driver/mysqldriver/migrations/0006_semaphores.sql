-- Semaphores: N slots under one name, each grant with its own fence.
--
-- fenced_semaphores.fence is the one fence counter of the name: the last
-- fence granted to any of its slots (a new name starts at the fence floor),
-- so a name's fences are strictly increasing across all its grants. Semaphore
-- fences are a namespace of their own, apart from lease fences. Rows are
-- never deleted. Every statement is idempotent.
CREATE TABLE IF NOT EXISTS fenced_semaphores (
    name       VARBINARY(200) NOT NULL PRIMARY KEY CHECK (LENGTH(name) BETWEEN 1 AND 200),
    slots      INT            NOT NULL CHECK (slots BETWEEN 1 AND 1000),
    fence      BIGINT         NOT NULL CHECK (fence >= 0),
    updated_at DATETIME(6)    NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per slot ever granted: its current (or last) grant.
CREATE TABLE IF NOT EXISTS fenced_semaphore_slots (
    name       VARBINARY(200) NOT NULL,
    slot       INT            NOT NULL CHECK (slot >= 0),
    owner      VARBINARY(200) NOT NULL CHECK (LENGTH(owner) BETWEEN 1 AND 200),
    fence      BIGINT         NOT NULL CHECK (fence > 0),
    expires_at DATETIME(6)    NOT NULL,
    released   BOOLEAN        NOT NULL DEFAULT FALSE,
    updated_at DATETIME(6)    NOT NULL,
    PRIMARY KEY (name, slot),
    KEY fenced_semaphore_slots_fence (name, fence)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
