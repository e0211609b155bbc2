package engine

import (
	"context"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The rows an operation reads and writes: the keys of a job's OUTPUT row
// and of a chunk's, every write of a row with the event that records its
// transition (by the actor the operation runs for), and the rows a force
// gives back when it supersedes a live claim.

// outputKey is job's OUTPUT row at dataid, keyed under its row job
// (Catalog.RowJob: the id of the deleted producer whose chunks it took
// over, or its own).
func outputKey(cat *backends.Catalog, job backends.Job, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: job.Output, DataID: dataid, Job: cat.RowJob(job), Role: backends.RoleOutput}
}

// rowOwner is the job whose OUTPUT row is k: the dataset's producer when
// its rows are keyed under k.Job (Catalog.RowOwner), else the job of that
// id (zero when there is none).
func rowOwner(cat *backends.Catalog, k backends.RowKey) backends.Job {
	if j, ok := cat.RowOwner(k.Dataset, k.Job); ok {
		return j
	}
	return cat.Jobs.Get(k.Job)
}

// chunkOutputKey is the OUTPUT row of a chunk: written by its producer (or
// by the deleted job that was, Catalog.OutputJob), or with an empty job
// for a source dataset.
func chunkOutputKey(cat *backends.Catalog, dataset, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: dataset, DataID: dataid, Job: cat.OutputJob(dataset), Role: backends.RoleOutput}
}

// event records the transition of a row from old (nil: no row) to r, by
// actor.
func event(actor string, old *backends.StatusRow, r backends.StatusRow) backends.Event {
	from := backends.StatusNone
	if old != nil {
		from = old.Status
	}
	return backends.Event{
		Time: r.UpdatedAt, Actor: actor, Job: r.Job, Dataset: r.Dataset, DataID: r.DataID,
		Role: r.Role, From: from, To: r.Status, Attempt: r.Attempt, Executor: r.Executor, Reason: r.Reason,
		ReadFor: r.ReadFor,
	}
}

// put writes a row and records the transition from old, by actor.
func put(ctx context.Context, tx backends.Tx, actor string, old *backends.StatusRow, r backends.StatusRow) error {
	if err := tx.PutRow(ctx, r); err != nil {
		return err
	}
	return tx.AppendEvent(ctx, event(actor, old, r))
}

// putByOperator writes a row an operator's action changed (a resubmit, a
// hold, the INPUT rows a cascade invalidates) and records the transition
// by the caller with no executor: the row keeps the executor of the claim
// that last wrote it, but the transition is no claim's, and the log must
// not credit it to that runner.
func putByOperator(ctx context.Context, tx backends.Tx, old *backends.StatusRow, r backends.StatusRow) error {
	if err := tx.PutRow(ctx, r); err != nil {
		return err
	}
	ev := event(backends.ActorFrom(ctx), old, r)
	ev.Executor = ""
	return tx.AppendEvent(ctx, ev)
}

// del deletes a row and records the transition to "no row", by actor.
func del(ctx context.Context, tx backends.Tx, actor string, old backends.StatusRow, now time.Time, reason string) error {
	if err := tx.DeleteRow(ctx, old.RowKey); err != nil {
		return err
	}
	ev := event(actor, &old, old)
	ev.Time, ev.To, ev.Reason, ev.Attempt = now, backends.StatusNone, reason, old.Attempt-1
	return tx.AppendEvent(ctx, ev)
}

// releaseDropped gives back, when a force supersedes a live claim, the
// reads of the superseded claim that the new one does not make (a LATEST
// input whose newest READY snapshot changed in between): each INPUT row
// goes back to what it was before that claim, as a release does, so that
// no read lock is left behind that no claim will ever end.
func releaseDropped(ctx context.Context, tx backends.Tx, actor string, st backends.ClaimState, now time.Time) error {
	if st.Output == nil || st.Output.Reads == nil {
		return nil
	}
	var keys []backends.RowKey
	for _, r := range st.Output.Reads {
		if !slices.Contains(st.Reads, r) {
			keys = append(keys, backends.ReadKey(st.Job.ID, r, st.DataID))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r == nil || r.Status != backends.StatusRunning || r.Token != st.Output.Token {
			continue
		}
		if r.PrevStatus == backends.StatusNone {
			if err := del(ctx, tx, actor, *r, now, "superseded by force"); err != nil {
				return err
			}
			continue
		}
		back := *r
		back.Status, back.Attempt, back.UpdatedAt, back.Reason, back.PrevStatus = r.PrevStatus, r.Attempt-1, now, "superseded by force", backends.StatusNone
		if err := put(ctx, tx, actor, r, back); err != nil {
			return err
		}
	}
	return nil
}
