-- chunklock schema, version 19.
--
-- Chunk counts by value of a dimension (SPEC §10: missing and late per
-- value of a STATIC or DYNAMIC dimension): beside each (dataset, job,
-- status) total (pos 0, value ''), the OUTPUT rows of a multi-dimensional
-- dataid (values joined by '|') are counted by the value at each position
-- after the first (pos 2 to 4, the 1-based place of the value in the
-- dataid), by the same statement triggers, in the same INSERT: rows
-- without '|' add nothing but the total, so one-dimensional datasets pay
-- no more than before. A count of the first dimension's values is a count
-- of a run of sort keys (status_rows_list), and needs none.
ALTER TABLE chunk_counts ADD COLUMN pos smallint NOT NULL DEFAULT 0;
ALTER TABLE chunk_counts ADD COLUMN value text NOT NULL DEFAULT '';
ALTER TABLE chunk_counts DROP CONSTRAINT chunk_counts_pkey;
ALTER TABLE chunk_counts ADD PRIMARY KEY (dataset, job, pos, value, status);
ALTER TABLE chunk_count_deltas ADD COLUMN pos smallint NOT NULL DEFAULT 0;
ALTER TABLE chunk_count_deltas ADD COLUMN value text NOT NULL DEFAULT '';
DROP INDEX chunk_count_deltas_chunk;
CREATE INDEX chunk_count_deltas_chunk ON chunk_count_deltas (dataset, job, pos);

-- counted_values is a transition table's OUTPUT rows as the deltas count
-- them: one row per row for the total, and one per value after the first
-- of a multi-dimensional dataid.
CREATE FUNCTION counted_values(dataid text) RETURNS TABLE (pos smallint, value text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 0::smallint, ''::text
    UNION ALL
    SELECT p::smallint, split_part(dataid, '|', p)
    FROM generate_series(2, 4) AS p
    WHERE strpos(dataid, '|') > 0 AND split_part(dataid, '|', p) <> ''
$$;

CREATE OR REPLACE FUNCTION chunk_counts_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
    SELECT r.dataset, r.job, v.pos, v.value, r.status, count(*)
    FROM new_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT' GROUP BY 1, 2, 3, 4, 5;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION chunk_counts_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
    SELECT dataset, job, pos, value, status, sum(d) FROM (
        SELECT r.dataset, r.job, v.pos, v.value, r.status, 1 AS d FROM new_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT'
        UNION ALL
        SELECT r.dataset, r.job, v.pos, v.value, r.status, -1 AS d FROM old_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT') AS x
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(d) <> 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION chunk_counts_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
    SELECT r.dataset, r.job, v.pos, v.value, r.status, -count(*)
    FROM old_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT' GROUP BY 1, 2, 3, 4, 5;
    RETURN NULL;
END $$;

-- The values of the rows already there, counted once under the
-- migration's lock.
INSERT INTO chunk_counts (dataset, job, pos, value, status, n)
SELECT dataset, job, p::smallint, split_part(dataid, '|', p), status, count(*)
FROM status_rows, generate_series(2, 4) AS p
WHERE role = 'OUTPUT' AND strpos(dataid, '|') > 0 AND split_part(dataid, '|', p) <> ''
GROUP BY 1, 2, 3, 4, 5;
