package postgres

import (
	"context"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
)

var _ backends.OutputStatusReader = (*Backend)(nil)

// OutputStatuses reads the dataids and statuses of job's OUTPUT rows on a
// dataset between from and to in one index range scan
// (backends.OutputStatusReader).
func (b *Backend) OutputStatuses(ctx context.Context, dataset, job, from, to string, limit int) ([]string, []backends.Status, error) {
	if err := b.usable(ctx); err != nil {
		return nil, nil, err
	}
	rows, err := b.listQ.OutputStatuses(ctx, sqldb.OutputStatusesParams{Dataset: dataset, Job: job,
		FromKey: backends.SortKey(from), ToKey: backends.SortKey(to), MaxRows: int32(limit)})
	if err != nil {
		return nil, nil, mapErr(err, "reading the statuses of a span of chunks")
	}
	ids, sts := make([]string, len(rows)), make([]backends.Status, len(rows))
	for i, r := range rows {
		ids[i], sts[i] = r.Dataid, backends.Status(r.Status)
	}
	return ids, sts, nil
}

var _ backends.OutputCounter = (*Backend)(nil)

// CountOutputs counts job's OUTPUT rows on a dataset between from and to
// in one index-only count (backends.OutputCounter).
func (b *Backend) CountOutputs(ctx context.Context, dataset, job, from, to string) (int64, bool, error) {
	if err := b.usable(ctx); err != nil {
		return 0, false, err
	}
	n, err := b.listQ.CountOutputs(ctx, sqldb.CountOutputsParams{Dataset: dataset, Job: job,
		FromKey: backends.SortKey(from), ToKey: backends.SortKey(to)})
	if err != nil {
		return 0, false, mapErr(err, "counting the rows of a span of chunks")
	}
	return n, true, nil
}
