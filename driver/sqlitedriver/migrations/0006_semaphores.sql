-- Semaphores: N slots under one name, each grant with its own fence.
--
-- fenced_semaphores.fence is the one fence counter of the name: the last
-- fence granted to any of its slots (a new name starts at the fence floor),
-- so a name's fences are strictly increasing across all its grants. Semaphore
-- fences are a namespace of their own, apart from lease fences. Rows are
-- never deleted. Times are integer microseconds since the Unix epoch.
CREATE TABLE fenced_semaphores (
    name       TEXT    PRIMARY KEY CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 200),
    slots      INTEGER NOT NULL CHECK (slots BETWEEN 1 AND 1000),
    fence      INTEGER NOT NULL CHECK (fence >= 0),
    updated_us INTEGER NOT NULL
) STRICT;

-- One row per slot ever granted: its current (or last) grant.
CREATE TABLE fenced_semaphore_slots (
    name       TEXT    NOT NULL,
    slot       INTEGER NOT NULL CHECK (slot >= 0),
    owner      TEXT    NOT NULL CHECK (length(CAST(owner AS BLOB)) BETWEEN 1 AND 200),
    fence      INTEGER NOT NULL CHECK (fence > 0),
    expires_us INTEGER NOT NULL,
    released   INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1)),
    updated_us INTEGER NOT NULL,
    PRIMARY KEY (name, slot)
) STRICT;
CREATE INDEX fenced_semaphore_slots_fence ON fenced_semaphore_slots (name, fence);
