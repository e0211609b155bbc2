package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// findNext calls for one job are served one transaction per round, or, on
// a backend that allows it (Limits.MaxBatch), several calls per round, and
// several claims per transaction (batcher.go): a round reserves as many
// candidates as its calls ask claims (one per findNext, up to max per
// claimNext: its seats), locks their chunks in ascending (dataid, dataset)
// order, reads all their rows at once and hands the claimable ones out in
// queue order (resubmitted chunks first, then by dataid), one per seat. A
// candidate
// that turns out not to be claimable is dropped, or put back in its true
// place, and committed; a call left without a claim that way waits for the
// next round, so no transaction holds locks on more dataids than it has
// seats. A round that finds the queue empty answers every call left with
// nil. Each claim follows every rule of a single claim; a failure of the
// transaction fails every call in it.

func (e *engine) FindNext(ctx context.Context, jobID, executor string) (*backends.Claim, error) {
	if err := backends.ValidateExecutor(executor); err != nil {
		return nil, err
	}
	op := &nextOp{job: jobID, executor: executor, want: 1}
	if err := e.next.do(ctx, jobID, op); err != nil {
		return nil, err
	}
	if len(op.got) == 0 {
		return nil, nil
	}
	return op.got[0], nil
}

// ClaimNext is one call of the round machinery asking for up to max
// claims (its seats, claimRound): it shares a round with the findNext
// calls queued beside it as long as their seats fit (takeNext). It is
// served in one transaction when the candidates of its round are
// claimable and fit in one (roundSeats); seats that stale hints or a
// schedule's frontier left empty, or that did not fit, are served by the
// next rounds, each adding what it commits.
func (e *engine) ClaimNext(ctx context.Context, jobID, executor string, max int) ([]*backends.Claim, error) {
	if err := backends.ValidateExecutor(executor); err != nil {
		return nil, err
	}
	if max < 1 || max > backends.MaxClaimNext {
		return nil, backends.InvalidArgument("max must be 1 to %d, not %d", backends.MaxClaimNext, max)
	}
	op := &nextOp{job: jobID, executor: executor, want: max}
	if err := e.next.do(ctx, jobID, op); err != nil && len(op.got) == 0 {
		return nil, err
	}
	// Claims committed by an earlier round stand, whatever became of a
	// later one: they are the caller's, and answered.
	return op.got, nil
}

// roundSeats is the most claims one round of job may make: as many as
// MaxClaimNext, or, on a backend whose transactions hold a bounded number
// of keys, as many as fit beside the job's slot records.
func (e *engine) roundSeats(job string) int {
	if e.maxKeys <= 0 {
		return backends.MaxClaimNext
	}
	return max(1, (e.maxKeys-e.roundSlotKeys(job))/opKeys(e.jobInputs(job)))
}

// takeNext takes from the front of a job's queue as many calls as one
// transaction may serve: at most maxBatch calls, whose seats fit in one
// round and, past the first call's, in maxBatch.
func (e *engine) takeNext(job string, queue []*nextOp) (batch, rest []*nextOp) {
	if len(queue) == 0 {
		return nil, queue
	}
	limit := min(e.roundSeats(job), max(e.maxBatch, queue[0].seatsLeft()))
	n, seats := 0, 0
	for n < len(queue) && n < e.maxBatch && (n == 0 || seats+queue[n].seatsLeft() <= limit) {
		seats += queue[n].seatsLeft()
		n++
	}
	batch = slices.Clone(queue[:n])
	clear(queue[:n])
	return batch, queue[n:]
}

// runNext serves one round of the calls of ops, all for one job, in one
// transaction (see the top of this file). It leaves pending the calls it
// does not answer.
func (e *engine) runNext(ctx context.Context, ops []*nextOp) error {
	err := e.runRound(ctx, ops)
	for _, op := range ops {
		if err == nil {
			op.got = append(op.got, op.claims...)
		}
		op.claims = nil
	}
	return err
}

// runRound is runNext's transaction; the claims it makes are the ops'
// once it commits.
func (e *engine) runRound(ctx context.Context, ops []*nextOp) error {
	answer := func(err error, pending bool) {
		for _, op := range ops {
			op.claims, op.err, op.pending = nil, err, pending
		}
	}
	return e.withCatalog(ctx, func(cat *opCatalog) error {
		answer(nil, false)
		job, err := cat.Job(ops[0].job)
		if err != nil {
			answer(err, false)
			return err // withCatalog asks a fresh catalog before it believes it
		}
		if job.Paused {
			return nil
		}
		return e.update(ctx, cat, func(tx backends.Tx) error {
			answer(nil, true)
			seats := seatsOf(ops, e.roundSeats(job.ID))
			cands, err := tx.NextCandidates(ctx, job.ID, len(seats), e.clock.Now())
			if err != nil || len(cands) == 0 {
				answer(nil, false)
				return err
			}
			return e.claimRound(ctx, tx, cat.Catalog, job, cands, seats)
		})
	})
}

// seatsOf lists the claims the calls of ops ask for still, in order (a
// call asking for n more has n seats in a row), the first limit of them
// (the rest wait for the next round).
func seatsOf(ops []*nextOp, limit int) []*nextOp {
	seats := make([]*nextOp, 0, len(ops))
	for _, op := range ops {
		for range op.seatsLeft() {
			if len(seats) == limit && len(seats) > 0 {
				return seats
			}
			seats = append(seats, op)
		}
	}
	return seats
}
