-- chunklock schema, version 7: partition mappings (SPEC §9).

-- A job's input mappings as JSON (a list of backends.InputMapping, in
-- input order); an empty list: every input is IDENTITY.
ALTER TABLE jobs ADD COLUMN input_mappings jsonb NOT NULL DEFAULT '[]';
