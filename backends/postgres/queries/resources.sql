-- name: LockResourceKey :exec
-- Serialises TakeResourceLock per resource until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('resource:' || @resource::text, @salt::bigint));

-- name: DeleteExpiredResourceLocks :exec
DELETE FROM resource_locks WHERE resource = @resource AND expires_at <= @now;

-- name: ResourceLocksOn :many
-- The unexpired locks on resource (backends.ResourceLockRefusers decides
-- which of them refuse a new lock).
SELECT *
FROM resource_locks
WHERE resource = @resource AND expires_at > @now
ORDER BY id;

-- name: InsertResourceLock :one
INSERT INTO resource_locks (client, resource, mode, created_at, expires_at)
VALUES (@client, @resource, @mode, @created_at, @expires_at)
RETURNING id;

-- name: DeleteResourceLock :execrows
DELETE FROM resource_locks WHERE id = @id AND client = @client AND expires_at > @now;

-- name: RenewResourceLock :one
UPDATE resource_locks SET expires_at = @expires_at
WHERE id = @id AND client = @client AND expires_at > @now
RETURNING *;

-- name: ResourceLockClient :one
SELECT client FROM resource_locks WHERE id = @id AND expires_at > @now;

-- name: ListResourceLocks :many
SELECT *
FROM resource_locks
WHERE expires_at > @now
  AND (sqlc.narg('resource')::text IS NULL OR resource = sqlc.narg('resource'))
  AND (sqlc.narg('client')::text IS NULL OR client = sqlc.narg('client'))
  AND (sqlc.narg('mode')::text IS NULL OR mode = sqlc.narg('mode'))
ORDER BY id;

-- name: DatabaseNow :one
SELECT clock_timestamp()::timestamptz AS now;
