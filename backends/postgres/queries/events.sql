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
