-- chunklock schema, version 15: which pipeline created each dataset and
-- job (SPEC §11, backends.Dataset.Pipeline): `chunklock apply --prune`
-- deletes only objects an earlier apply of the same pipeline created. ''
-- for an object created otherwise, and for every object stored before
-- this version (so none of them is ever pruned). Pools keep theirs in
-- their slot record. Columns with a constant default: adding them
-- rewrites nothing.
ALTER TABLE datasets ADD COLUMN pipeline text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN pipeline text COLLATE "C" NOT NULL DEFAULT '';
