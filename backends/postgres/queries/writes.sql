-- name: ApplyWrites :exec
-- Applies a transaction's buffered writes in one round trip: status row
-- upserts and deletes (distinct keys), candidate queue additions (plain
-- inserts: they never wait) and removals, and the events in order.
--
-- An event's seq is the transaction's id shifted left by 20 bits plus the
-- event's position in the transaction (1-based; at most 2^20 - 1 events per
-- transaction, and this statement runs at most once per transaction with
-- events). Readers only return seqs below the id of the oldest transaction
-- still running (EventsHorizon), so seq order is an order no reader can see
-- change: no lock, no notification in the commit path.
WITH put_rows AS (
    INSERT INTO status_rows (dataset, dataid, job, role, sortkey, status, attempt, executor, token,
                             fence, lease_expires_at, updated_at, reason, prev_status, ended, retry_at,
                             read_for, reads)
    SELECT (@row_datasets::text[])[i], (@row_dataids::text[])[i], (@row_jobs::text[])[i],
           (@row_roles::text[])[i], (@row_sortkeys::text[])[i], (@row_statuses::text[])[i],
           (@row_attempts::integer[])[i], (@row_executors::text[])[i], (@row_tokens::text[])[i],
           (@row_fences::bigint[])[i],
           CASE WHEN (@row_has_lease::boolean[])[i] THEN (@row_leases::timestamptz[])[i] END,
           (@row_updated::timestamptz[])[i], (@row_reasons::text[])[i], (@row_prev_statuses::text[])[i],
           (@row_endings::text[])[i],
           CASE WHEN (@row_has_retry::boolean[])[i] THEN (@row_retry_ats::timestamptz[])[i] END,
           (@row_read_fors::text[])[i],
           CASE WHEN (@row_reads::text[])[i] <> '' THEN string_to_array((@row_reads::text[])[i], ' ') END
    FROM generate_subscripts(@row_datasets::text[], 1) AS i
    ON CONFLICT (dataset, dataid, job, role, read_for) DO UPDATE SET
        status           = excluded.status,
        attempt          = excluded.attempt,
        executor         = excluded.executor,
        token            = excluded.token,
        fence            = excluded.fence,
        lease_expires_at = excluded.lease_expires_at,
        updated_at       = excluded.updated_at,
        reason           = excluded.reason,
        prev_status      = excluded.prev_status,
        ended            = excluded.ended,
        retry_at         = excluded.retry_at,
        reads            = excluded.reads
), del_rows AS (
    -- The sort key makes every index a point lookup (see GetRows).
    DELETE FROM status_rows s
    USING (SELECT unnest(@del_datasets::text[]) AS dataset, unnest(@del_dataids::text[]) AS dataid,
                  unnest(@del_sortkeys::text[]) AS sortkey, unnest(@del_jobs::text[]) AS job,
                  unnest(@del_roles::text[]) AS role, unnest(@del_read_fors::text[]) AS read_for) AS d
    WHERE s.dataset = d.dataset AND s.dataid = d.dataid AND s.sortkey = d.sortkey
      AND s.job = d.job AND s.role = d.role AND s.read_for = d.read_for
), add_candidates AS (
    INSERT INTO candidates (job, resubmit, sortkey, dataid, not_before, frontier)
    SELECT (@cand_jobs::text[])[i], (@cand_resubmits::boolean[])[i],
           (@cand_sortkeys::text[])[i], (@cand_dataids::text[])[i],
           CASE WHEN (@cand_has_not_before::boolean[])[i] THEN (@cand_not_befores::timestamptz[])[i] END,
           (@cand_frontiers::boolean[])[i]
    FROM generate_subscripts(@cand_jobs::text[], 1) AS i
), drop_candidates AS (
    DELETE FROM candidates WHERE id = ANY(@drop_candidate_ids::bigint[])
), inserted_events AS (
    INSERT INTO events (seq, time, actor, job, dataset, dataid, role, from_status, to_status, attempt, executor, reason, read_for)
    SELECT (pg_current_xact_id()::text::bigint << 20) | i,
           (@event_times::timestamptz[])[i], (@event_actors::text[])[i], (@event_jobs::text[])[i],
           (@event_datasets::text[])[i], (@event_dataids::text[])[i], (@event_roles::text[])[i],
           (@event_from::text[])[i], (@event_to::text[])[i], (@event_attempts::integer[])[i],
           (@event_executors::text[])[i], (@event_reasons::text[])[i], (@event_read_fors::text[])[i]
    FROM generate_subscripts(@event_times::timestamptz[], 1) AS i
)
SELECT 1;
