package engine

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The rows an operation reads and writes: the keys of a job's OUTPUT row
// and of a chunk's, and every write of a row with the event that records
// its transition.

// outputKey is job's OUTPUT row at dataid.
func outputKey(job backends.Job, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: job.Output, DataID: dataid, Job: job.ID, Role: backends.RoleOutput}
}

// chunkOutputKey is the OUTPUT row of a chunk: written by its producer, or
// with an empty job for a source dataset.
func chunkOutputKey(cat *backends.Catalog, dataset, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: dataset, DataID: dataid, Job: cat.Producer(dataset), Role: backends.RoleOutput}
}

// event records the transition of a row from old (nil: no row) to r, by
// the actor of ctx.
func event(ctx context.Context, old *backends.StatusRow, r backends.StatusRow) backends.Event {
	from := backends.StatusNone
	if old != nil {
		from = old.Status
	}
	return backends.Event{
		Time: r.UpdatedAt, Actor: backends.ActorFrom(ctx), Job: r.Job, Dataset: r.Dataset, DataID: r.DataID,
		Role: r.Role, From: from, To: r.Status, Attempt: r.Attempt, Executor: r.Executor, Reason: r.Reason,
		ReadFor: r.ReadFor,
	}
}

// put writes a row and records the transition from old.
func put(ctx context.Context, tx backends.Tx, old *backends.StatusRow, r backends.StatusRow) error {
	if err := tx.PutRow(ctx, r); err != nil {
		return err
	}
	return tx.AppendEvent(ctx, event(ctx, old, r))
}

// del deletes a row and records the transition to "no row".
func del(ctx context.Context, tx backends.Tx, old backends.StatusRow, now time.Time, reason string) error {
	if err := tx.DeleteRow(ctx, old.RowKey); err != nil {
		return err
	}
	ev := event(ctx, &old, old)
	ev.Time, ev.To, ev.Reason, ev.Attempt = now, backends.StatusNone, reason, old.Attempt-1
	return tx.AppendEvent(ctx, ev)
}
