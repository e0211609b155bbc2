package backends

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Operations on a live claim (heartbeat, complete, fail, release) run in
// one transaction each, or, on a backend that allows it (Batcher), several
// at once: concurrent calls queue, and a leader serves up to MaxBatch of
// them in one transaction, which takes their chunk locks in ascending
// (dataid, dataset) order, reads all their rows in one call and commits all
// their writes together. Each operation is still all or nothing: one whose
// claim is no longer live writes nothing and gets STALE_CLAIM while the
// others go on; a failure of the transaction itself fails every operation
// in it. Two operations on the same chunk never share a transaction.

// Batcher is implemented by backends whose transactions may serve several
// operations at once. Such a transaction calls LockChunks once per dataid,
// in ascending dataid order, before it reads any of those chunks; a backend
// that locks must accept that (locks taken in (dataid, dataset) order, by
// every transaction, cannot deadlock).
type Batcher interface {
	// MaxBatch is the most operations one transaction may serve; below 2,
	// operations are never combined.
	MaxBatch() int
}

// KeyBudget is implemented by Batcher backends whose transactions hold a
// bounded number of keys (etcd: --max-txn-ops). A batch then serves only
// as many operations as fit: an operation of a job with k inputs counts
// opKeys(k) keys. An operation that does not fit alone is served alone.
type KeyBudget interface {
	// MaxBatchKeys is the most keys one batched transaction may hold.
	MaxBatchKeys() int
}

// opKeys bounds the keys one claim or live-claim operation of a job with
// inputs inputs reads or writes: its OUTPUT row, live-claim index entry,
// fence and queue entry, and per input the input chunk's OUTPUT row and
// the job's INPUT row.
func opKeys(inputs int) int { return 4 + 2*inputs }

// batchFits tells whether an operation costing keys more keys fits in a
// batch that holds used keys already (always true for an empty batch).
func (e *engine) batchFits(used, keys int) bool {
	return used == 0 || e.maxKeys <= 0 || used+keys <= e.maxKeys
}

// jobInputs is the number of inputs of job in the cached catalog (0 when
// unknown: the operation then fails before it reads anything).
func (e *engine) jobInputs(job string) int {
	if c := e.cat.Load(); c != nil {
		if j, ok := c.cat.Jobs.Lookup(job); ok {
			return len(j.Inputs)
		}
	}
	return 0
}

// liveFn makes an operation's writes on a live claim. ctx carries the
// operation's actor; tx, the (possibly shared) transaction.
type liveFn func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error

// liveOp is one operation on a live claim waiting to be served.
type liveOp struct {
	ctx context.Context // the caller's: its actor names the events
	// ending is how the operation ends the claim ("" for a heartbeat): a
	// repeat of the ending that already ended it answers as the first did.
	ending Ending
	token  string
	key    RowKey
	fence  int64
	fn     liveFn
	err    error
	done   chan struct{}
}

// combiner queues the live-claim operations of one engine.
type combiner struct {
	mu      sync.Mutex
	queue   []*liveOp
	leaders int
}

const (
	// maxLeaders bounds the batches in flight at once, per findNext job
	// queue and for the live-claim operations. One batch at a time lets the
	// calls arriving meanwhile gather into the next, larger batch: measured
	// on 2 cores, 1 gave more cycles/s and less CPU per cycle than 2 or 4 on
	// both backends (BENCHMARKS.md, "Batches in flight"). The price: a slow
	// batch holds up the calls queued behind it, for at most batchTimeout.
	maxLeaders = 1
	// batchTimeout bounds one batch's transaction (its callers may give up
	// sooner; the batch goes on for the others).
	batchTimeout = time.Minute
)

// withLiveClaim runs fn in a transaction holding the live claim named by
// token, with the claim's OUTPUT row and INPUT rows loaded. For an
// operation that ends the claim (how not empty), a claim that the same
// operation ended already answers nil and writes nothing.
func (e *engine) withLiveClaim(ctx context.Context, token string, how Ending, fn liveFn) error {
	key, fence, err := ParseToken(token)
	if err != nil {
		return err
	}
	op := &liveOp{ctx: ctx, ending: how, token: token, key: key, fence: fence, fn: fn}
	if e.maxBatch < 2 {
		return e.runLive(ctx, []*liveOp{op}, false)
	}
	op.done = make(chan struct{})
	c := &e.live
	c.mu.Lock()
	c.queue = append(c.queue, op)
	lead := c.leaders < maxLeaders
	if lead {
		c.leaders++
	}
	c.mu.Unlock()
	if lead {
		// Serve a batch with this operation in it right here, and leave
		// any later ones to another goroutine.
		e.leadLive(op)
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		if isClosed(op.done) { // served meanwhile: that answer stands
			return op.err
		}
	}
	c.mu.Lock()
	i := slices.Index(c.queue, op)
	if i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
	}
	c.mu.Unlock()
	if i >= 0 {
		return Unavailable(ctx.Err(), "request cancelled or timed out before it was served; nothing changed")
	}
	return Unavailable(ctx.Err(), "request cancelled or timed out while it was being served; it may have taken effect")
}

