-- name: LockEventLog :exec
-- Serialises the end of every transaction that records events, so that seq
-- grows with commit order: taken just before the events are inserted and
-- held until commit.
SELECT pg_advisory_xact_lock(@key::bigint);

-- name: InsertEvents :exec
-- Records a transaction's events in order and notifies listeners (delivered
-- at commit) with the last seq.
WITH inserted AS (
    INSERT INTO events (time, actor, job, dataset, dataid, role, from_status, to_status, attempt, executor, reason)
    SELECT (@times::timestamptz[])[i], (@actors::text[])[i], (@jobs::text[])[i], (@datasets::text[])[i],
           (@dataids::text[])[i], (@roles::text[])[i], (@from_statuses::text[])[i], (@to_statuses::text[])[i],
           (@attempts::integer[])[i], (@executors::text[])[i], (@reasons::text[])[i]
    FROM generate_subscripts(@times::timestamptz[], 1) AS i
    ORDER BY i
    RETURNING seq
)
SELECT pg_notify(@channel::text, max(seq)::text) FROM inserted;

-- name: ListEvents :many
-- Events after a seq in seq order; null filters do not filter.
SELECT *
FROM events
WHERE seq > @after
  AND (sqlc.narg('dataset')::text IS NULL OR dataset = sqlc.narg('dataset'))
  AND (sqlc.narg('job')::text IS NULL OR job = sqlc.narg('job'))
  AND (sqlc.narg('dataid')::text IS NULL OR dataid = sqlc.narg('dataid'))
ORDER BY seq
LIMIT @max_rows;
