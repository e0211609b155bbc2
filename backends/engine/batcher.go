package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Operations are served in batches: on a backend that allows it
// (Limits.MaxBatch), concurrent calls queue, and one of them, the leader,
// serves the queue a batch at a time, each batch in one transaction, while the
// others wait for their answer. One batch at a time lets the calls arriving
// meanwhile gather into the next, larger batch: measured on 2 cores, one
// leader gave more cycles/s and less CPU per cycle than 2 or 4 on both
// backends (BENCHMARKS.md, "Batches in flight"). The price: a slow batch holds
// up the calls queued behind it, for at most batchTimeout. A leader whose own
// call is answered hands the rest of the queue to a new goroutine. On a
// backend that does not batch (batch size 1), each call is served alone, in
// its caller's goroutine, by the same code.

// batchTimeout bounds one batch's transaction (its callers may give up
// sooner; the batch goes on for the others).
const batchTimeout = time.Minute

// call is what every queued operation carries.
type call struct {
	ctx context.Context // the caller's: its actor names the events
	err error
	// pending is set by a batch that left the call unanswered (findNext: its
	// candidates were stale hints): the call queues again, at the front.
	pending bool
	done    chan struct{}
}

func (c *call) base() *call { return c }

// batchOp is an operation type a batcher serves: a pointer to a struct
// embedding call.
type batchOp interface {
	comparable
	base() *call
}

// batcher serves operations of type T, queued by key (findNext: by job),
// each key with at most one batch in flight.
type batcher[T batchOp] struct {
	size int // the most operations per batch; below 2, each is served alone
	// take splits a key's queue into the next batch and the rest, keeping
	// the order of both; it returns a batch when the queue is not empty.
	take func(key string, queue []T) (batch, rest []T)
	// run serves batch in one transaction (or, when ops are left pending,
	// serves what it can); an error fails every operation in it.
	run func(ctx context.Context, batch []T) error
	// inFlight is the answer to a caller that gives up while its operation
	// is being served.
	inFlight string

	mu     sync.Mutex
	queues map[string]*opQueue[T]
}

type opQueue[T batchOp] struct {
	ops     []T
	leading bool // a goroutine serves this queue
}

// do serves op, alone or in a batch with others of the same key, and
// returns its error.
func (b *batcher[T]) do(ctx context.Context, key string, op T) error {
	c := op.base()
	c.ctx = ctx
	if b.size < 2 {
		for {
			c.err, c.pending = nil, false
			if err := b.run(ctx, []T{op}); err != nil {
				return err
			}
			if !c.pending {
				return c.err
			}
		}
	}
	c.done = make(chan struct{})
	if b.enqueue(key, op) {
		b.lead(key, c)
	}
	return b.wait(ctx, key, op)
}

// doMany serves ops, all of key, as do serves each, queued together so
// that they share transactions as far as the batch size allows, and
// returns their errors in order.
func (b *batcher[T]) doMany(ctx context.Context, key string, ops []T) []error {
	errs := make([]error, len(ops))
	if b.size < 2 || len(ops) == 0 {
		for i, op := range ops {
			errs[i] = b.do(ctx, key, op)
		}
		return errs
	}
	for _, op := range ops {
		c := op.base()
		c.ctx, c.done = ctx, make(chan struct{})
	}
	if b.enqueue(key, ops...) {
		// Led until the last is served: those before it are served by
		// then, or handed to the next leader.
		b.lead(key, ops[len(ops)-1].base())
	}
	for i, op := range ops {
		errs[i] = b.wait(ctx, key, op)
	}
	return errs
}

// wait waits for op, queued, to be served, or for its caller to give up.
func (b *batcher[T]) wait(ctx context.Context, key string, op T) error {
	c := op.base()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		if isClosed(c.done) { // served meanwhile: that answer stands
			return c.err
		}
	}
	if b.dequeue(key, op) {
		return backends.Unavailable(ctx.Err(), "request cancelled or timed out before it was served; nothing changed")
	}
	return backends.Unavailable(ctx.Err(), "request cancelled or timed out while it was being served; %s", b.inFlight)
}

// enqueue queues ops and tells whether their caller is to lead the queue.
func (b *batcher[T]) enqueue(key string, ops ...T) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[string]*opQueue[T]{}
	}
	q := b.queues[key]
	if q == nil {
		q = &opQueue[T]{}
		b.queues[key] = q
	}
	q.ops = append(q.ops, ops...)
	lead := !q.leading
	q.leading = true
	return lead
}

// dequeue removes op from its queue and tells whether it was still there.
func (b *batcher[T]) dequeue(key string, op T) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	if q == nil {
		return false
	}
	i := slices.Index(q.ops, op)
	if i >= 0 {
		q.ops = slices.Delete(q.ops, i, i+1)
	}
	return i >= 0
}

// lead serves the queue of key, a batch at a time, until it is empty, or,
// for a caller's own operation (mine not nil), until mine is served: then
// a new goroutine takes over if operations are left.
func (b *batcher[T]) lead(key string, mine *call) {
	for {
		batch, handOff := b.next(key, mine)
		if handOff {
			go b.lead(key, nil)
			return
		}
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		for _, op := range batch {
			c := op.base()
			c.err, c.pending = nil, false
		}
		err := b.run(ctx, batch)
		cancel()
		b.answer(key, batch, err)
	}
}

// next takes the leader's next batch: none when the queue is empty (the
// leader stops) or when mine is served (the leader stops, and hands off
// when operations are left).
func (b *batcher[T]) next(key string, mine *call) (batch []T, handOff bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	served := mine != nil && isClosed(mine.done)
	if served && len(q.ops) > 0 {
		return nil, true
	}
	if !served {
		batch, q.ops = b.take(key, q.ops)
	}
	if len(batch) == 0 {
		q.leading = false
		if len(q.ops) == 0 {
			delete(b.queues, key)
		}
	}
	return batch, false
}

// answer wakes the callers of a served batch; pending ones queue again,
// ahead of the others, unless their caller gave up meanwhile: nothing was
// done for those, and nothing will be.
func (b *batcher[T]) answer(key string, batch []T, err error) {
	var again []T
	for _, op := range batch {
		c := op.base()
		switch {
		case err != nil:
			c.err = err
		case c.pending && c.ctx.Err() != nil:
			c.err = backends.Unavailable(c.ctx.Err(), "request cancelled or timed out before it was served; nothing changed")
		case c.pending:
			again = append(again, op)
			continue
		}
		close(c.done)
	}
	if len(again) > 0 {
		b.mu.Lock()
		q := b.queues[key]
		q.ops = append(again, q.ops...)
		b.mu.Unlock()
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
