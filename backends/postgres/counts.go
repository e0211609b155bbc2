package postgres

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.StatusCounter = (*Backend)(nil)

// countStatusesSQL counts job's OUTPUT rows on a dataset by status, on
// status_rows_list (dataset leads it).
const countStatusesSQL = `SELECT status, count(*) FROM status_rows
WHERE dataset = $1 AND role = 'OUTPUT' AND job = $2 AND read_for = ''
GROUP BY status`

// CountStatuses counts job's OUTPUT rows on a dataset by status in one
// aggregate (backends.StatusCounter).
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
