-- name: OutputStatuses :many
-- The dataids and statuses of job's OUTPUT rows on a dataset with a sort
-- key between @from_key and @to_key, in shortlex order, without the rest of
-- each row: the runs read model (PartitionRuns) reads long histories so, a
-- window at a time, on status_rows_list.
SELECT dataid, status
FROM status_rows
WHERE dataset = @dataset AND sortkey >= @from_key AND sortkey <= @to_key
  AND role = 'OUTPUT' AND job = @job AND read_for = ''
ORDER BY sortkey
LIMIT @max_rows;

-- name: CountOutputs :one
-- How many of job's OUTPUT rows on a dataset have a sort key between
-- @from_key and @to_key: an index-only count on status_rows_list (an
-- OUTPUT row's read_for is always empty), for the bisection that finds the
-- oldest missing chunk of a long history.
SELECT count(*)
FROM status_rows
WHERE dataset = @dataset AND sortkey >= @from_key AND sortkey <= @to_key
  AND role = 'OUTPUT' AND job = @job;
