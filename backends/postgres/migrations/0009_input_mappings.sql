-- chunklock schema, version 9: partition mappings (SPEC §9).

-- A job's input mappings as JSON (a list of backends.InputMapping, in
-- input order); an empty list: every input is IDENTITY.
ALTER TABLE jobs ADD COLUMN input_mappings jsonb NOT NULL DEFAULT '[]';

-- The INPUT row of a mapped read is keyed by the output dataid it is read
-- for too, when that differs from the row's own dataid (backends.RowKey):
-- a lookback reads one input chunk for several output chunks. '' on every
-- other row, so existing rows keep their key.
ALTER TABLE status_rows ADD COLUMN read_for text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE status_rows DROP CONSTRAINT status_rows_pkey;
ALTER TABLE status_rows ADD PRIMARY KEY (dataset, dataid, job, role, read_for);

-- On the RUNNING OUTPUT row of a claim of a job with mappings, the input
-- chunks the claim reads, each 'dataset/dataid' (neither contains a '/');
-- NULL on every other row.
ALTER TABLE status_rows ADD COLUMN reads text[];
