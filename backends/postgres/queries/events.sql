-- name: EventsHorizon :one
-- The event log as this statement's snapshot sees it: every event with a
-- seq below horizon is final (recorded by a transaction that has ended, so
-- no event can ever appear below it again); last_seq is the highest seq
-- committed so far (possibly above the horizon).
SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20)::bigint AS horizon,
       coalesce((SELECT max(seq) FROM events), 0)::bigint AS last_seq;

-- name: ListEvents :many
-- Events after a seq and below a horizon (see EventsHorizon) in seq order;
-- null filters do not filter.
SELECT *
FROM events
WHERE seq > @after
  AND seq < @before
  AND (sqlc.narg('dataset')::text IS NULL OR dataset = sqlc.narg('dataset'))
  AND (sqlc.narg('job')::text IS NULL OR job = sqlc.narg('job'))
  AND (sqlc.narg('dataid')::text IS NULL OR dataid = sqlc.narg('dataid'))
ORDER BY seq
LIMIT @max_rows;

-- name: NotifyEvents :exec
-- Wakes the watchers of every server sharing the store.
SELECT pg_notify(@channel::text, '');

-- name: FirstEnded :one
-- The smallest of the given transaction ids that is no longer running
-- (0 when all are).
SELECT coalesce(min(x), 0)::bigint AS first
FROM unnest(@xids::bigint[]) AS x
WHERE pg_xact_status(x::text::xid8) IS DISTINCT FROM 'in progress';

-- name: DeleteEvents :execrows
-- Removes the events of the given seqs that are still stored (pruning,
-- backends.Backend.DeleteEvents): one statement on the primary key, apart
-- from every status row.
DELETE FROM events
WHERE seq = ANY(@seqs::bigint[]);
