-- chunklock schema, version 21.
--
-- Status row updates that leave the row on its page (HOT updates) write no
-- index entry. PostgreSQL makes one only when no indexed column changes,
-- the columns of an index's predicate included: status_rows_expiry's
-- predicate named role and status, so every update of a status row, an
-- INPUT row's RUNNING -> DONE at a completion included, wrote an entry in
-- each of the table's four indexes. A lease is set on RUNNING OUTPUT rows
-- only (backends.StatusRow: zero unless RUNNING), so the index keeps the
-- same rows with a predicate on the lease alone, and the queries that name
-- a lease bound (ExpiredClaims, the live-claim count) still use it. An
-- INPUT row's update then changes no indexed column. (An OUTPUT row's
-- still does: its lease comes and goes.)
--
-- A HOT update also needs room on the row's page. Traffic inserts a claim's
-- rows and updates them at its ending: with half of each page left free,
-- every INPUT row's update was HOT in the pool benchmark, against none
-- before, for 9 % less WAL a chunk, and the table with its indexes no
-- larger (BENCHMARKS.md, "HOT updates of INPUT rows"). The fill factor
-- applies to pages written from now on; rows a store copy loads fill their
-- pages (load.go).
--
-- The index is built again under this migration's lock: on a large store
-- that takes a scan of the table (0.8-0.9 s for 5 million rows here), during
-- which writes wait.
DROP INDEX status_rows_expiry;
CREATE INDEX status_rows_expiry ON status_rows (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
ALTER TABLE status_rows SET (fillfactor = 50);
