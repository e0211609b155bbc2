package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.StatusCounter = (*Backend)(nil)

// countStatusesSQL reads job's chunk counts on a dataset: the folded
// counts plus the deltas not folded yet, in one statement (one snapshot),
// so that a fold running beside it is seen whole or not at all. The
// counts are kept by triggers on status_rows (migration 0013).
const countStatusesSQL = `SELECT status, sum(n)::bigint FROM (
    SELECT status, n FROM chunk_counts WHERE dataset = $1 AND job = $2 AND pos = 0
    UNION ALL
    SELECT status, n FROM chunk_count_deltas WHERE dataset = $1 AND job = $2 AND pos = 0) AS c
GROUP BY status HAVING sum(n) <> 0`

// countValueStatusesSQL reads job's chunk counts on a dataset by the value
// at a position of its dataids (migration 0019), as countStatusesSQL does.
const countValueStatusesSQL = `SELECT value, status, sum(n)::bigint FROM (
    SELECT value, status, n FROM chunk_counts WHERE dataset = $1 AND job = $2 AND pos = $3
    UNION ALL
    SELECT value, status, n FROM chunk_count_deltas WHERE dataset = $1 AND job = $2 AND pos = $3) AS c
GROUP BY value, status HAVING sum(n) <> 0`

var _ backends.ValueCounter = (*Backend)(nil)

// CountValueStatuses counts job's OUTPUT rows on dataset by the value of
// dimension i (1 to 3) of their dataids and by status, from the counts kept
// with them (backends.ValueCounter).
func (b *Backend) CountValueStatuses(ctx context.Context, dataset, job string, i int) (map[string]map[backends.Status]int, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if i < 1 || i > 3 {
		return nil, fmt.Errorf("postgres: values are counted at dimensions 1 to 3, not %d", i)
	}
	rows, err := b.pool.Query(ctx, countValueStatusesSQL, dataset, job, i+1)
	if err != nil {
		return nil, mapErr(err, "counting a dataset's chunks by value")
	}
	defer rows.Close()
	out := map[string]map[backends.Status]int{}
	for rows.Next() {
		var v, s string
		var n int64
		if err := rows.Scan(&v, &s, &n); err != nil {
			return nil, mapErr(err, "counting a dataset's chunks by value")
		}
		if out[v] == nil {
			out[v] = map[backends.Status]int{}
		}
		out[v][backends.Status(s)] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "counting a dataset's chunks by value")
	}
	return out, nil
}

// CountStatuses reads job's OUTPUT rows on a dataset by status from the
// counts kept with them (backends.StatusCounter): a handful of rows,
// however many chunks the dataset has.
func (b *Backend) CountStatuses(ctx context.Context, dataset, job string) (map[backends.Status]int, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, countStatusesSQL, dataset, job)
	if err != nil {
		return nil, mapErr(err, "counting a dataset's chunks by status")
	}
	defer rows.Close()
	out := map[backends.Status]int{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, mapErr(err, "counting a dataset's chunks by status")
		}
		out[backends.Status(s)] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "counting a dataset's chunks by status")
	}
	return out, nil
}

// compactCountsSQL folds up to 10,000 deltas into chunk_counts in one
// statement: the deltas it deletes and the counts it adds them to commit
// together. Counters are updated in key order, so that two folds running
// at once (two servers) never deadlock; a delta one of them deleted is not
// returned to the other.
const compactCountsSQL = `WITH d AS (
    DELETE FROM chunk_count_deltas WHERE id IN (SELECT id FROM chunk_count_deltas ORDER BY id LIMIT 10000)
    RETURNING dataset, job, pos, value, status, n
), s AS (
    SELECT dataset, job, pos, value, status, sum(n)::bigint AS n FROM d GROUP BY 1, 2, 3, 4, 5
)
INSERT INTO chunk_counts (dataset, job, pos, value, status, n)
SELECT dataset, job, pos, value, status, n FROM s ORDER BY dataset, job, pos, value, status
ON CONFLICT (dataset, job, pos, value, status) DO UPDATE SET n = chunk_counts.n + excluded.n`

// countsCompactInterval is how often a server folds count deltas.
const countsCompactInterval = 5 * time.Second

// compactCounts folds count deltas into chunk_counts until none is left,
// every countsCompactInterval, until Close: a count reads the deltas of
// its dataset since the last fold, a few seconds of transitions.
func (b *Backend) compactCounts() {
	tick := time.NewTicker(countsCompactInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		}
		_ = b.CompactCounts(b.ctx) // a failure is retried on the next round
	}
}

// CompactCounts folds every count delta committed so far into
// chunk_counts. Counts read the same before and after.
func (b *Backend) CompactCounts(ctx context.Context) error {
	for {
		tag, err := b.pool.Exec(ctx, compactCountsSQL)
		if err != nil {
			return mapErr(err, "folding chunk count deltas")
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
	}
}
