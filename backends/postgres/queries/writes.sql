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
--
-- Each list of values is walked once, by unnests side by side (set-
-- returning functions in one select list run in step): indexing a text
-- array by position walks it from its start each time, which made a
-- transaction writing 8,760 rows take seconds.
WITH put_rows AS (
    INSERT INTO status_rows (dataset, dataid, job, role, sortkey, status, attempt, executor, token,
                             fence, lease_expires_at, updated_at, reason, prev_status, ended, retry_at,
                             read_for, reads)
    SELECT r.dataset, r.dataid, r.job, r.role, r.sortkey, r.status, r.attempt, r.executor, r.token, r.fence,
           CASE WHEN r.has_lease THEN r.lease END,
           r.updated, r.reason, r.prev_status, r.ending,
           CASE WHEN r.has_retry THEN r.retry_at END,
           r.read_for,
           CASE WHEN r.reads <> '' THEN string_to_array(r.reads, ' ') END
    FROM (SELECT unnest(@row_datasets::text[]) AS dataset,
                 unnest(@row_dataids::text[]) AS dataid,
                 unnest(@row_jobs::text[]) AS job,
                 unnest(@row_roles::text[]) AS role,
                 unnest(@row_sortkeys::text[]) AS sortkey,
                 unnest(@row_statuses::text[]) AS status,
                 unnest(@row_attempts::integer[]) AS attempt,
                 unnest(@row_executors::text[]) AS executor,
                 unnest(@row_tokens::text[]) AS token,
                 unnest(@row_fences::bigint[]) AS fence,
                 unnest(@row_has_lease::boolean[]) AS has_lease,
                 unnest(@row_leases::timestamptz[]) AS lease,
                 unnest(@row_updated::timestamptz[]) AS updated,
                 unnest(@row_reasons::text[]) AS reason,
                 unnest(@row_prev_statuses::text[]) AS prev_status,
                 unnest(@row_endings::text[]) AS ending,
                 unnest(@row_has_retry::boolean[]) AS has_retry,
                 unnest(@row_retry_ats::timestamptz[]) AS retry_at,
                 unnest(@row_read_fors::text[]) AS read_for,
                 unnest(@row_reads::text[]) AS reads) AS r
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
    SELECT c.job, c.resubmit, c.sortkey, c.dataid, CASE WHEN c.has_not_before THEN c.not_before END, c.frontier
    FROM (SELECT unnest(@cand_jobs::text[]) AS job,
                 unnest(@cand_resubmits::boolean[]) AS resubmit,
                 unnest(@cand_sortkeys::text[]) AS sortkey,
                 unnest(@cand_dataids::text[]) AS dataid,
                 unnest(@cand_has_not_before::boolean[]) AS has_not_before,
                 unnest(@cand_not_befores::timestamptz[]) AS not_before,
                 unnest(@cand_frontiers::boolean[]) AS frontier) AS c
), drop_candidates AS (
    DELETE FROM candidates WHERE id = ANY(@drop_candidate_ids::bigint[])
), inserted_events AS (
    INSERT INTO events (seq, time, actor, job, dataset, dataid, role, from_status, to_status, attempt, executor, reason, read_for)
    SELECT (pg_current_xact_id()::text::bigint << 20) | e.i,
           e.time, e.actor, e.job, e.dataset, e.dataid, e.role, e.from_status, e.to_status, e.attempt,
           e.executor, e.reason, e.read_for
    FROM (SELECT unnest(@event_times::timestamptz[]) AS time,
                 unnest(@event_actors::text[]) AS actor,
                 unnest(@event_jobs::text[]) AS job,
                 unnest(@event_datasets::text[]) AS dataset,
                 unnest(@event_dataids::text[]) AS dataid,
                 unnest(@event_roles::text[]) AS role,
                 unnest(@event_from::text[]) AS from_status,
                 unnest(@event_to::text[]) AS to_status,
                 unnest(@event_attempts::integer[]) AS attempt,
                 unnest(@event_executors::text[]) AS executor,
                 unnest(@event_reasons::text[]) AS reason,
                 unnest(@event_read_fors::text[]) AS read_for,
                 generate_subscripts(@event_times::timestamptz[], 1) AS i) AS e
)
SELECT 1;
