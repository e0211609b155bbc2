-- chunklock schema, version 12: the catalog lifecycle (SPEC §11).
--
-- A dataset whose producing job was deleted keeps its OUTPUT rows keyed
-- under that job's id, and records the id (backends.Dataset.OutputKey), so
-- that its chunks stay readable and a job declared again under that id
-- takes them over without rewriting a row. '' while the dataset never lost
-- a producer. A column with a constant default: adding it rewrites nothing.
ALTER TABLE datasets ADD COLUMN output_key text COLLATE "C" NOT NULL DEFAULT '';
