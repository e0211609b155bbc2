-- name: BumpCatalogVersion :one
-- Makes a new catalog version if the version is still @version (no row
-- otherwise): the first statement of every catalog change, which the
-- engine validated against catalog version @version.
UPDATE catalog_version SET version = version + 1
WHERE version = @version
RETURNING version;

-- name: PutDataset :one
-- Creates or updates a dataset, keeping created_at of an existing one.
INSERT INTO datasets (id, description, url, connection, location, partitions, output_key, pipeline,
                      retention_events_seconds, created_at, updated_at)
VALUES (@id, @description, @url, @connection, @location, @partitions, @output_key, @pipeline,
        sqlc.narg('retention_events_seconds')::integer, @created_at, @updated_at)
ON CONFLICT (id) DO UPDATE SET
    description = excluded.description,
    url         = excluded.url,
    connection  = excluded.connection,
    location    = excluded.location,
    partitions  = excluded.partitions,
    output_key  = excluded.output_key,
    pipeline    = excluded.pipeline,
    retention_events_seconds = excluded.retention_events_seconds,
    updated_at  = excluded.updated_at
RETURNING *;

-- name: ListDatasets :many
SELECT * FROM datasets ORDER BY id;

-- name: PutJob :one
-- Creates or updates a job, keeping created_at of an existing one. The
-- unique constraint on output refuses a second producer of a dataset.
INSERT INTO jobs (id, description, inputs, output, env_names, env_values, max_attempts,
                  lease_seconds, paused, key_kind, key_public, retry_delay_seconds,
                  retry_max_delay_seconds, max_concurrent, pool, input_mappings, pipeline, created_at, updated_at)
VALUES (@id, @description, @inputs, @output, @env_names, @env_values, @max_attempts,
        @lease_seconds, @paused, @key_kind, @key_public, @retry_delay_seconds,
        @retry_max_delay_seconds, @max_concurrent, @pool, @input_mappings, @pipeline, @created_at, @updated_at)
ON CONFLICT (id) DO UPDATE SET
    description   = excluded.description,
    inputs        = excluded.inputs,
    output        = excluded.output,
    env_names     = excluded.env_names,
    env_values    = excluded.env_values,
    max_attempts  = excluded.max_attempts,
    lease_seconds = excluded.lease_seconds,
    paused        = excluded.paused,
    key_kind      = excluded.key_kind,
    key_public    = excluded.key_public,
    retry_delay_seconds     = excluded.retry_delay_seconds,
    retry_max_delay_seconds = excluded.retry_max_delay_seconds,
    max_concurrent          = excluded.max_concurrent,
    pool                    = excluded.pool,
    input_mappings          = excluded.input_mappings,
    pipeline                = excluded.pipeline,
    updated_at    = excluded.updated_at
RETURNING *;

-- name: BackfillCandidates :execrows
-- Adds a candidate for job at every dataid at which dataset (the job's first
-- input) has a READY OUTPUT row, keyed under the deleted job that first
-- wrote the dataset's chunks (datasets.output_key) when it records one,
-- else under its producer; '' for a source.
INSERT INTO candidates (job, resubmit, sortkey, dataid)
SELECT @job::text, false, s.sortkey, s.dataid
FROM status_rows s
WHERE s.dataset = @dataset::text
  AND s.role = 'OUTPUT'
  AND s.status = 'READY'
  AND s.job = coalesce(nullif((SELECT d.output_key FROM datasets d WHERE d.id = @dataset::text), ''),
                       (SELECT j.id FROM jobs j WHERE j.output = @dataset::text), '')
ORDER BY s.sortkey;

-- name: ListJobs :many
SELECT * FROM jobs ORDER BY id;

-- name: PutCredential :exec
INSERT INTO credentials (job, dataset, key_kind, ciphertext, updated_at)
VALUES (@job, @dataset, @key_kind, @ciphertext, @updated_at)
ON CONFLICT (job, dataset) DO UPDATE SET
    key_kind   = excluded.key_kind,
    ciphertext = excluded.ciphertext,
    updated_at = excluded.updated_at;

-- name: SwapCredential :execrows
-- Replaces a credential only while its ciphertext is still @old.
UPDATE credentials SET key_kind = @key_kind, ciphertext = @ciphertext, updated_at = @updated_at
WHERE job = @job AND dataset = @dataset AND ciphertext = @old::bytea;

-- name: ListCredentials :many
SELECT * FROM credentials WHERE job = @job ORDER BY dataset;

-- name: StartUpdate :one
-- The first statement of every Update transaction, before it has an id:
--   - takes the shared event-writer lock (key @writers) until the
--     transaction ends, which marks it as one that may record events
--     (events.go: readers do not wait for running transactions without it);
--   - plans the transaction's statements once per connection
--     (force_generic_plan: their plans do not depend on the parameters, and
--     a custom plan at every execution costs more than the statement);
--   - reads the catalog version the engine checks its cached catalog against.
SELECT pg_advisory_xact_lock_shared(@writers::bigint)::text AS locked,
       set_config('plan_cache_mode', 'force_generic_plan', true) AS plan_cache_mode,
       version
FROM catalog_version;

-- name: ReadCatalogVersion :one
-- The number of the current catalog: it changes with every change to
-- datasets or jobs.
SELECT version FROM catalog_version;

-- name: AddFrontier :exec
-- Places a scheduled job's frontier candidate, in the transaction that
-- stores the catalog change making the job scheduled (backends/schedule.go),
-- or another candidate such a change queues (frontier false: the first of
-- a chain, engine/schedule.go chainMaybeEmpty).
INSERT INTO candidates (job, resubmit, sortkey, dataid, not_before, frontier)
VALUES (@job::text, @resubmit::boolean, @sortkey::text, @dataid::text, @not_before::timestamptz, @frontier::boolean);
