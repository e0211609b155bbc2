-- chunklock schema, version 20.
--
-- The count triggers of version 19 ran counted_values() for every row of
-- a statement, one-dimensional ones too: about 17 % more time per
-- statement writing a status row than the totals alone (a claim and a
-- completion write several). Each now adds the totals as version 13 did,
-- and the counts by value only when a row of the statement has a
-- multi-dimensional dataid, in a second INSERT: what one-dimensional
-- datasets pay is what they paid before counts by value.
CREATE OR REPLACE FUNCTION chunk_counts_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, count(*) FROM new_rows WHERE role = 'OUTPUT' GROUP BY 1, 2, 3;
    IF EXISTS (SELECT 1 FROM new_rows WHERE strpos(dataid, '|') > 0) THEN
        INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
        SELECT r.dataset, r.job, p::smallint, split_part(r.dataid, '|', p), r.status, count(*)
        FROM new_rows r, generate_series(2, 4) AS p
        WHERE r.role = 'OUTPUT' AND strpos(r.dataid, '|') > 0 AND split_part(r.dataid, '|', p) <> ''
        GROUP BY 1, 2, 3, 4, 5;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION chunk_counts_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, sum(d) FROM (
        SELECT dataset, job, status, 1 AS d FROM new_rows WHERE role = 'OUTPUT'
        UNION ALL
        SELECT dataset, job, status, -1 AS d FROM old_rows WHERE role = 'OUTPUT') AS x
    GROUP BY 1, 2, 3 HAVING sum(d) <> 0;
    IF EXISTS (SELECT 1 FROM new_rows WHERE strpos(dataid, '|') > 0) OR EXISTS (SELECT 1 FROM old_rows WHERE strpos(dataid, '|') > 0) THEN
        INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
        SELECT dataset, job, pos, value, status, sum(d) FROM (
            SELECT r.dataset, r.job, p::smallint AS pos, split_part(r.dataid, '|', p) AS value, r.status, 1 AS d
            FROM new_rows r, generate_series(2, 4) AS p
            WHERE r.role = 'OUTPUT' AND strpos(r.dataid, '|') > 0 AND split_part(r.dataid, '|', p) <> ''
            UNION ALL
            SELECT r.dataset, r.job, p::smallint, split_part(r.dataid, '|', p), r.status, -1
            FROM old_rows r, generate_series(2, 4) AS p
            WHERE r.role = 'OUTPUT' AND strpos(r.dataid, '|') > 0 AND split_part(r.dataid, '|', p) <> '') AS x
        GROUP BY 1, 2, 3, 4, 5 HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION chunk_counts_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, -count(*) FROM old_rows WHERE role = 'OUTPUT' GROUP BY 1, 2, 3;
    IF EXISTS (SELECT 1 FROM old_rows WHERE strpos(dataid, '|') > 0) THEN
        INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
        SELECT r.dataset, r.job, p::smallint, split_part(r.dataid, '|', p), r.status, -count(*)
        FROM old_rows r, generate_series(2, 4) AS p
        WHERE r.role = 'OUTPUT' AND strpos(r.dataid, '|') > 0 AND split_part(r.dataid, '|', p) <> ''
        GROUP BY 1, 2, 3, 4, 5;
    END IF;
    RETURN NULL;
END $$;

DROP FUNCTION counted_values(text);
