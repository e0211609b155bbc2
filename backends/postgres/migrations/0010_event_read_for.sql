-- chunklock schema, version 10.
--
-- An event of a mapped read's INPUT row names the output dataid it was read
-- for (backends.Event.ReadFor, SPEC §9); '' on every other event. A
-- column with a constant default: adding it rewrites nothing.
ALTER TABLE events ADD COLUMN read_for text NOT NULL DEFAULT '';
