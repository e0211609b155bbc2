-- chunklock schema, version 8.
--
-- Records (backends/records.go): small named documents the server keeps
-- for its own bookkeeping (a webhook's delivery cursor and lease), each
-- written whole with a compare-and-swap on its version.
CREATE TABLE records (
    key     text   PRIMARY KEY,
    value   bytea  NOT NULL,
    version bigint NOT NULL
);
