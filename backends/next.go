package backends

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
)

// Concurrent findNext calls for one job are served, on a backend that
// allows it (Batcher; and with a Tx that is a CandidateBatcher, several
// claims per transaction): a leader reserves as many candidates as there are callers
// waiting, locks their chunks in ascending (dataid, dataset) order, reads
// all their rows at once and hands the claimable ones out in queue order
// (resubmitted chunks first, then by dataid), one per caller. A caller left
// without a claim because its candidates were stale hints (dropped, as a
// single findNext drops them) waits for the next round; a round that finds
// the queue empty answers every caller left with nil. Each claim is still
// all or nothing and follows every rule of a single findNext; a failure of
// the transaction fails every caller in it.

// CandidateBatcher is implemented by the Tx of a Batcher backend that can
// reserve several candidates at once.
type CandidateBatcher interface {
	// NextCandidates returns up to n of the job's first candidates, in
	// NextCandidate order, that no concurrent transaction is looking at,
	// and reserves them for this transaction.
	NextCandidates(ctx context.Context, job string, n int) ([]Candidate, error)
}

// nextOp is one findNext call waiting to be served.
type nextOp struct {
	ctx      context.Context // the caller's: its actor names the events
	job      string
	executor string
	claim    *Claim
	err      error
	served   bool
	done     chan struct{}
}

// nextQueues queues the findNext calls of one engine, by job: each job has
// its own queue and up to maxLeaders batches in flight.
type nextQueues struct {
	mu   sync.Mutex
	jobs map[string]*nextQueue
}

type nextQueue struct {
	queue   []*nextOp
	leaders int
}

// findNextBatched queues a findNext call and serves it, and others, in
// batches.
func (e *engine) findNextBatched(ctx context.Context, jobID, executor string) (*Claim, error) {
	op := &nextOp{ctx: ctx, job: jobID, executor: executor, done: make(chan struct{})}
	qs := &e.next
	qs.mu.Lock()
	if qs.jobs == nil {
		qs.jobs = map[string]*nextQueue{}
	}
	q := qs.jobs[jobID]
	if q == nil {
		q = &nextQueue{}
		qs.jobs[jobID] = q
	}
	q.queue = append(q.queue, op)
	lead := q.leaders < maxLeaders
	if lead {
		q.leaders++
	}
	qs.mu.Unlock()
	if lead {
		e.leadNext(jobID, op)
	}
	select {
	case <-op.done:
		return op.claim, op.err
	case <-ctx.Done():
		if isClosed(op.done) { // served meanwhile: that answer stands
			return op.claim, op.err
		}
	}
	qs.mu.Lock()
	i := slices.Index(q.queue, op)
	if i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
	}
	qs.mu.Unlock()
	if i >= 0 {
		return nil, Unavailable(ctx.Err(), "request cancelled or timed out before it was served; nothing changed")
	}
	return nil, Unavailable(ctx.Err(), "request cancelled or timed out while it was being served; a chunk may have been claimed for it and will be released when its lease expires")
}

// leadNext serves the queued calls for job, a batch at a time, until its
// queue is empty, or, for a caller's own call (mine not nil), until mine is
// served: then a new goroutine takes over if calls are left.
func (e *engine) leadNext(job string, mine *nextOp) {
	qs := &e.next
	for {
		qs.mu.Lock()
		q := qs.jobs[job]
		if mine != nil && isClosed(mine.done) && len(q.queue) > 0 {
			qs.mu.Unlock()
			go e.leadNext(job, nil)
			return
		}
		var batch []*nextOp
		if mine == nil || !isClosed(mine.done) {
			n := e.maxBatch
			if keys := opKeys(e.jobInputs(job)); e.maxKeys > 0 {
				n = max(1, min(n, e.maxKeys/keys))
			}
			batch = q.take(n)
		}
		if len(batch) == 0 {
			q.leaders--
			if q.leaders == 0 && len(q.queue) == 0 {
				delete(qs.jobs, job)
			}
			qs.mu.Unlock()
			return
		}
		qs.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err := e.runNext(ctx, batch)
		cancel()
		var again []*nextOp
		for _, op := range batch {
			switch {
			case err != nil:
				op.claim, op.err = nil, err
			case !op.served:
				again = append(again, op)
				continue
			}
			close(op.done)
		}
		if len(again) > 0 {
			qs.mu.Lock()
			q := qs.jobs[job]
			q.queue = append(again, q.queue...)
			qs.mu.Unlock()
		}
	}
}