// leadLive serves queued operations, a batch at a time, until the queue is
// empty, or, for a caller's own operation (mine not nil), until mine is
// served: then a new goroutine takes over if operations are left.
func (e *engine) leadLive(mine *liveOp) {
	c := &e.live
	for {
		c.mu.Lock()
		if mine != nil && isClosed(mine.done) && len(c.queue) > 0 {
			c.mu.Unlock()
			go e.leadLive(nil)
			return
		}
		var batch []*liveOp
		if mine == nil || !isClosed(mine.done) {
			batch = c.take(e)
		}
		if len(batch) == 0 {
			c.leaders--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err := e.runLive(ctx, batch, true)
		cancel()
		for _, op := range batch {
			if err != nil {
				op.err = err
			}
			close(op.done)
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// take removes up to e.maxBatch operations from the queue, in order, at
// most one per output chunk and within the backend's key budget. The
// caller holds c.mu.
func (c *combiner) take(e *engine) []*liveOp {
	var batch []*liveOp
	chunks := map[[2]string]bool{}
	rest := c.queue[:0]
	used := 0
	for _, op := range c.queue {
		chunk := [2]string{op.key.Dataset, op.key.DataID}
		keys := opKeys(e.jobInputs(op.key.Job))
		if len(batch) == e.maxBatch || chunks[chunk] || !e.batchFits(used, keys) {
			rest = append(rest, op)
			continue
		}
		chunks[chunk] = true
		used += keys
		batch = append(batch, op)
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	return batch
}

// runLive serves ops in one transaction. Alone (batch false), an operation
// whose claim is not live rolls the transaction back with its error; in a
// batch, it gets its error and writes nothing, and the others go on.
func (e *engine) runLive(ctx context.Context, ops []*liveOp, batch bool) error {
	return e.withCatalog(ctx, func(cat *opCatalog) error {
		active := make([]*liveOp, 0, len(ops))
		jobs := make(map[*liveOp]Job, len(ops))
		for _, op := range ops {
			op.err = nil
			job, ok := cat.Jobs.Lookup(op.key.Job)
			if !ok || job.Output != op.key.Dataset {
				op.err = StaleClaim("claim is no longer live: its job changed or was removed")
				continue
			}
			jobs[op] = job
			active = append(active, op)
		}
		if !batch && len(active) == 0 {
			return ops[0].err
		}
		if len(active) == 0 {
			return nil
		}
		slices.SortFunc(active, func(a, b *liveOp) int {
			return cmp.Or(cmp.Compare(a.key.DataID, b.key.DataID), cmp.Compare(a.key.Dataset, b.key.Dataset))
		})
		return e.update(ctx, cat, func(tx Tx) error {
			var keys []RowKey
			for _, op := range active {
				op.err = nil
				if err := tx.LockChunks(ctx, op.key.DataID, []string{op.key.Dataset}, nil); err != nil {
					return err
				}
				keys = append(keys, op.key)
				for _, in := range jobs[op].Inputs {
					keys = append(keys, RowKey{Dataset: in, DataID: op.key.DataID, Job: op.key.Job, Role: RoleInput})
				}
			}
			rows, err := tx.GetRows(ctx, keys)
			if err != nil {
				return err
			}
			now := e.clock.Now()
			for _, op := range active {
				job := jobs[op]
				mine := rows[:1+len(job.Inputs)]
				rows = rows[len(mine):]
				if err := CheckLive(mine[0], op.token, op.fence, now); err != nil {
					if op.ending != "" && EndedBy(op.ending, mine[0], op.token, op.fence) {
						continue // a repeat: the first call ended the claim
					}
					if !batch {
						return err
					}
					op.err = err
					continue
				}
				octx := ctx
				if batch {
					octx = WithActor(ctx, ActorFrom(op.ctx))
				}
				if err := op.fn(octx, tx, cat.Catalog, job, *mine[0], mine[1:], now); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
