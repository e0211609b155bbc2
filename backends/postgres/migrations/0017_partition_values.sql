-- chunklock schema, version 17: the values of DYNAMIC partition
-- definitions (SPEC §10).
--
-- One row per value of a dynamic set, keyed by dataset, dimension ('' for
-- a one-dimensional dataset; the name of a DYNAMIC dimension of a
-- multi-dimensional one) and the value's sort key (backends.SortKey: byte
-- order is shortlex order), so that the primary key is the ordered index a
-- page of values, the next value after one, and one value's lookup each
-- read, however many values the set holds. added_at is when the value was
-- added: it is due from added_at + lag, late from added_at + deadline.
CREATE TABLE partition_values (
    dataset   text COLLATE "C" NOT NULL,
    dimension text COLLATE "C" NOT NULL DEFAULT '',
    sortkey   text COLLATE "C" NOT NULL,
    value     text COLLATE "C" NOT NULL,
    added_at  timestamptz      NOT NULL,
    PRIMARY KEY (dataset, dimension, sortkey)
);
