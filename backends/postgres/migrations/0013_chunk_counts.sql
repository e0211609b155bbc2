-- chunklock schema, version 13 (11 and 12 are left to changes made beside
-- this one; the migrations apply in order whatever numbers are missing).
--
-- Exact chunk counts kept with the rows (Store.ChunkCounts): how many
-- OUTPUT rows each (dataset, job) has in each status. Every statement that
-- writes status_rows adds its net change per (dataset, job, status) to
-- chunk_count_deltas in its own transaction, through the statement
-- triggers below: inserts only, so that concurrent transactions never wait
-- on a counter. The backend folds the deltas into chunk_counts in the
-- background (compactCounts); a count is chunk_counts plus the deltas not
-- yet folded, read in one statement. The functions keep the schema they
-- were made in (SET search_path FROM CURRENT), so that a statement of a
-- session on another search_path (a bulk load naming the schema) counts
-- into this schema's tables.
CREATE TABLE chunk_counts (
    dataset text   NOT NULL,
    job     text   NOT NULL,
    status  text   NOT NULL,
    n       bigint NOT NULL,
    PRIMARY KEY (dataset, job, status)
);

CREATE TABLE chunk_count_deltas (
    id      bigserial PRIMARY KEY,
    dataset text   NOT NULL,
    job     text   NOT NULL,
    status  text   NOT NULL,
    n       bigint NOT NULL
);
CREATE INDEX chunk_count_deltas_chunk ON chunk_count_deltas (dataset, job);

CREATE FUNCTION chunk_counts_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, count(*) FROM new_rows WHERE role = 'OUTPUT' GROUP BY 1, 2, 3;
    RETURN NULL;
END $$;

CREATE FUNCTION chunk_counts_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, sum(d) FROM (
        SELECT dataset, job, status, 1 AS d FROM new_rows WHERE role = 'OUTPUT'
        UNION ALL
        SELECT dataset, job, status, -1 AS d FROM old_rows WHERE role = 'OUTPUT') AS x
    GROUP BY 1, 2, 3 HAVING sum(d) <> 0;
    RETURN NULL;
END $$;

CREATE FUNCTION chunk_counts_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, -count(*) FROM old_rows WHERE role = 'OUTPUT' GROUP BY 1, 2, 3;
    RETURN NULL;
END $$;

CREATE TRIGGER status_rows_count_insert AFTER INSERT ON status_rows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_counts_inserted();
CREATE TRIGGER status_rows_count_update AFTER UPDATE ON status_rows
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_counts_updated();
CREATE TRIGGER status_rows_count_delete AFTER DELETE ON status_rows
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_counts_deleted();

-- A store made before counts: count its rows once, here, under the
-- migration's lock (the triggers count every write from now on).
INSERT INTO chunk_counts (dataset, job, status, n)
SELECT dataset, job, status, count(*) FROM status_rows WHERE role = 'OUTPUT' GROUP BY 1, 2, 3;
