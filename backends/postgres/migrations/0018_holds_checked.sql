-- Since when holds are refused at dataids a dataset's definition does not
-- expect (every server from this version on). The missing and late counts
-- of a dataset made before, with HOLD or RESUBMIT chunks, are counted by
-- reading its rows (engine/partitionkept.go): an earlier hold could have
-- made a row anywhere.
CREATE TABLE store_marks (
    name text COLLATE "C" PRIMARY KEY,
    at   timestamptz NOT NULL
);
INSERT INTO store_marks (name, at) VALUES ('holds_checked', now());
