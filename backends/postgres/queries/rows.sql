-- name: LockChunks :exec
-- Takes the transaction-scoped advisory lock of every chunk (dataset,
-- dataid) in the order given (the caller sorts by dataset): exclusive or
-- shared per entry. One round trip for the whole set.
SELECT CASE WHEN l.exclusive THEN pg_advisory_xact_lock(l.key)
            ELSE pg_advisory_xact_lock_shared(l.key) END
FROM (
    SELECT hashtextextended((@datasets::text[])[i] || '/' || @dataid::text, @salt::bigint) AS key,
           (@exclusive::boolean[])[i] AS exclusive
    FROM generate_subscripts(@datasets::text[], 1) AS i
    ORDER BY i
    OFFSET 0
) AS l;

-- name: GetRows :many
-- The rows with the given keys, each looked up on its own: the LIMIT keeps
-- the planner from turning the lookups into a join that scans the table,
-- and the sort key (SortKey of the dataid) makes every index on the table
-- a point lookup, whichever the planner picks without statistics.
SELECT s.*
FROM (SELECT unnest(@datasets::text[]) AS dataset, unnest(@dataids::text[]) AS dataid,
             unnest(@sortkeys::text[]) AS sortkey, unnest(@jobs::text[]) AS job,
             unnest(@roles::text[]) AS role, unnest(@read_fors::text[]) AS read_for) AS k
CROSS JOIN LATERAL (
    SELECT *
    FROM status_rows r
    WHERE r.dataset = k.dataset AND r.dataid = k.dataid AND r.sortkey = k.sortkey
      AND r.job = k.job AND r.role = k.role AND r.read_for = k.read_for
    LIMIT 1
) AS s;

-- name: NextFence :one
SELECT nextval('fences')::bigint;

-- name: NextCandidates :many
-- Up to max_rows of the job's first candidates due at now that no other
-- transaction holds, locked until this transaction ends. Never waits,
-- never scans consumed history; passes over the few candidates not due
-- yet.
SELECT id, dataid, resubmit, not_before, frontier
FROM candidates
WHERE job = @job AND (not_before IS NULL OR not_before <= @now::timestamptz)
ORDER BY resubmit DESC, sortkey, id
LIMIT @max_rows
FOR UPDATE SKIP LOCKED;

-- name: ListRows :many
-- A page of status rows in (dataset, shortlex dataid, role, job, shortlex
-- read_for) order. Null filters do not filter; the after_* values are the
-- last row seen. leased keeps the rows with a lease only (the RUNNING
-- OUTPUT rows, listed through status_rows_expiry: a listing of live claims
-- asks for it, and its plan, made for the values, reads that index).
SELECT *
FROM status_rows
WHERE (sqlc.narg('dataset')::text IS NULL OR dataset = sqlc.narg('dataset'))
  AND (sqlc.narg('job')::text IS NULL OR job = sqlc.narg('job'))
  AND (sqlc.narg('role')::text IS NULL OR role = sqlc.narg('role'))
  AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status'))
  AND (sqlc.narg('from_key')::text IS NULL OR sortkey >= sqlc.narg('from_key'))
  AND (sqlc.narg('to_key')::text IS NULL OR sortkey <= sqlc.narg('to_key'))
  AND (NOT @has_after::boolean
       OR (dataset, sortkey, role, job, length(read_for), read_for)
          > (@after_dataset::text, @after_sortkey::text, @after_role::text, @after_job::text,
             length(@after_read_for::text), @after_read_for::text))
  AND (NOT @leased::boolean OR lease_expires_at IS NOT NULL)
ORDER BY dataset, sortkey, role, job, length(read_for), read_for
LIMIT @max_rows;

-- name: ExpiredClaims :many
-- OUTPUT rows in RUNNING whose lease ended at or before now, oldest first.
SELECT dataset, dataid, job, role
FROM status_rows
WHERE role = 'OUTPUT' AND status = 'RUNNING' AND lease_expires_at <= @now
ORDER BY lease_expires_at
LIMIT @max_rows;

-- name: CountCandidates :one
-- How many candidates job has, hidden ones included.
SELECT count(*)::bigint FROM candidates WHERE job = @job;

-- name: ListReads :many
-- A job's INPUT rows on one chunk read for other output dataids (mapped
-- reads), in shortlex read_for order: a prefix of the primary key.
SELECT *
FROM status_rows
WHERE dataset = @dataset AND dataid = @dataid AND job = @job AND role = 'INPUT' AND read_for <> ''
ORDER BY length(read_for), read_for;

-- name: LatestReady :many
-- The newest READY OUTPUT row of job on a dataset with a sort key between
-- @bottom and @top, walking status_rows_list backwards from @top (at each
-- sort key the OUTPUT rows come before the INPUT rows).
SELECT dataid
FROM status_rows
WHERE dataset = @dataset AND sortkey <= @top AND sortkey >= @bottom
  AND role = 'OUTPUT' AND job = @job AND status = 'READY'
ORDER BY sortkey DESC, role DESC
LIMIT 1;

-- name: ReadyBetween :many
-- The dataids of the READY OUTPUT rows of job on a dataset with a sort key
-- between @bottom and @top, in sort key order: a walk of status_rows_job
-- (one job's rows of one dataset, by sort key), which reads no other job's
-- INPUT rows at those dataids.
SELECT dataid
FROM status_rows
WHERE job = @job AND dataset = @dataset AND sortkey >= @bottom AND sortkey <= @top
  AND role = 'OUTPUT' AND status = 'READY'
ORDER BY sortkey;

-- name: LockWide :exec
-- Taken first by a transaction about to lock many chunks: one such
-- transaction at a time holds its locks in the server's lock table.
SELECT pg_advisory_xact_lock(@key::bigint);
