package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The range operations apply publish, resubmit or hold to every dataid of
// [from, to] (SPEC §3 "Ranges"): the dataset's expected dataids when it
// has a partition definition, else the dataids of its existing chunks.
// Chunks go through in ascending (shortlex) order, several per
// transaction on a backend that batches (Limits.MaxBatch, within its
// MaxBatchKeys), each all or nothing: a chunk the operation refuses
// (LOCKED, or NOT_FOUND for a resubmit of a chunk with no row) writes
// nothing and is listed as skipped, and the others go on. A failure of a
// transaction itself (the store unreachable, the request cancelled) ends
// the call with the transactions before it committed: calling again
// finishes the range. A chunk already as asked (READY for a publish,
// RESUBMIT with nothing more to invalidate for a resubmit, HOLD for the
// same reason for a hold) is not written again and counts as unchanged, so
// a second call over the same range changes, and counts, nothing twice.

// rangeOp is one range operation: which chunks it locks, what it costs in
// keys, and what it does to each chunk (its locks held, its writes on a
// chunkTx).
type rangeOp struct {
	name    string
	dataset string
	locks   func(cat *backends.Catalog) []string
	keys    func(cat *backends.Catalog) int
	apply   func(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataid string, now time.Time) error
	check   func(cat *backends.Catalog) error // refuses the whole call
	needDef bool                              // no definition: INVALID_ARGUMENT
	// cascades tells whether the operation invalidates through mappings
	// (resubmit with cascade over a mapped consumer): each chunk then has
	// a transaction of its own, which locks what the walk reaches
	// (lockCascade).
	cascades func(cat *backends.Catalog) bool
	// windows tells whether the chunks the operation makes READY complete
	// windows of mapped consumers: each chunk then has a transaction of
	// its own, which locks them (lockReady).
	windows func(cat *backends.Catalog) bool
	// slice keeps, of a dataset with dimensions, the tuples it selects.
	slice []partition.Slice
}

func (e *engine) PublishRange(ctx context.Context, dataset, from, to string) (backends.RangeResult, error) {
	return e.runRange(ctx, publishRangeOp(dataset), from, to)
}

// SlicedRange is PublishRange, ResubmitRange or HoldRange over the tuples
// of a slice (SPEC §10).
func (e *engine) SlicedRange(ctx context.Context, r backends.RangeRequest) (backends.RangeResult, error) {
	var op rangeOp
	switch r.Op {
	case backends.RangePublish:
		op = publishRangeOp(r.Dataset)
	case backends.RangeResubmit:
		op = resubmitRangeOp(r.Dataset, r.Cascade)
	case backends.RangeHold:
		op = holdRangeOp(r.Dataset, backends.CutReason(r.Reason))
	default:
		return backends.RangeResult{}, backends.InvalidArgument("unknown range operation %q: want publish, resubmit or hold", r.Op)
	}
	op.slice = r.Slice
	return e.runRange(ctx, op, r.From, r.To)
}

func publishRangeOp(dataset string) rangeOp {
	return rangeOp{name: "publishRange", dataset: dataset, needDef: true,
		locks: func(*backends.Catalog) []string { return []string{dataset} },
		keys:  func(cat *backends.Catalog) int { return 4 + 2*len(cat.Consumers(dataset)) },
		check: func(cat *backends.Catalog) error { return checkPublishable(cat, dataset, "") },
		apply: func(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataid string, now time.Time) error {
			_, err := publishChunk(ctx, tx, cat, dataset, dataid, now)
			return err
		},
		windows: func(cat *backends.Catalog) bool { return windowConsumers(cat, dataset) }}
}

func (e *engine) ResubmitRange(ctx context.Context, dataset, from, to string, cascade bool) (backends.RangeResult, error) {
	return e.runRange(ctx, resubmitRangeOp(dataset, cascade), from, to)
}

func resubmitRangeOp(dataset string, cascade bool) rangeOp {
	return rangeOp{name: "resubmitRange", dataset: dataset,
		locks: func(cat *backends.Catalog) []string { return resubmitLocks(cat, dataset, cascade) },
		keys: func(cat *backends.Catalog) int {
			n := 4
			if cascade {
				for _, d := range cat.Downstream(dataset) {
					n += 5 * len(cat.Consumers(d))
				}
			}
			return n
		},
		apply: func(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataid string, now time.Time) error {
			_, err := resubmitChunk(ctx, tx, cat, dataset, dataid, cascade, true, now)
			return err
		},
		cascades: func(cat *backends.Catalog) bool { return cascade && mappedDownstream(cat, dataset) }}
}

func (e *engine) HoldRange(ctx context.Context, dataset, from, to, reason string) (backends.RangeResult, error) {
	return e.runRange(ctx, holdRangeOp(dataset, backends.CutReason(reason)), from, to)
}

