package engine

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

// ChunkCounts counts a dataset's chunks by status: the OUTPUT rows of its
// producer, or of its deleted producer (Catalog.OutputJob; job "" for a
// source), as committed. A backend that counts in the
// store (backends.StatusCounter) answers in one request; otherwise the
// rows are paged through here, so that a caller never reads them.
func (e *engine) ChunkCounts(ctx context.Context, dataset string) (backends.ChunkCount, error) {
	var producer string
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		producer = cat.OutputJob(dataset) // a deleted producer's rows stay under its id
		return e.update(ctx, cat, func(backends.Tx) error { return nil })
	})
	if err != nil {
		return backends.ChunkCount{}, err
	}
	c := backends.ChunkCount{Dataset: dataset}
	if sc, ok := e.b.(backends.StatusCounter); ok {
		byStatus, err := sc.CountStatuses(ctx, dataset, producer)
		if err != nil {
			return backends.ChunkCount{}, err
		}
		for s, n := range byStatus {
			c.Add(s, n)
		}
		return c, nil
	}
	f := backends.ChunkFilter{Dataset: dataset, Role: backends.RoleOutput, Job: producer, First: backends.MaxPageSize}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return backends.ChunkCount{}, err
		}
		for _, r := range page.Rows {
			if r.Job == producer && r.Role == backends.RoleOutput {
				c.Add(r.Status, 1)
			}
		}
		if !page.HasNextPage || len(page.Cursors) == 0 {
			return c, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}
