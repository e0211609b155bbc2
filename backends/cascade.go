package backends

import (
	"context"
	"time"
)

// resubmitRow sets an OUTPUT row to RESUBMIT with its attempts counted
// afresh, and queues the chunk for its producer.
func resubmitRow(ctx context.Context, tx Tx, old StatusRow, reason string, now time.Time) (StatusRow, error) {
	r := old
	r.Status, r.Attempt, r.Reason, r.UpdatedAt = StatusResubmit, 0, reason, now
	r.LeaseExpiresAt, r.PrevStatus, r.Ended, r.RetryAt = time.Time{}, StatusNone, "", time.Time{}
	if err := put(ctx, tx, &old, r); err != nil {
		return r, err
	}
	if r.Job == "" {
		return r, nil
	}
	return r, tx.AddCandidate(ctx, Candidate{Job: r.Job, DataID: r.DataID, Resubmit: true})
}

// invalidateDownstream invalidates, transitively, what the consumers of
// chunk (dataset, dataid) computed from it or failed on, as CascadeStepOf
// plans for each: their INPUT rows on it become ERROR and their OUTPUT rows
// RESUBMIT, all stamped now, the time of the operation that cascades. It
// returns the OUTPUT rows it changed, or LOCKED, listing every consumer
// that reads or writes at dataid right now; the caller then rolls back.
// The caller holds the chunk locks of every dataset downstream of dataset.
func invalidateDownstream(ctx context.Context, tx Tx, cat *Catalog, dataset, dataid, reason string, now time.Time) ([]StatusRow, error) {
	var changed []StatusRow
	var blockers []Blocker
	queue := []string{dataset}
	seen := map[string]bool{dataset: true}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		consumers := cat.Consumers(d)
		keys := make([]RowKey, 0, 2*len(consumers))
		for _, jid := range consumers {
			keys = append(keys, RowKey{Dataset: d, DataID: dataid, Job: jid, Role: RoleInput}, outputKey(cat.Jobs.Get(jid), dataid))
		}
		rows, err := tx.GetRows(ctx, keys)
		if err != nil {
			return nil, err
		}
		for i, jid := range consumers {
			job, in, out := cat.Jobs.Get(jid), rows[2*i], rows[2*i+1]
			step := CascadeStepOf(in, out)
			switch step {
			case CascadeSkip:
				continue
			case CascadeBlocked:
				if statusOf(in) == StatusRunning {
					blockers = append(blockers, Blocker{Dataset: d, DataID: dataid, Job: jid, Kind: BlockerLocalRead, Status: StatusRunning})
				} else {
					blockers = append(blockers, Blocker{Dataset: job.Output, DataID: dataid, Job: jid, Kind: BlockerOutputLocked, Status: StatusRunning})
				}
				continue
			case CascadeInvalidate:
				r := *in
				r.Status, r.Reason, r.UpdatedAt = StatusError, reason, now
				if err := put(ctx, tx, in, r); err != nil {
					return nil, err
				}
			}
			// A job reading two invalidated chunks (a diamond) is reached
			// twice: its output is resubmitted, and walked, only once.
			if seen[job.Output] {
				continue
			}
			seen[job.Output] = true
			queue = append(queue, job.Output)
			if out != nil && ResubmitFrom(out.Status) {
				r, err := resubmitRow(ctx, tx, *out, reason, now)
				if err != nil {
					return nil, err
				}
				changed = append(changed, r)
			}
		}
	}
	if len(blockers) > 0 {
		return nil, Locked(blockers, "cannot invalidate what was computed from %s/%s while downstream claims are live: %s", dataset, dataid, describeBlockers(blockers))
	}
	return changed, nil
}
