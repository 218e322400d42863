-- fenced foundation: the fence floor, leases and the fenced resource store.
-- Fence rows are never deleted: a released or expired lease keeps its fence so
-- the next grant continues the sequence.
--
-- Times are DATETIME(6) in UTC, written from UTC_TIMESTAMP(6). Names, owners,
-- keys and operation ids are VARBINARY, compared byte for byte (no case
-- folding, no PAD SPACE). Every statement is idempotent (DDL commits
-- implicitly, so a migration cut short is simply run again).

CREATE TABLE IF NOT EXISTS fenced_meta (
    id          TINYINT NOT NULL PRIMARY KEY CHECK (id = 1),
    -- every new lease row starts above this; raised by fence advance
    fence_floor BIGINT  NOT NULL DEFAULT 0 CHECK (fence_floor >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
-- IGNORE: the row exists when a migration cut short is run again.
INSERT IGNORE INTO fenced_meta (id) VALUES (1);

CREATE TABLE IF NOT EXISTS fenced_leases (
    name       VARBINARY(200) NOT NULL PRIMARY KEY CHECK (LENGTH(name) BETWEEN 1 AND 200),
    owner      VARBINARY(200) NOT NULL CHECK (LENGTH(owner) BETWEEN 1 AND 200),
    fence      BIGINT         NOT NULL CHECK (fence > 0),
    expires_at DATETIME(6)    NOT NULL,
    released   BOOLEAN        NOT NULL DEFAULT FALSE,
    updated_at DATETIME(6)    NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS fenced_resources (
    `key`      VARBINARY(200) NOT NULL PRIMARY KEY CHECK (LENGTH(`key`) BETWEEN 1 AND 200),
    value      LONGBLOB       NOT NULL,
    fence      BIGINT         NOT NULL CHECK (fence >= 0),
    version    BIGINT         NOT NULL CHECK (version > 0),
    updated_at DATETIME(6)    NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The first outcome of each (key, operation id), returned again on repeat.
CREATE TABLE IF NOT EXISTS fenced_resource_ops (
    `key`         VARBINARY(200) NOT NULL,
    op_id         VARBINARY(200) NOT NULL,
    fence         BIGINT         NOT NULL,
    accepted      BOOLEAN        NOT NULL DEFAULT FALSE,
    version       BIGINT         NOT NULL DEFAULT 0,
    current_fence BIGINT         NOT NULL DEFAULT 0,
    created_at    DATETIME(6)    NOT NULL,
    PRIMARY KEY (`key`, op_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
