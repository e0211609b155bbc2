package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// PruneEvents sweeps the event log from p.After in Seq order, a page of
// PruneBatch events at a time (at most PrunePages pages a call), and
// removes the events of each page older than their retention, in one
// DeleteEvents call per page: short transactions of their own, apart from
// every claim (no status row is read or locked). The sweep stops at the
// first event too new for the shortest retention in effect (events are
// numbered in commit order, so the rest are newer still) and at the first
// event a consumer has not looked at (p.Hold). Events kept on the way
// (a dataset keeping its events longer) are swept past; the sweep starts
// again when it stops (Next 0): at the oldest event, or past the events
// this engine found pruned or kept for ever up to there (pruneFloor),
// while no retention changed.
func (e *engine) PruneEvents(ctx context.Context, p backends.PrunePolicy) (backends.PruneResult, error) {
	var res backends.PruneResult
	if p.Events < 0 {
		return res, backends.InvalidArgument("the retention of events is at least 0, got %s", p.Events)
	}
	cat, err := e.loadCatalog(ctx, false) // fresh: a retention just made longer is never missed
	if err != nil {
		return res, err
	}
	shortest := p.Events
	var retentions strings.Builder
	fmt.Fprintf(&retentions, "%d", p.Events)
	for _, d := range cat.Datasets.All() {
		r := backends.RetentionOf(d, true, p.Events)
		if r > 0 && (shortest == 0 || r < shortest) {
			shortest = r
		}
		if d.Retention != nil {
			fmt.Fprintf(&retentions, " %s=%d", d.ID, r)
		}
	}
	if shortest == 0 {
		return res, nil // nothing has a retention
	}
	now := e.clock.Now()
	after := p.After
	floor, _ := e.pruneFloor.Load().(pruneFloor)
	if floor.retentions != retentions.String() {
		floor = pruneFloor{retentions: retentions.String()}
	}
	if after == 0 {
		// Now and then a sweep starts at the oldest event all the same:
		// an event a store could not delete when asked (etcd may leave one
		// its mover was moving), and anything else left behind the floor,
		// is pruned then.
		if e.pruneSweeps.Add(1)%fullSweepEvery != 0 {
			after = floor.seq
		}
	}
	// Whether every event up to after was pruned or is kept for ever: the
	// floor moves on with the events of this call while it stays so.
	settled := after == floor.seq
	defer func() {
		e.pruneFloor.Store(floor)
	}()
	list := e.b.ListEvents
	if l, ok := e.b.(backends.FinalEventLister); ok {
		list = l.ListFinalEvents // old events are final: never wait for new ones
	}
	for range backends.PrunePages {
		page, err := list(ctx, backends.EventFilter{After: after, First: backends.PruneBatch})
		if err != nil {
			return res, err
		}
		var drop []backends.Event
		pageFloor := floor.seq
		stop := !page.HasNextPage
		for _, ev := range page.Events {
			if (p.Hold && ev.Seq > p.KeepAfter) || !ev.Time.Before(now.Add(-shortest)) {
				stop = true
				break
			}
			res.Scanned++
			d, known := cat.Datasets.Lookup(ev.Dataset)
			r := backends.RetentionOf(d, known, p.Events)
			if r > 0 && ev.Time.Before(now.Add(-r)) {
				drop = append(drop, ev)
			} else if r > 0 {
				settled = false // kept for now, pruned later
			}
			after = ev.Seq
			if settled {
				pageFloor = ev.Seq
			}
		}
		if len(drop) > 0 {
			n, err := e.b.DeleteEvents(ctx, drop)
			if err != nil {
				return res, err
			}
			res.Pruned += n
			if n < len(drop) {
				// Some were left (or another server pruned them first):
				// the floor stays before this page.
				pageFloor, settled = floor.seq, false
			}
		}
		floor.seq = pageFloor
		if stop {
			return res, nil
		}
	}
	res.Next = after
	return res, nil
}

// pruneFloor is where PruneEvents starts a sweep: every event up to seq
// was pruned or is kept for ever (its retention 0) under the retentions
// of that time (the server's and each dataset's own, written out); a
// change of one starts again at the oldest event.
type pruneFloor struct {
	retentions string
	seq        int64
}

// fullSweepEvery: one sweep in so many starts at the oldest event.
const fullSweepEvery = 16
