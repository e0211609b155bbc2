package engine

import (
	"github.com/chunklock/chunklock/backends"

	"context"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// LatestReady: where each dataset's data is (the dashboard opens there),
// found in its most recent windows of expected dataids, in batches where
// the backend reads several spans at once.

// maxDataID is above every valid dataid in shortlex order.
var maxDataID = strings.Repeat("z", backends.MaxDataIDLen)

func (e *engine) LatestReady(ctx context.Context, datasets []string) ([]string, error) {
	out := make([]string, len(datasets))
	defs, producers, tops := make([]*partition.Def, len(datasets)), make([]string, len(datasets)), make([]string, len(datasets))
	now := e.clock.Now()
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		for i, ds := range datasets {
			d, err := cat.Dataset(ds)
			if err != nil {
				return err
			}
			defs[i], producers[i], tops[i] = d.Partitions, cat.OutputJob(ds), maxDataID
			if d.Partitions != nil {
				if last, ok := d.Partitions.DueBefore(now); ok {
					tops[i] = last
				} else if d.Partitions.Windowed() {
					tops[i] = "" // nothing due: nothing to find
				}
			}
		}
		return e.update(ctx, cat, func(backends.Tx) error { return nil })
	})
	if err != nil {
		return nil, err
	}
	found, err := e.latestReadyBatch(ctx, datasets, producers, defs, tops, out)
	if err != nil {
		return nil, err
	}
	var rest []int // the datasets left to the transaction's finder
	for i, ds := range datasets {
		if tops[i] == "" || found[i] {
			continue
		}
		id, found, err := e.latestReadyRecent(ctx, ds, producers[i], defs[i], tops[i])
		if err != nil {
			return nil, err
		}
		if found {
			out[i] = id
			continue
		}
		rest = append(rest, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	return out, e.b.Update(ctx, func(tx backends.Tx) error {
		for _, i := range rest {
			id, err := e.latestReadyIn(ctx, tx, datasets[i], producers[i], tops[i])
			if err != nil {
				return err
			}
			out[i] = id
		}
		return nil
	})
}

// latestReadyBatch looks, on a backend that batches reads, in the recent
// windows of every time definition (latestReadyRecent's), one batch per
// window for all of them, and records in out what it finds; settled tells
// which datasets it answered.
func (e *engine) latestReadyBatch(ctx context.Context, datasets, producers []string, defs []*partition.Def, tops, out []string) ([]bool, error) {
	settled := make([]bool, len(datasets))
	b, ok := e.b.(backends.OutputStatusBatcher)
	if !ok {
		return settled, nil
	}
	to := slices.Clone(tops)
	for _, n := range latestWindows {
		var spans []backends.StatusSpan
		var which []int
		for i, d := range defs {
			if to[i] != "" && !settled[i] && d != nil && d.Kind.IsTime() {
				spans = append(spans, backends.StatusSpan{Dataset: datasets[i], Job: producers[i], From: windowBack(*d, to[i], n), To: to[i], Limit: 2 * n})
				which = append(which, i)
			}
		}
		if len(spans) == 0 {
			break
		}
		ids, sts, err := b.OutputStatusesBatch(ctx, spans)
		if err != nil {
			return nil, err
		}
		for k, i := range which {
			id, done, before := newestReady(*defs[i], spans[k], ids[k], sts[k])
			out[i], settled[i], to[i] = id, done, before
		}
	}
	return settled, nil
}

// newestReady reads a window's rows: the newest READY dataid in it (done),
// or done and "" when the window reached the definition's start, or where
// the next window back ends. A window with more rows than it has dataids
// (rows outside the definition) settles nothing: before is "".
func newestReady(def partition.Def, span backends.StatusSpan, ids []string, sts []backends.Status) (id string, done bool, before string) {
	if len(ids) >= span.Limit {
		return "", false, ""
	}
	for k := len(ids) - 1; k >= 0; k-- {
		if sts[k] == backends.StatusReady && def.Contains(ids[k]) {
			return ids[k], true, ""
		}
	}
	prev, ok := def.Prev(span.From)
	if span.From == def.Start || !ok {
		return "", true, "" // the whole definition, and nothing READY
	}
	return "", false, prev
}

// latestWindows are the windows of expected dataids latestReadyRecent
// reads back from the last due one, each further back than the one before.
var latestWindows = []int{32, 1024, 8192}

// latestReadyRecent looks for the newest READY chunk of a time definition
// in its most recent windows of expected dataids (narrow ordered reads,
// cheap on every store however long the history). found is false when it
// could not tell: no OutputStatusReader, no time definition, or nothing
// READY in the recent windows.
func (e *engine) latestReadyRecent(ctx context.Context, dataset, producer string, def *partition.Def, top string) (id string, found bool, err error) {
	r, ok := e.b.(backends.OutputStatusReader)
	if !ok || def == nil || !def.Kind.IsTime() {
		return "", false, nil
	}
	to := top
	for _, n := range latestWindows {
		span := backends.StatusSpan{Dataset: dataset, Job: producer, From: windowBack(*def, to, n), To: to, Limit: 2 * n}
		ids, sts, err := r.OutputStatuses(ctx, dataset, producer, span.From, span.To, span.Limit)
		if err != nil {
			return "", false, err
		}
		if id, done, before := newestReady(*def, span, ids, sts); done || before == "" {
			return id, done, nil
		} else {
			to = before
		}
	}
	return "", false, nil
}

// windowBack is about the n-th expected dataid back from id (id the first),
// by arithmetic on the clock as countFrom does, never before the start.
func windowBack(def partition.Def, id string, n int) string {
	start, end, err := def.Window(id)
	if err != nil {
		return def.Start
	}
	back := def
	back.Lag = 0
	first, ok := back.DueBefore(start.Add(-time.Duration(n-1) * end.Sub(start)))
	if !ok {
		return def.Start
	}
	if next, ok := def.Next(first); ok {
		return next
	}
	return def.Start
}

// latestReadyIn finds the newest READY chunk of dataset up to top, in one
// ordered read (Tx.LatestReady).
func (e *engine) latestReadyIn(ctx context.Context, tx backends.Tx, dataset, producer, top string) (string, error) {
	id, _, err := tx.LatestReady(ctx, dataset, producer, "", top)
	return id, err
}
