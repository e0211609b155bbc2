// Package storecopy copies a whole chunklock store into an empty one, of
// any backend (backends.Dumper), and verifies the copy: every kind's
// count, and a checksum of every item read back from the target.
//
// Both stores must be stopped (no server running on them). Events are
// numbered anew by the target, in the same order; records that point
// into the event log (a webhook's cursor) are moved to the same place
// through Options.RemapRecord. Resource locks get new ids, records new
// versions, candidates new handles: these numbers mean nothing outside
// their store, and the checksums leave them out. Times are compared to the
// microsecond, the precision of PostgreSQL.
package storecopy

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/chunklock/chunklock/backends"
)

// Options tune a copy.
type Options struct {
	// Batch is how many items one Load takes (default 500).
	Batch int
	// Progress, when set, is told every Batch items how many of kind were
	// copied, and once more when the kind is done (done true).
	Progress func(kind backends.DumpKind, n int64, done bool)
	// RemapRecord, when set, rewrites a record whose value names an event
	// by its Seq: seq maps a source Seq to the target Seq of the same
	// event (of the last event at or before it). It returns the value to
	// store.
	RemapRecord func(key string, value []byte, seq func(int64) int64) []byte
}

// KindReport is what the copy of one kind did and found.
type KindReport struct {
	Kind backends.DumpKind
	// Source and Target count the items dumped from each store.
	Source, Target int64
	// Sum is the checksum of every item (the same on both sides); fences
	// are compared as floors, the next fence of every chunk.
	Sum string
}

// ErrNotEmpty refuses a target that holds something already.
var ErrNotEmpty = errors.New("the target store is not empty: store copy writes only into an empty store")

// Copy copies every kind of from into to, then verifies to against what
// was copied. A failed verification is an error naming the kind.
func Copy(ctx context.Context, from, to backends.Dumper, opts Options) ([]KindReport, error) {
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	empty, err := to.Empty(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the target: %w", err)
	}
	if !empty {
		return nil, ErrNotEmpty
	}
	c := &copier{from: from, to: to, opts: opts, sums: map[backends.DumpKind]*sum{}}
	for _, kind := range backends.DumpKinds {
		if err := c.copyKind(ctx, kind); err != nil {
			return nil, fmt.Errorf("copying %s: %w", kind, err)
		}
	}
	if err := to.FinishLoad(ctx); err != nil {
		return nil, fmt.Errorf("finishing the load: %w", err)
	}
	return c.verify(ctx)
}

type copier struct {
	from, to backends.Dumper
	opts     Options
	sums     map[backends.DumpKind]*sum
	// oldSeqs and newSeqs are the Seqs of the events in the source and in
	// the target, in the same (Seq) order.
	oldSeqs, newSeqs []int64
	fences           fenceFloors
}

// copyKind streams one kind from the source into the target.
func (c *copier) copyKind(ctx context.Context, kind backends.DumpKind) error {
	s := newSum(kind)
	c.sums[kind] = s
	batch := make([]backends.DumpItem, 0, c.opts.Batch)
	var n int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.to.Load(ctx, kind, batch); err != nil {
			return err
		}
		n += int64(len(batch))
		batch = batch[:0]
		if c.opts.Progress != nil {
			c.opts.Progress(kind, n, false)
		}
		return nil
	}
	err := c.from.Dump(ctx, kind, func(it backends.DumpItem) error {
		switch {
		case it.Event != nil:
			c.oldSeqs = append(c.oldSeqs, it.Event.Seq)
		case it.Record != nil && c.opts.RemapRecord != nil:
			r := *it.Record
			r.Value = c.opts.RemapRecord(r.Key, r.Value, c.remapSeq)
			it.Record = &r
		case it.Fence != nil:
			c.fences.add(*it.Fence)
			s.count++ // fences are verified as floors, not by checksum
			batch = append(batch, it)
			if len(batch) == cap(batch) {
				return flush()
			}
			return nil
		}
		if err := s.add(it); err != nil {
			return err
		}
		batch = append(batch, it)
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if c.opts.Progress != nil {
		c.opts.Progress(kind, n, true)
	}
	if kind == backends.DumpEvents {
		return c.readNewSeqs(ctx)
	}
	return nil
}

// readNewSeqs reads the Seqs the target gave the events.
func (c *copier) readNewSeqs(ctx context.Context) error {
	c.newSeqs = c.newSeqs[:0]
	err := c.to.Dump(ctx, backends.DumpEvents, func(it backends.DumpItem) error {
		c.newSeqs = append(c.newSeqs, it.Event.Seq)
		return nil
	})
	if err != nil {
		return err
	}
	if len(c.newSeqs) != len(c.oldSeqs) {
		return fmt.Errorf("the target holds %d events after the copy of %d", len(c.newSeqs), len(c.oldSeqs))
	}
	return nil
}

// remapSeq maps a source Seq to the target Seq of the last event at or
// before it (0 before the first).
func (c *copier) remapSeq(old int64) int64 {
	i := sort.Search(len(c.oldSeqs), func(i int) bool { return c.oldSeqs[i] > old })
	if i == 0 {
		return 0
	}
	return c.newSeqs[i-1]
}

// verify dumps every kind of the target and compares it with the source.
func (c *copier) verify(ctx context.Context) ([]KindReport, error) {
	var out []KindReport
	for _, kind := range backends.DumpKinds {
		src := c.sums[kind]
		got := newSum(kind)
		var floors fenceFloors
		err := c.to.Dump(ctx, kind, func(it backends.DumpItem) error {
			if it.Fence != nil {
				floors.add(*it.Fence)
				got.count++
				return nil
			}
			return got.add(it)
		})
		if err != nil {
			return out, fmt.Errorf("verifying %s: %w", kind, err)
		}
		r := KindReport{Kind: kind, Source: src.count, Target: got.count, Sum: src.String()}
		if kind == backends.DumpFences {
			r.Sum = "(floors: every chunk's next fence is at least the source's)"
		}
		out = append(out, r)
		switch {
		case kind == backends.DumpFences:
			if err := floors.covers(&c.fences); err != nil {
				return out, fmt.Errorf("verifying fences: %w", err)
			}
		case kind == backends.DumpBackfills:
			// Loading a backfill may finish it (queue its candidates).
		case kind == backends.DumpCandidates && c.sums[backends.DumpBackfills].count > 0:
			if got.count < src.count {
				return out, fmt.Errorf("verifying candidates: the source has %d, the target %d", src.count, got.count)
			}
		case got.count != src.count:
			return out, fmt.Errorf("verifying %s: the source has %d, the target %d", kind, src.count, got.count)
		case got.String() != src.String():
			return out, fmt.Errorf("verifying %s: the checksums differ (source %s, target %s): an item changed on the way", kind, src, got)
		}
	}
	return out, nil
}