func holdRangeOp(dataset, reason string) rangeOp {
	return rangeOp{name: "holdRange", dataset: dataset,
		locks: func(*backends.Catalog) []string { return []string{dataset} },
		keys:  func(*backends.Catalog) int { return 4 },
		apply: func(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataid string, now time.Time) error {
			_, err := holdChunk(ctx, tx, cat, dataset, dataid, reason, true, now)
			return err
		}}
}

// runRange lists the range's dataids, then serves them a batch at a time.
// Once it has begun, a failure answers how far it got (rangeStopped).
func (e *engine) runRange(ctx context.Context, op rangeOp, from, to string) (backends.RangeResult, error) {
	ids, err := e.rangeDataIDs(ctx, op, from, to)
	if err != nil {
		return backends.RangeResult{}, err
	}
	var res backends.RangeResult
	for done := 0; done < len(ids); {
		err := ctx.Err()
		n := 0
		if err == nil {
			n, err = e.rangeBatch(ctx, op, ids[done:], &res)
		}
		if err != nil {
			p := backends.RangeProgress{RangeResult: res, Done: done, Total: len(ids)}
			if done > 0 {
				p.LastDataID = ids[done-1]
			}
			return res, rangeStopped(ctx, op.name, p, err)
		}
		done += n
	}
	return res, nil
}

// rangeStopped is the error of a range operation that failed after p:
// its message and Range say how far it got; its code is the failure's
// (UNAVAILABLE when the request ended: its time ran out, or its client
// left). A failure that is not a domain error keeps its cause for the log
// only, as INTERNAL errors do.
func rangeStopped(ctx context.Context, name string, p backends.RangeProgress, err error) error {
	cause, code := "an internal error (the server log has the details)", backends.CodeInternal
	var de *backends.Error
	switch {
	case ctx.Err() != nil:
		cause, code = "the request ended before the range did (its time ran out, or its client left)", backends.CodeUnavailable
	case errors.As(err, &de):
		cause, code = de.Message, de.Code
	}
	last := ""
	if p.LastDataID != "" {
		last = fmt.Sprintf(", the last %s", p.LastDataID)
	}
	msg := fmt.Sprintf("%s stopped after %d of %d chunks (%d changed, %d unchanged, %d skipped%s): %s; "+
		"what it did is kept: call again with the same range to finish it",
		name, p.Done, p.Total, p.Changed, p.Unchanged, len(p.Skipped), last, cause)
	return &backends.Error{Code: code, Message: msg, Range: &p, Err: err}
}

// rangeDataIDs checks the call and returns the dataids it covers, in
// shortlex order: INVALID_ARGUMENT for a bad or reversed range, or one of
// more than MaxRangeDataIDs dataids, before anything is written.
func (e *engine) rangeDataIDs(ctx context.Context, op rangeOp, from, to string) ([]string, error) {
	for _, id := range []string{from, to} {
		if err := backends.ValidateDataID(id); err != nil {
			return nil, err
		}
	}
	if backends.CompareDataID(from, backends.UpperBound(to)) > 0 {
		return nil, backends.InvalidArgument("%s: from %q is after to %q (dataids order shortlex: shorter first)", op.name, from, to)
	}
	cat, err := e.loadCatalog(ctx, false)
	if err != nil {
		return nil, err
	}
	ds, err := cat.Dataset(op.dataset)
	if err != nil {
		return nil, err
	}
	if op.check != nil {
		if err := op.check(cat.Catalog); err != nil {
			return nil, err
		}
	}
	sliced, some, err := sliceDef(ds.Partitions, op.dataset, op.slice)
	if err != nil || !some {
		return nil, err
	}
	ds.Partitions = sliced
	if dynamicDef(ds.Partitions) {
		return e.dynamicDataIDs(ctx, op, from, to)
	}
	if seq, ok, err := expectedDataIDs(ds, from, to); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return collectRange(op.name, seq)
	}
	if op.needDef {
		return nil, backends.InvalidArgument("%s: dataset %q has no partition definition, so it has no expected dataids to publish; publish dataids one by one, or give it a definition", op.name, op.dataset)
	}
	return e.existingDataIDs(ctx, op, from, to)
}

