-- chunklock schema, version 4: partition definitions on datasets (SPEC §8)
-- and a job's backoff and concurrency settings (SPEC §1 Job).

-- The partition definition as JSON (backends/partition.Def); NULL: none.
ALTER TABLE datasets ADD COLUMN partitions jsonb;

ALTER TABLE jobs
    ADD COLUMN retry_delay_seconds     integer NOT NULL DEFAULT 0,
    ADD COLUMN retry_max_delay_seconds integer NOT NULL DEFAULT 3600,
    ADD COLUMN max_concurrent          integer NOT NULL DEFAULT 0,
    ADD COLUMN pool                    text COLLATE "C" NOT NULL DEFAULT '';
