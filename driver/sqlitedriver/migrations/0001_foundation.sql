-- fenced foundation: the fence floor, leases and the fenced resource store.
-- Times are integer microseconds since the Unix epoch, read from the host
-- clock inside each statement. Fence rows are never deleted.

CREATE TABLE fenced_meta (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    -- every new lease row starts above this; raised by fence advance
    fence_floor INTEGER NOT NULL DEFAULT 0 CHECK (fence_floor >= 0)
) STRICT;
INSERT INTO fenced_meta (id) VALUES (1);

CREATE TABLE fenced_leases (
    name       TEXT    PRIMARY KEY CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 200),
    owner      TEXT    NOT NULL CHECK (length(CAST(owner AS BLOB)) BETWEEN 1 AND 200),
    fence      INTEGER NOT NULL CHECK (fence > 0),
    expires_us INTEGER NOT NULL,
    released   INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1)),
    updated_us INTEGER NOT NULL
) STRICT;

CREATE TABLE fenced_resources (
    key        TEXT    PRIMARY KEY CHECK (length(CAST(key AS BLOB)) BETWEEN 1 AND 200),
    value      BLOB    NOT NULL,
    fence      INTEGER NOT NULL CHECK (fence >= 0),
    version    INTEGER NOT NULL CHECK (version > 0),
    updated_us INTEGER NOT NULL
) STRICT;

-- The first outcome of each (key, operation id), returned again on repeat.
CREATE TABLE fenced_resource_ops (
    key           TEXT    NOT NULL,
    op_id         TEXT    NOT NULL,
    fence         INTEGER NOT NULL,
    accepted      INTEGER NOT NULL DEFAULT 0,
    version       INTEGER NOT NULL DEFAULT 0,
    current_fence INTEGER NOT NULL DEFAULT 0,
    created_us    INTEGER NOT NULL,
    PRIMARY KEY (key, op_id)
) STRICT;