// collectRange takes the dataids of seq, refusing more than
// MaxRangeDataIDs.
func collectRange(name string, seq iter.Seq[string]) ([]string, error) {
	var ids []string
	for id := range seq {
		if len(ids) == backends.MaxRangeDataIDs {
			return nil, tooLong(name)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func tooLong(name string) error {
	return backends.InvalidArgument("%s: the range holds more than %d dataids; split it into smaller ranges", name, backends.MaxRangeDataIDs)
}

// existingDataIDs lists the dataids in [from, to] at which the dataset has
// an OUTPUT row.
func (e *engine) existingDataIDs(ctx context.Context, op rangeOp, from, to string) ([]string, error) {
	var ids []string
	f := backends.ChunkFilter{Dataset: op.dataset, Role: backends.RoleOutput, From: from, To: to, First: backends.MaxPageSize}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Rows {
			if n := len(ids); n > 0 && ids[n-1] == r.DataID {
				continue // a row of a former producer
			}
			if len(ids) == backends.MaxRangeDataIDs {
				return nil, tooLong(op.name)
			}
			ids = append(ids, r.DataID)
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			return ids, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

// rangeBatch serves the first chunks of ids in one transaction, as many as
// the backend's batch and key budget allow, adds what happened to res,
// and returns how many chunks it served.
func (e *engine) rangeBatch(ctx context.Context, op rangeOp, ids []string, res *backends.RangeResult) (int, error) {
	var n, changed, unchanged int
	var skipped []backends.RangeSkip
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(op.dataset); err != nil {
			return err
		}
		// The dataids were listed from the catalog of the call's start:
		// each batch checks the whole call again against its own (a job
		// may produce the dataset since), and serveRange each dataid.
		if op.check != nil {
			if err := op.check(cat.Catalog); err != nil {
				return err
			}
		}
		n = e.rangeBatchSize(cat.Catalog, op, len(ids))
		mapped := op.cascades != nil && op.cascades(cat.Catalog)
		windows := op.windows != nil && op.windows(cat.Catalog)
		if mapped || windows {
			n = 1
		}
		return withReplans(func(hint []backends.Read) error {
			return e.update(ctx, cat, func(tx backends.Tx) error {
				ctx := withWindowRuns(ctx)
				changed, unchanged, skipped = 0, 0, nil
				var lock func(string) error
				switch {
				case mapped:
					lock = func(id string) error { return lockCascade(ctx, tx, cat.Catalog, op.dataset, id, lockPlan{}, hint) }
				case windows:
					lock = func(id string) error { return lockReady(ctx, tx, cat.Catalog, op.dataset, id) }
				}
				return serveRange(ctx, tx, cat.Catalog, op, ids[:n], e.clock.Now(), lock, func(id string, wrote bool, err error) {
					switch {
					case err != nil:
						skipped = append(skipped, backends.RangeSkip{DataID: id, Code: backends.CodeOf(err), Reason: err.Error()})
					case wrote:
						changed++
					default:
						unchanged++
					}
				})
			})
		})
	})
	if err != nil {
		return 0, err
	}
	res.Changed += changed
	res.Unchanged += unchanged
	res.Skipped = append(res.Skipped, skipped...)
	return n, nil
}

// rangeBatchSize is how many of left chunks one transaction serves.
func (e *engine) rangeBatchSize(cat *backends.Catalog, op rangeOp, left int) int {
	keys := op.keys(cat)
	n, used := 0, 0
	for n < left && n < e.maxRange && e.batchFits(used, keys) {
		n++
		used += keys
	}
	return max(n, 1)
}

// serveRange locks the chunks of ids in ascending byte order (the order of
// every batch, see Limits.MaxBatch), reads their OUTPUT rows in one call, and
// applies op to each in shortlex order, telling done what happened. With lock,
// the one chunk of ids is locked by lock instead.
func serveRange(ctx context.Context, tx backends.Tx, cat *backends.Catalog, op rangeOp, ids []string, now time.Time, lock func(string) error, done func(string, bool, error)) error {
	locks := op.locks(cat)
	byBytes := slices.Clone(ids)
	slices.SortFunc(byBytes, func(a, b string) int { return cmp.Compare(a, b) })
	keys := make([]backends.RowKey, len(ids))
	for i, id := range byBytes {
		var err error
		if lock != nil {
			err = lock(id)
		} else {
			err = tx.LockChunks(ctx, id, locks, nil)
		}
		if err != nil {
			return err
		}
		keys[i] = chunkOutputKey(cat, op.dataset, id)
	}
	reads := &batchReads{Tx: tx}
	if err := reads.readAhead(ctx, keys); err != nil {
		return err
	}
	ds, _ := cat.Datasets.Lookup(op.dataset)
	for _, id := range ids {
		if !expects(ds, id) {
			// Listed under an earlier definition (the dataset was
			// redefined, or deleted and made again, since).
			done(id, false, backends.InvalidArgument("dataid %q is no longer an expected dataid of dataset %q (partitions %s)", id, op.dataset, ds.Partitions.Describe()))
			continue
		}
		c := newChunkTx(reads)
		err := op.apply(ctx, c, cat, id, now)
		if err != nil && !refusal(err) {
			return err
		}
		if err == nil {
			if err := c.commit(ctx); err != nil {
				return err
			}
		}
		done(id, c.wrote(), err)
	}
	return nil
}

// refusal tells whether err is a single chunk's refusal, which skips the
// chunk, rather than a failure of the whole transaction.
func refusal(err error) bool {
	var e *backends.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == backends.CodeLocked || e.Code == backends.CodeNotFound
}
