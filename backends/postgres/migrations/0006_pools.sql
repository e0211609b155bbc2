-- chunklock schema, version 6.
--
-- Slot records (backends/slots.go): per job with a maxConcurrent and per
-- pool, the live claims holding one of its slots; a pool's record also
-- carries its definition. One JSON document per record, read with FOR
-- UPDATE by the claim that takes a slot and written in the same
-- transaction.
CREATE TABLE slots (
    key    text  PRIMARY KEY,
    record jsonb NOT NULL
);
