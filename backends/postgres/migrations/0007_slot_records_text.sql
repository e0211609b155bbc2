-- chunklock schema, version 7.
--
-- Slot records are stored as the JSON text the engine wrote rather than
-- as jsonb: nothing queries inside them, a claim round writes one, and
-- the next round reads back the very bytes written, which the engine then
-- copies from memory instead of parsing (backends/slotcodec.go).
ALTER TABLE slots ALTER COLUMN record TYPE text USING record::text;
