-- fenced foundation: the fence floor, leases and the fenced resource store.
-- Fence rows are never deleted: a released or expired lease keeps its fence so
-- the next grant continues the sequence.

CREATE TABLE fenced_meta (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    -- every new lease row starts above this; raised by fence advance
    fence_floor bigint  NOT NULL DEFAULT 0 CHECK (fence_floor >= 0)
);
INSERT INTO fenced_meta (id) VALUES (true);

CREATE TABLE fenced_leases (
    name       text        PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 200),
    owner      text        NOT NULL CHECK (octet_length(owner) BETWEEN 1 AND 200),
    fence      bigint      NOT NULL CHECK (fence > 0),
    expires_at timestamptz NOT NULL,
    released   boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL
);

CREATE TABLE fenced_resources (
    key        text        PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 200),
    value      bytea       NOT NULL,
    fence      bigint      NOT NULL CHECK (fence >= 0),
    version    bigint      NOT NULL CHECK (version > 0),
    updated_at timestamptz NOT NULL
);

-- The first outcome of each (key, operation id), returned again on repeat.
CREATE TABLE fenced_resource_ops (
    key           text        NOT NULL,
    op_id         text        NOT NULL,
    fence         bigint      NOT NULL,
    accepted      boolean     NOT NULL DEFAULT false,
    version       bigint      NOT NULL DEFAULT 0,
    current_fence bigint      NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (key, op_id)
);