// take removes up to n calls from the front of the queue. The caller holds
// the queues' lock.
func (q *nextQueue) take(n int) []*nextOp {
	n = min(n, len(q.queue))
	batch := slices.Clone(q.queue[:n])
	clear(q.queue[:n])
	q.queue = q.queue[n:]
	return batch
}

// runNext serves the calls of ops, all for one job, in one transaction
// (see the top of this file). It marks the calls it answers served.
func (e *engine) runNext(ctx context.Context, ops []*nextOp) error {
	reset := func() {
		for _, op := range ops {
			op.claim, op.err, op.served = nil, nil, false
		}
	}
	answer := func(claim *Claim, err error) {
		for _, op := range ops {
			op.claim, op.err, op.served = claim, err, true
		}
	}
	return e.withCatalog(ctx, func(cat *opCatalog) error {
		reset()
		job, err := cat.Job(ops[0].job)
		if err != nil {
			answer(nil, err)
			return err // withCatalog asks a fresh catalog before it believes it
		}
		if job.Paused {
			answer(nil, nil)
			return nil
		}
		return e.update(ctx, cat, func(tx Tx) error {
			reset()
			cands, err := nextCandidates(ctx, tx, job.ID, len(ops))
			if err != nil {
				return err
			}
			if len(cands) == 0 {
				answer(nil, nil)
				return nil
			}
			// One candidate per dataid: a duplicate hint is dropped, as a
			// single findNext would drop it once the first is claimed.
			var distinct []Candidate
			seen := map[string]bool{}
			for _, c := range cands {
				if seen[c.DataID] {
					if err := tx.DropCandidate(ctx, c); err != nil {
						return err
					}
					continue
				}
				seen[c.DataID] = true
				distinct = append(distinct, c)
			}
			byID := slices.Clone(distinct)
			slices.SortFunc(byID, func(a, b Candidate) int { return cmp.Compare(a.DataID, b.DataID) })
			var keys []RowKey
			for _, c := range byID {
				if err := tx.LockChunks(ctx, c.DataID, []string{job.Output}, job.Inputs); err != nil {
					return err
				}
				keys = append(keys, claimKeys(cat.Catalog, job, c.DataID)...)
			}
			rows, err := tx.GetRows(ctx, keys)
			if err != nil {
				return err
			}
			states := make(map[string]ClaimState, len(byID))
			for _, c := range byID {
				n := 1 + 2*len(job.Inputs)
				states[c.DataID] = claimStateOf(job, c.DataID, rows[:n])
				rows = rows[n:]
			}
			next := 0 // the next call to serve
			for _, c := range distinct {
				st := states[c.DataID]
				out := statusOf(st.Output)
				if isResubmit := out == StatusResubmit; c.Resubmit != isResubmit && FreeForProducers(out) {
					// Back in its true place in the queue (see findNext).
					if err := tx.DropCandidate(ctx, c); err != nil {
						return err
					}
					if err := tx.AddCandidate(ctx, Candidate{Job: job.ID, DataID: c.DataID, Resubmit: isResubmit}); err != nil {
						return err
					}
					continue
				}
				if next < len(ops) {
					op := ops[next]
					claim, err := e.claimState(WithActor(ctx, ActorFrom(op.ctx)), tx, cat.Catalog, st, op.executor, ModeNext)
					if err != nil && !errors.Is(err, ErrLocked) {
						return err
					}
					if err == nil {
						op.claim, op.served = claim, true
						next++
					}
				}
				if err := tx.DropCandidate(ctx, c); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// nextCandidates reserves up to n candidates: all at once with a
// CandidateBatcher, otherwise the first one only.
func nextCandidates(ctx context.Context, tx Tx, job string, n int) ([]Candidate, error) {
	if cb, ok := tx.(CandidateBatcher); ok {
		return cb.NextCandidates(ctx, job, n)
	}
	c, ok, err := tx.NextCandidate(ctx, job)
	if err != nil || !ok {
		return nil, err
	}
	return []Candidate{c}, nil
}
