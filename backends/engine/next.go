package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// findNext calls for one job are served one transaction per round, or, on
// a backend that allows it (Limits.MaxBatch), several calls per round, and
// several claims per transaction (batcher.go): a round reserves as many
// candidates as there are calls,
// locks their chunks in ascending (dataid, dataset) order, reads all their
// rows at once and hands the claimable ones out in queue order
// (resubmitted chunks first, then by dataid), one per call. A candidate
// that turns out not to be claimable is dropped, or put back in its true
// place, and committed; a call left without a claim that way waits for the
// next round, so no transaction holds locks on more dataids than it has
// calls. A round that finds the queue empty answers every call left with
// nil. Each claim follows every rule of a single claim; a failure of the
// transaction fails every call in it.

func (e *engine) FindNext(ctx context.Context, jobID, executor string) (*backends.Claim, error) {
	if err := backends.ValidateExecutor(executor); err != nil {
		return nil, err
	}
	op := &nextOp{job: jobID, executor: executor}
	if err := e.next.do(ctx, jobID, op); err != nil {
		return nil, err
	}
	return op.claim, nil
}

// takeNext takes from the front of a job's queue as many calls as one
// transaction may serve.
func (e *engine) takeNext(job string, queue []*nextOp) (batch, rest []*nextOp) {
	n := e.maxBatch
	if keys := opKeys(e.jobInputs(job)); e.maxKeys > 0 {
		n = max(1, min(n, (e.maxKeys-e.roundSlotKeys(job))/keys))
	}
	n = min(n, len(queue))
	batch = slices.Clone(queue[:n])
	clear(queue[:n])
	return batch, queue[n:]
}

// runNext serves one round of the calls of ops, all for one job, in one
// transaction (see the top of this file). It leaves pending the calls it
// does not answer.
func (e *engine) runNext(ctx context.Context, ops []*nextOp) error {
	answer := func(claim *backends.Claim, err error, pending bool) {
		for _, op := range ops {
			op.claim, op.err, op.pending = claim, err, pending
		}
	}
	return e.withCatalog(ctx, func(cat *opCatalog) error {
		answer(nil, nil, false)
		job, err := cat.Job(ops[0].job)
		if err != nil {
			answer(nil, err, false)
			return err // withCatalog asks a fresh catalog before it believes it
		}
		if job.Paused {
			return nil
		}
		return e.update(ctx, cat, func(tx backends.Tx) error {
			answer(nil, nil, true)
			cands, err := tx.NextCandidates(ctx, job.ID, len(ops), e.clock.Now())
			if err != nil || len(cands) == 0 {
				answer(nil, nil, false)
				return err
			}
			return e.claimRound(ctx, tx, cat.Catalog, job, cands, ops)
		})
	})
}
