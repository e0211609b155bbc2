-- chunklock schema, version 2.
--
-- Event seqs without a global lock. An event's seq is now
--     (id of the transaction that recorded it) << 20 | (its position in that transaction)
-- assigned at insert time. Readers return only events below the horizon
--     pg_snapshot_xmin(pg_current_snapshot()) << 20
-- of their own snapshot: every transaction with a smaller id has ended, so
-- nothing can ever appear below the horizon again, and a reader that walks
-- the log by seq never steps over an event that commits later. Transactions
-- that record events no longer serialise on an advisory lock and a
-- pg_notify at commit.
ALTER TABLE events ALTER COLUMN seq DROP DEFAULT;
DROP SEQUENCE events_seq_seq;

-- Seqs recorded before this migration stay as they are; they must all sit
-- below the seqs recorded from now on.
DO $$
BEGIN
    IF (SELECT coalesce(max(seq), 0) FROM events) >= (pg_current_xact_id()::text::bigint << 20) THEN
        RAISE EXCEPTION 'chunklock migration 2: the event log holds seqs beyond the new numbering; contact the maintainers';
    END IF;
END
$$;

-- The catalog version: bumped in the same transaction as every change to
-- datasets or jobs, so that a server may keep the catalog in memory and
-- check, inside each operation's transaction, that it is still current.
CREATE TABLE catalog_version (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    version bigint  NOT NULL
);
INSERT INTO catalog_version (id, version) VALUES (true, 1);
