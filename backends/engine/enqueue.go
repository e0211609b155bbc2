package engine

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// A chunk becoming READY queues the claims it may allow: candidates for
// its consumers.

// enqueueConsumers adds candidates for every job reading (dataset, dataid)
// whose output there is free for producers: the chunk just became READY.
// A consumer that reads the dataset through a mapping other than IDENTITY
// gets candidates at the outputs whose mapped set holds the chunk (the
// reverse mapping, enqueueMapped), so that findNext stays as cheap however
// long the history and however wide the window.
func enqueueConsumers(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string, now time.Time) error {
	consumers := cat.Consumers(dataset)
	if len(consumers) == 0 {
		return nil
	}
	keys := make([]backends.RowKey, 0, len(consumers))
	plain := make([]string, 0, len(consumers))
	for _, j := range consumers {
		job := cat.Jobs.Get(j)
		if k := job.Mapping(dataset).Kind; k != partition.Identity && k != "" {
			if err := enqueueMapped(ctx, tx, cat, job, dataset, dataid, now); err != nil {
				return err
			}
			continue
		}
		plain = append(plain, j)
		keys = append(keys, outputKey(cat, job, dataid))
	}
	if len(keys) == 0 {
		return nil
	}
	outs, err := tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	for i, j := range plain {
		st := backends.StatusOf(outs[i])
		if !backends.FreeForProducers(st) {
			continue
		}
		if err := tx.AddCandidate(ctx, backends.Candidate{Job: j, DataID: dataid, Resubmit: st == backends.StatusResubmit}); err != nil {
			return err
		}
	}
	return nil
}
