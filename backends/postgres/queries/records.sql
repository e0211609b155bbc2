-- name: GetRecord :one
SELECT key, value, version FROM records WHERE key = @key;

-- name: InsertRecord :one
-- Writes a record never written before; no row when it exists.
INSERT INTO records (key, value, version) VALUES (@key, @value, 1)
ON CONFLICT (key) DO NOTHING
RETURNING version;

-- name: UpdateRecord :one
-- Writes a record still at version; no row when it is at another.
UPDATE records SET value = @value, version = version + 1
WHERE key = @key AND version = @version
RETURNING version;
