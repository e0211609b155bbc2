package backends

import (
	"context"
	"fmt"
	"slices"
)

// A job with mappings (SPEC §9) is backfilled by the engine after its
// catalog change commits, in batches of transactions (backfillMapped): a
// server that stops half way would leave the outputs of READY input chunks
// that the remaining batches would have queued unqueued, and no later
// publish would queue them. So the upsert of such a job first marks the
// backfill pending in a record ("backfill/<job>"), and marks it done once
// the backfill finished; a pending backfill is run again by the next
// upsert of the job (`chunklock apply`) and by ResumeBackfills, which
// every server runs when it starts. A backfill only adds the candidates
// still missing, so running one twice, or two at once, queues nothing
// twice.

const (
	backfillPending = "pending"
	backfillDone    = "done"
)

// backfillRecordKey names the record of job's mapped backfill.
func backfillRecordKey(job string) string { return "backfill/" + job }

// markBackfill marks job's backfill pending and returns the record's
// version after the write, and whether it was pending already.
func (e *engine) markBackfill(ctx context.Context, job string) (int64, bool, error) {
	key := backfillRecordKey(job)
	for {
		r, err := e.b.GetRecord(ctx, key)
		if err != nil {
			return 0, false, err
		}
		w, ok, err := e.b.SwapRecord(ctx, key, []byte(backfillPending), r.Version)
		if err != nil {
			return 0, false, err
		}
		if ok {
			return w.Version, string(r.Value) == backfillPending, nil
		}
	}
}

// finishBackfill marks job's backfill done, unless the record changed
// since version (another upsert marked a newer backfill pending: its own
// run, or the next resume, finishes it).
func (e *engine) finishBackfill(ctx context.Context, job string, version int64) error {
	_, _, err := e.b.SwapRecord(ctx, backfillRecordKey(job), []byte(backfillDone), version)
	return err
}

// ResumeBackfills runs every mapped backfill still marked pending (see
// above) and returns how many it ran.
func (e *engine) ResumeBackfills(ctx context.Context) (int, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, job := range cat.Jobs.All() {
		if !job.Mapped() {
			continue
		}
		r, err := e.b.GetRecord(ctx, backfillRecordKey(job.ID))
		if err != nil {
			return n, err
		}
		if string(r.Value) != backfillPending {
			continue
		}
		if err := e.backfillMapped(ctx, cat, job); err != nil {
			return n, fmt.Errorf("resume the backfill of job %s: %w", job.ID, err)
		}
		n++
		// An upsert still under way may have changed the job since the
		// catalog was read: its backfill is then its own to finish.
		now, err := e.catalog(ctx)
		if err != nil {
			return n, err
		}
		if cur, ok := now.Jobs.Lookup(job.ID); !ok || !sameReads(cur, job) {
			continue
		}
		if err := e.finishBackfill(ctx, job.ID, r.Version); err != nil {
			return n, err
		}
	}
	return n, nil
}

// sameReads tells whether a and b read the same chunks for the same output.
func sameReads(a, b Job) bool {
	return a.Output == b.Output && slices.Equal(a.Inputs, b.Inputs) && slices.EqualFunc(a.InputMappings, b.InputMappings,
		func(x, y InputMapping) bool { return x == y })
}

// keepBackfillMark makes sure, once an upsert's catalog change committed,
// that a backfill is still marked pending: a server resuming backfills
// meanwhile may have marked it done with the definition before the change.
// It returns the version the upsert finishes with.
func (e *engine) keepBackfillMark(ctx context.Context, job string, version int64) (int64, error) {
	r, err := e.b.GetRecord(ctx, backfillRecordKey(job))
	if err != nil || string(r.Value) == backfillPending {
		// Ours, or a later upsert's: finishing with our version then
		// leaves the later one's mark to it.
		return version, err
	}
	v, _, err := e.markBackfill(ctx, job)
	return v, err
}
