-- chunklock schema, version 1.
--
-- Every identifier column uses the "C" collation so that ORDER BY is byte
-- order (the order every backend lists in) and equality is a plain memcmp.

CREATE TABLE datasets (
    id          text COLLATE "C" PRIMARY KEY,
    description text        NOT NULL,
    url         text        NOT NULL,
    connection  text        NOT NULL,
    location    text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE jobs (
    id            text COLLATE "C" PRIMARY KEY,
    description   text        NOT NULL,
    inputs        text[]      NOT NULL,
    output        text COLLATE "C" NOT NULL UNIQUE,
    env_names     text[]      NOT NULL,
    env_values    text[]      NOT NULL,
    max_attempts  integer     NOT NULL,
    lease_seconds integer     NOT NULL,
    paused        boolean     NOT NULL,
    key_kind      text        NOT NULL,
    key_public    text        NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE credentials (
    job        text COLLATE "C" NOT NULL,
    dataset    text COLLATE "C" NOT NULL,
    key_kind   text        NOT NULL,
    ciphertext bytea       NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (job, dataset)
);

-- The status table, which is the lock table too. sortkey is
-- backends.SortKey(dataid): its byte order is the shortlex order of dataids.
CREATE TABLE status_rows (
    dataset          text COLLATE "C" NOT NULL,
    dataid           text COLLATE "C" NOT NULL,
    job              text COLLATE "C" NOT NULL,
    role             text COLLATE "C" NOT NULL CHECK (role IN ('INPUT', 'OUTPUT')),
    sortkey          text COLLATE "C" NOT NULL,
    status           text COLLATE "C" NOT NULL,
    attempt          integer     NOT NULL,
    executor         text        NOT NULL,
    token            text        NOT NULL,
    fence            bigint      NOT NULL,
    lease_expires_at timestamptz,
    updated_at       timestamptz NOT NULL,
    reason           text        NOT NULL,
    prev_status      text        NOT NULL,
    PRIMARY KEY (dataset, dataid, job, role)
);

-- Listing order (dataset, shortlex dataid, role, job), with or without a
-- dataset filter.
CREATE INDEX status_rows_list ON status_rows (dataset, sortkey, role, job);
-- Listing one job's rows.
CREATE INDEX status_rows_job ON status_rows (job, dataset, sortkey, role);
-- Live claims: finding expired leases, and listing claims (few rows: the
-- planner sorts them).
CREATE INDEX status_rows_expiry ON status_rows (lease_expires_at)
    WHERE role = 'OUTPUT' AND status = 'RUNNING';

-- Fencing numbers. Taken while the chunk lock is held, so they strictly
-- increase per output chunk.
CREATE SEQUENCE fences;

-- The findNext queue: hints that a job may be able to claim a dataid.
-- Append-only, duplicates allowed; findNext takes the first entry no other
-- transaction holds (FOR UPDATE SKIP LOCKED) and deletes it.
CREATE TABLE candidates (
    id       bigserial PRIMARY KEY,
    job      text COLLATE "C" NOT NULL,
    resubmit boolean NOT NULL,
    sortkey  text COLLATE "C" NOT NULL,
    dataid   text COLLATE "C" NOT NULL
);
CREATE INDEX candidates_next ON candidates (job, resubmit DESC, sortkey, id);
-- A queue churns: vacuum it early so that findNext's index scan does not
-- wade through dead entries.
ALTER TABLE candidates SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);

-- The event log. seq is assigned at commit time under a lock, so it grows
-- with commit order.
CREATE TABLE events (
    seq      bigserial PRIMARY KEY,
    time     timestamptz NOT NULL,
    actor    text        NOT NULL,
    job      text COLLATE "C" NOT NULL,
    dataset  text COLLATE "C" NOT NULL,
    dataid   text COLLATE "C" NOT NULL,
    role     text        NOT NULL,
    from_status text     NOT NULL,
    to_status   text     NOT NULL,
    attempt  integer     NOT NULL,
    executor text        NOT NULL,
    reason   text        NOT NULL
);
CREATE INDEX events_chunk ON events (dataset, dataid, seq);
CREATE INDEX events_dataset ON events (dataset, seq);
CREATE INDEX events_job ON events (job, seq);

CREATE TABLE resource_locks (
    id         bigserial PRIMARY KEY,
    client     text        NOT NULL,
    resource   text        NOT NULL,
    mode       text        NOT NULL CHECK (mode IN ('READ', 'WRITE')),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX resource_locks_resource ON resource_locks (resource, expires_at);
