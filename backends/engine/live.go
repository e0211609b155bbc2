package engine

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Operations on a live claim (heartbeat, complete, fail, release, and the
// reaper's expiry) run in one transaction each, or, on a backend that allows
// it (Limits.MaxBatch), several at once (batcher.go): a batch takes their
// chunk locks in ascending (dataid, dataset) order, reads all their rows in
// one call and commits all their writes together. Each operation is still all
// or nothing: one whose claim is no longer live writes nothing and gets
// STALE_CLAIM while the others go on; a failure of the transaction itself
// fails every operation in it. Two operations on the same chunk never share a
// transaction.

// withLiveClaim runs fn in a transaction holding the live claim named by
// token, with the claim's OUTPUT row and INPUT rows loaded. For an
// operation that ends the claim (how not empty), a claim that the same
// operation ended already answers nil and writes nothing.
func (e *engine) withLiveClaim(ctx context.Context, token string, how backends.Ending, fn liveFn) error {
	key, fence, err := backends.ParseToken(token)
	if err != nil {
		return err
	}
	return e.live.do(ctx, "", &liveOp{key: key, token: token, fence: fence, ending: how, fn: fn})
}

// job is the catalog job op acts on. A claim whose job changed its output
// or was removed is no longer live; the reaper still ends it, without the
// job's inputs (and, for a removed job, with the default attempts).
func (op *liveOp) job(cat *backends.Catalog) (backends.Job, error) {
	if job, ok := cat.RowOwner(op.key.Dataset, op.key.Job); ok {
		return job, nil // the producer whose OUTPUT rows are keyed under the token's job
	}
	job, ok := cat.Jobs.Lookup(op.key.Job)
	if ok && job.Output == op.key.Dataset && cat.RowJob(job) == op.key.Job {
		return job, nil
	}
	if op.token != "" {
		return backends.Job{}, backends.StaleClaim("claim is no longer live: its job changed or was removed")
	}
	if !ok {
		return backends.Job{ID: op.key.Job, Output: op.key.Dataset, MaxAttempts: backends.DefaultMaxAttempts}, nil
	}
	job.Inputs = nil
	return job, nil
}

// acts tells whether op acts on the claim whose OUTPUT row is out: false
// with a nil error when op is to answer nil without writing (a repeated
// ending; for the reaper, a claim that a heartbeat, a completion or
// another reaper reached first).
func (op *liveOp) acts(out *backends.StatusRow, now time.Time) (bool, error) {
	if op.token == "" {
		return out != nil && out.Status == backends.StatusRunning && !now.Before(out.LeaseExpiresAt), nil
	}
	if err := backends.CheckLive(out, op.token, op.fence, now); err != nil {
		if op.ending != "" && backends.EndedBy(op.ending, out, op.token, op.fence) {
			return false, nil // a repeat: the first call ended the claim
		}
		return false, err
	}
	return true, nil
}

// takeLive takes up to e.maxBatch operations from the queue, in order, at
// most one per output chunk and within the backend's key budget; up to
// e.maxRange when the first is of a batch call (a runner pool's endings
// come from one caller who waits for them all, as a range's chunks do).
func (e *engine) takeLive(_ string, queue []*liveOp) (batch, rest []*liveOp) {
	chunks := map[[2]string]bool{}
	rest = queue[:0]
	used := 0
	size := e.maxBatch
	if len(queue) > 0 && queue[0].many {
		size = max(size, e.maxRange)
	}
	for _, op := range queue {
		chunk := [2]string{op.key.Dataset, op.key.DataID}
		id := e.liveJobID(op.key)
		keys := opKeys(e.jobInputs(id)) + e.jobSlotKeys(id)
		if e.maxKeys > 0 && op.mayMakeReady() {
			keys += e.readyKeysOf(op.key.Dataset)
		}
		if len(batch) == size || chunks[chunk] || !e.batchFits(used, keys) {
			rest = append(rest, op)
			continue
		}
		chunks[chunk] = true
		used += keys
		batch = append(batch, op)
	}
	clear(queue[len(rest):])
	return batch, rest
}

// runLive serves ops in one transaction. An operation whose claim is not
// live gets its error and writes nothing; the others go on.
func (e *engine) runLive(ctx context.Context, ops []*liveOp) error {
	return e.withCatalog(ctx, func(cat *opCatalog) error {
		active := make([]*liveOp, 0, len(ops))
		jobs := make(map[*liveOp]backends.Job, len(ops))
		for _, op := range ops {
			job, err := op.job(cat.Catalog)
			if op.err = err; err == nil {
				jobs[op] = job
				active = append(active, op)
			}
		}
		if len(active) == 0 {
			return nil // withCatalog asks a fresh catalog before it believes it
		}
		slices.SortFunc(active, func(a, b *liveOp) int {
			return cmp.Or(cmp.Compare(a.key.DataID, b.key.DataID), cmp.Compare(a.key.Dataset, b.key.Dataset))
		})
		return withReplans(func([]backends.Read) error {
			return e.update(ctx, cat, func(tx backends.Tx) error {
				return e.serveLive(withWindowRuns(ctx), tx, cat.Catalog, active, jobs)
			})
		})
	})
}

// serveLive locks and reads the claims of ops, and makes the writes of
// those still live, inside tx.
func (e *engine) serveLive(ctx context.Context, tx backends.Tx, cat *backends.Catalog, ops []*liveOp, jobs map[*liveOp]backends.Job) error {
	if err := lockLive(ctx, tx, cat, ops); err != nil {
		return err
	}
	var keys []backends.RowKey
	for _, op := range ops {
		op.err, op.acted = nil, false
		keys = append(keys, op.key)
		if job := jobs[op]; !job.Mapped() {
			for _, in := range job.Inputs {
				keys = append(keys, backends.RowKey{Dataset: in, DataID: op.key.DataID, Job: job.ID, Role: backends.RoleInput})
			}
		}
	}
	var slots []string
	for _, op := range ops {
		if op.ending != "" || op.token == "" { // an ending, or the reaper's
			for _, k := range slotKeys(jobs[op]) {
				if !slices.Contains(slots, k) {
					slots = append(slots, k)
				}
			}
		}
	}
	slices.Sort(slots)
	prefetchSlots(tx, slots, true)
	rows, err := tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	if rows, err = readMappedInputs(ctx, tx, ops, jobs, rows); err != nil {
		return err
	}
	now := e.clock.Now()
	released := slotReleases{}
	for _, op := range ops {
		job := jobs[op]
		n := 1 + len(job.Inputs)
		if rows[0] != nil && rows[0].Reads != nil {
			n = 1 + len(rows[0].Reads)
		}
		mine := rows[:n]
		rows = rows[n:]
		act, err := op.acts(mine[0], now)
		if op.err, op.acted = err, act; !act {
			continue
		}
		c := liveClaim{cat: cat, job: job, out: *mine[0], inputs: mine[1:], now: now, slots: released}
		if err := op.fn(backends.WithActor(ctx, backends.ActorFrom(op.ctx)), tx, c); err != nil {
			return err
		}
	}
	return released.flush(ctx, tx)
}

// lockLive locks the output chunks of ops, in ascending (dataid, dataset)
// order, one call per op; when a job reads one of their datasets through
// a window (SPEC §9), with the chunks next to each op's that may make it
// READY shared (windowLocks), all in one ordered pass.
func lockLive(ctx context.Context, tx backends.Tx, cat *backends.Catalog, ops []*liveOp) error {
	windows := slices.ContainsFunc(ops, func(op *liveOp) bool { return op.mayMakeReady() && windowConsumers(cat, op.key.Dataset) })
	if !windows {
		for _, op := range ops {
			if err := tx.LockChunks(ctx, op.key.DataID, []string{op.key.Dataset}, nil); err != nil {
				return err
			}
		}
		return nil
	}
	plan := lockPlan{}
	for _, op := range ops {
		plan.add(op.key.DataID, op.key.Dataset, true)
	}
	for _, op := range ops {
		if !op.mayMakeReady() || !windowConsumers(cat, op.key.Dataset) {
			continue
		}
		if err := windowLocks(ctx, tx, cat, plan, op.key.Dataset, op.key.DataID); err != nil {
			return err
		}
	}
	return plan.lock(ctx, tx)
}

// mayMakeReady tells whether op may leave its chunk READY: a completion,
// or a release restoring a READY chunk. Heartbeats, failures and the
// reaper's expiry never do, and take no window locks.
func (op *liveOp) mayMakeReady() bool {
	return op.ending == backends.EndComplete || op.ending == backends.EndRelease
}

// readMappedInputs completes rows, read by serveLive (each op's OUTPUT row,
// followed by its INPUT rows for a job without mappings), with the INPUT
// rows of the claims that record their reads (StatusRow.Reads: a job with
// mappings), read in one more call, and returns, for each op, its OUTPUT
// row followed by the INPUT rows of its reads: the recorded ones, or one
// per input at the claim's dataid.
func readMappedInputs(ctx context.Context, tx backends.Tx, ops []*liveOp, jobs map[*liveOp]backends.Job, rows []*backends.StatusRow) ([]*backends.StatusRow, error) {
	var extra []backends.RowKey
	at := rows
	for _, op := range ops {
		job := jobs[op]
		out := at[0]
		at = at[1:]
		if !job.Mapped() {
			at = at[len(job.Inputs):]
		}
		reads := backends.IdentityReads(job, op.key.DataID)
		if out != nil && out.Reads != nil {
			reads = out.Reads
		} else if !job.Mapped() {
			continue
		}
		for _, r := range reads {
			extra = append(extra, backends.ReadKey(job.ID, r, op.key.DataID))
		}
	}
	if len(extra) == 0 {
		return rows, nil
	}
	more, err := tx.GetRows(ctx, extra)
	if err != nil {
		return nil, err
	}
	all := make([]*backends.StatusRow, 0, len(rows)+len(more))
	for _, op := range ops {
		job := jobs[op]
		out := rows[0]
		rows = rows[1:]
		all = append(all, out)
		var own []*backends.StatusRow
		if !job.Mapped() {
			own, rows = rows[:len(job.Inputs)], rows[len(job.Inputs):]
		}
		n := len(job.Inputs)
		recorded := out != nil && out.Reads != nil
		if recorded {
			n = len(out.Reads)
		}
		if !recorded && !job.Mapped() {
			all = append(all, own...)
			continue
		}
		all = append(all, more[:n]...)
		more = more[n:]
	}
	return all, nil
}
