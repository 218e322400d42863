-- Semaphores: N slots under one name, each grant with its own fence.
--
-- fenced_semaphores.fence is the one fence counter of the name: the last
-- fence granted to any of its slots (a new name starts at the fence floor),
-- so a name's fences are strictly increasing across all its grants and a
-- resource written under several slots is ordered by them. Semaphore fences
-- are a namespace of their own: they are not compared with lease fences,
-- and a lease and a semaphore may share a name. Rows are never deleted, so
-- a name's fence only grows. Every acquire locks the semaphore row first.
CREATE TABLE fenced_semaphores (
    name       text        PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 200),
    slots      integer     NOT NULL CHECK (slots BETWEEN 1 AND 1000),
    fence      bigint      NOT NULL CHECK (fence >= 0),
    updated_at timestamptz NOT NULL
);

-- One row per slot ever granted: its current (or last) grant, as a lease
-- row is. A grant is found by (name, fence), unique while the slot keeps it.
CREATE TABLE fenced_semaphore_slots (
    name       text        NOT NULL,
    slot       integer     NOT NULL CHECK (slot >= 0),
    owner      text        NOT NULL CHECK (octet_length(owner) BETWEEN 1 AND 200),
    fence      bigint      NOT NULL CHECK (fence > 0),
    expires_at timestamptz NOT NULL,
    released   boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (name, slot)
);
CREATE INDEX fenced_semaphore_slots_fence ON fenced_semaphore_slots (name, fence);
