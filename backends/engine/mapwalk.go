package engine

import (
	"context"
	"iter"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// readyWalk walks the expected chunks of one dataset in order, reading as
// a hint whether each is READY, a batch at a time: a batch grows from
// walkFirst dataids (a walk usually stops at once, at a chunk not READY
// yet) to walkMax (one that goes on reads few, large batches), so that a
// walk holds at most walkMax dataids whatever its length.
type readyWalk struct {
	tx      backends.Tx
	cat     *backends.Catalog
	dataset string
	job     string // the dataset's producer ("" for a source): its OUTPUT rows are the chunks'
	def     partition.Def
	own     func(string) bool // chunks the walk passes without reading: the transaction's own
}

const (
	walkFirst = 64
	walkMax   = 4096
)

// firstGap walks the expected dataids from lo up to hi (inclusive), or from
// hi down to lo, and returns the first whose chunk is not READY, passing
// (and appending to own) those the transaction writes itself; "" when
// there is none.
func (w readyWalk) firstGap(ctx context.Context, lo, hi string, up bool, own *[]string) (string, error) {
	var seq iter.Seq[string]
	var err error
	if up {
		seq, err = w.def.Range(lo, hi)
	} else {
		seq, err = w.def.RangeDown(lo, hi)
	}
	if err != nil {
		return "", backends.InvalidArgument("dataset %q: %s", w.dataset, err.Error())
	}
	batch := make([]string, 0, walkFirst)
	gap, size := "", walkFirst
	look := func() (bool, error) {
		g, err := w.gapIn(ctx, batch, up, own)
		gap, batch, size = g, batch[:0], min(2*size, walkMax)
		return g != "" || err != nil, err
	}
	for id := range seq {
		if batch = append(batch, id); len(batch) < size {
			continue
		}
		if stop, err := look(); stop {
			return gap, err
		}
	}
	if len(batch) > 0 {
		_, err = look()
	}
	return gap, err
}

// gapIn returns the first of ids, in walk order, whose chunk is not READY
// and not the transaction's own.
func (w readyWalk) gapIn(ctx context.Context, ids []string, up bool, own *[]string) (string, error) {
	ready, err := w.readyOf(ctx, ids, up)
	if err != nil {
		return "", err
	}
	for i, id := range ids {
		switch {
		case w.own(id):
			*own = append(*own, id)
		case !ready[i]:
			return id, nil
		}
	}
	return "", nil
}

// readyOf tells, for each of ids (in walk order), whether its chunk is
// READY: in one ordered read where the transaction can (ReadyLister), else
// by key (PeekRows).
func (w readyWalk) readyOf(ctx context.Context, ids []string, up bool) ([]bool, error) {
	ready := make([]bool, len(ids))
	if l, ok := w.tx.(backends.ReadyLister); ok {
		lo, hi := ids[0], ids[len(ids)-1]
		if !up {
			lo, hi = hi, lo
		}
		found, err := l.ReadyBetween(ctx, w.dataset, w.job, lo, hi)
		if err != nil {
			return nil, err
		}
		set := make(map[string]bool, len(found))
		for _, id := range found {
			set[id] = true
		}
		for i, id := range ids {
			ready[i] = set[id]
		}
		return ready, nil
	}
	keys := make([]backends.RowKey, len(ids))
	for i, id := range ids {
		keys[i] = chunkOutputKey(w.cat, w.dataset, id)
	}
	rows, err := w.tx.PeekRows(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		ready[i] = backends.StatusOf(r) == backends.StatusReady
	}
	return ready, nil
}
