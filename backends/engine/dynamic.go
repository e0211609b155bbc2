package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Dynamic partitions (SPEC §10, backends/dynamic.go): the expected dataids
// of a DYNAMIC definition are values kept in the store. Adding one queues
// a candidate for the job without inputs producing the dataset, due when
// the value is (added + lag): such a job claims each value once, lowest
// first among those due, as a job with inputs claims what its inputs
// publish; a claim reads the value in its transaction (withValue), so a
// value removed meanwhile is not claimed. Values are data, not part of the
// catalog: adding one changes no catalog version, and every replica reads
// them from the store.

// dynamicDef tells whether def is a DYNAMIC definition.
func dynamicDef(def *partition.Def) bool {
	return def != nil && def.Kind == partition.Dynamic
}

// withValue gives st, a claim of a job without inputs on a DYNAMIC
// output, the value of the set at its dataid (nil when not in the set),
// read in tx.
func withValue(ctx context.Context, tx backends.Tx, st backends.ClaimState) (backends.ClaimState, error) {
	if !dynamicDef(st.Def) {
		return st, nil
	}
	vals, err := tx.GetPartitionValues(ctx, st.Job.Output, "", []string{st.DataID})
	if err != nil {
		return st, err
	}
	st.Value = vals[0]
	return st, nil
}

// valuesChange is the Before of the catalog change recorded for an add
// or a remove: the dimension, and the values the transaction added or
// removed (none of them were in the set before an add; all of them were
// before a remove).
type valuesChange struct {
	Dimension string   `json:"dimension,omitempty"`
	Added     []string `json:"added,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	// Count is how many values the change added or removed; Added and
	// Removed hold the first maxChangeValues of them, so that a change
	// stays small (catalogChanges lists up to 1,000 changes a page).
	Count int `json:"count"`
}

// maxChangeValues bounds the values a catalog change of addPartitions or
// removePartitions lists.
const maxChangeValues = 20

func (e *engine) AddPartitions(ctx context.Context, dataset string, values []string, dimension, from string) (backends.RangeResult, error) {
	if e.dimensional(ctx, dataset) {
		return e.changeDimensionValues(ctx, "addPartitions", dataset, values, dimension, from, true)
	}
	if from != "" {
		return backends.RangeResult{}, backends.InvalidArgument("from applies to a DYNAMIC dimension beside a time dimension; dataset %q is one-dimensional: its values are due when added", dataset)
	}
	return e.changeValues(ctx, "addPartitions", dataset, values, dimension, true)
}

func (e *engine) RemovePartitions(ctx context.Context, dataset string, values []string, dimension string) (backends.RangeResult, error) {
	if e.dimensional(ctx, dataset) {
		return e.changeDimensionValues(ctx, "removePartitions", dataset, values, dimension, "", false)
	}
	return e.changeValues(ctx, "removePartitions", dataset, values, dimension, false)
}

// dimensional tells whether dataset has dimensions in the cached catalog:
// its values are then those of a DYNAMIC dimension (dynamicdims.go).
func (e *engine) dimensional(ctx context.Context, dataset string) bool {
	ds, err := e.Dataset(ctx, dataset)
	return err == nil && ds.Partitions != nil && ds.Partitions.Kind == partition.Dimensional
}

// valueBatch is how many values one transaction of an add or a remove
// serves: all of them, unless the backend bounds the keys of a
// transaction (each value reads its key, writes it, reads its chunk's
// OUTPUT row, and queues a candidate).
func (e *engine) valueBatch() int {
	if k := e.b.Limits().MaxBatchKeys; k > 0 {
		return max(1, k/4-1)
	}
	return backends.MaxPartitionValues
}

// checkValues validates the arguments of an add or a remove and returns
// the distinct values in shortlex order, with a skip for each repeated one.
func checkValues(dataset string, values []string, dimension string) ([]string, []backends.RangeSkip, error) {
	if len(values) > backends.MaxPartitionValues {
		return nil, nil, backends.InvalidArgument("at most %d values a call, got %d: split them over several calls", backends.MaxPartitionValues, len(values))
	}
	if dimension != "" {
		return nil, nil, backends.InvalidArgument("dataset %q is one-dimensional: give no dimension (got %q)", dataset, dimension)
	}
	for _, v := range values {
		if err := backends.ValidateDataID(v); err != nil {
			return nil, nil, err
		}
	}
	sorted := slices.Clone(values)
	slices.SortFunc(sorted, backends.CompareDataID)
	var skipped []backends.RangeSkip
	out := sorted[:0]
	for i, v := range sorted {
		if i > 0 && v == sorted[i-1] {
			skipped = append(skipped, backends.RangeSkip{DataID: v, Code: backends.CodeAlreadyExists, Reason: "listed twice"})
			continue
		}
		out = append(out, v)
	}
	return out, skipped, nil
}

func (e *engine) changeValues(ctx context.Context, op, dataset string, values []string, dimension string, add bool) (backends.RangeResult, error) {
	values, repeated, err := checkValues(dataset, values, dimension)
	if err != nil {
		return backends.RangeResult{}, err
	}
	var res backends.RangeResult
	// What earlier attempts of this call changed: a batch whose catalog
	// changed runs the call again, and finds them changed already.
	ours := map[string]bool{}
	err = e.withCatalog(ctx, func(cat *opCatalog) error {
		res = backends.RangeResult{}
		ds, err := cat.Dataset(dataset)
		if err != nil {
			return err
		}
		if ds.Partitions != nil && ds.Partitions.Kind == partition.Dimensional {
			return backends.InvalidArgument("dataset %q has dimensions now: name the DYNAMIC dimension the values are of", dataset)
		}
		if !dynamicDef(ds.Partitions) {
			kind := "no partition definition"
			if ds.Partitions != nil {
				kind = string(ds.Partitions.Kind) + " partitions"
			}
			return backends.InvalidArgument("dataset %q has %s: values are added to and removed from DYNAMIC partitions only", dataset, kind)
		}
		def := *ds.Partitions
		var root *backends.Job // the job without inputs producing the dataset
		if p := cat.Producer(dataset); p != "" {
			if j := cat.Jobs.Get(p); len(j.Inputs) == 0 {
				root = &j
			}
		}
		size := e.valueBatch()
		for start := 0; start < len(values); start += size {
			batch := values[start:min(start+size, len(values))]
			var part backends.RangeResult
			var committed []string // the values this batch changed, once it commits
			change := &backends.CatalogChange{Actor: backends.ActorFrom(ctx), Kind: backends.ChangeDataset, ID: dataset, Dataset: dataset}
			err := e.update(backends.WithChange(ctx, change), cat, func(tx backends.Tx) error {
				part, committed = backends.RangeResult{}, nil
				now := e.clock.Now()
				change.Time, change.Op = now, ""
				if err := lockValues(ctx, tx, dataset, batch); err != nil {
					return err
				}
				have, err := tx.GetPartitionValues(ctx, dataset, dimension, batch)
				if err != nil {
					return err
				}
				// A value added again whose chunk was resubmitted meanwhile
				// is claimed among the RESUBMIT chunks, first (SPEC §3
				// findNext): the batch's chunks are read in one read, under
				// their locks (and, on a store validating reads, checked at
				// commit).
				resubmitted := map[string]bool{}
				if add && root != nil {
					keys := make([]backends.RowKey, len(batch))
					for i, v := range batch {
						keys[i] = backends.RowKey{Dataset: dataset, DataID: v, Job: cat.RowJob(*root), Role: backends.RoleOutput}
					}
					rows, err := tx.GetRows(ctx, keys)
					if err != nil {
						return err
					}
					for i, r := range rows {
						resubmitted[batch[i]] = r != nil && r.Status == backends.StatusResubmit
					}
				}
				var done []string
				for i, v := range batch {
					if ours[v] && (have[i] != nil) == add {
						part.Changed++
						continue
					}
					switch {
					case add && have[i] != nil:
						part.Skipped = append(part.Skipped, backends.RangeSkip{DataID: v, Code: backends.CodeAlreadyExists, Reason: "already in the set, added " + have[i].AddedAt.UTC().Format(time.RFC3339)})
						continue
					case !add && have[i] == nil:
						part.Skipped = append(part.Skipped, backends.RangeSkip{DataID: v, Code: backends.CodeNotFound, Reason: "not in the set"})
						continue
					case add:
						if err := tx.PutPartitionValue(ctx, backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: v, AddedAt: now}); err != nil {
							return err
						}
						if root != nil {
							if err := tx.AddCandidate(ctx, backends.Candidate{Job: root.ID, DataID: v, NotBefore: now.Add(def.Lag), Resubmit: resubmitted[v]}); err != nil {
								return err
							}
						}
					default:
						if err := tx.DeletePartitionValue(ctx, dataset, dimension, v); err != nil {
							return err
						}
					}
					done = append(done, v)
				}
				part.Changed += len(done)
				committed = done
				if len(done) > 0 {
					rec := valuesChange{Dimension: dimension, Count: len(done)}
					listed := done[:min(len(done), maxChangeValues)]
					if add {
						rec.Added = listed
					} else {
						rec.Removed = listed
					}
					change.Op = op
					change.Before, _ = json.Marshal(rec)
				}
				return nil
			})
			if err != nil {
				if start == 0 || errors.Is(err, backends.ErrCatalogChanged) {
					return err
				}
				p := backends.RangeProgress{RangeResult: res, Done: start, Total: len(values), LastDataID: values[start-1]}
				return rangeStopped(ctx, op, p, err)
			}
			for _, v := range committed {
				ours[v] = true // a skipped value stays skipped when the call runs again
			}
			res.Changed += part.Changed
			res.Skipped = append(res.Skipped, part.Skipped...)
		}
		return nil
	})
	res.Skipped = append(res.Skipped, repeated...)
	slices.SortStableFunc(res.Skipped, func(a, b backends.RangeSkip) int { return backends.CompareDataID(a.DataID, b.DataID) })
	return res, err
}

// lockValues locks the chunks of the values an add or a remove changes,
// exclusively, in ascending byte order: a claim of one of them, which
// locks its chunk, is ordered with the change.
func lockValues(ctx context.Context, tx backends.Tx, dataset string, values []string) error {
	byBytes := slices.Clone(values)
	slices.SortFunc(byBytes, strings.Compare)
	if w, ok := tx.(backends.WideLocker); ok && len(byBytes) > backends.WideLocks {
		if err := w.LockWide(ctx); err != nil {
			return err
		}
	}
	for _, v := range byBytes {
		if err := tx.LockChunks(ctx, v, []string{dataset}, nil); err != nil {
			return err
		}
	}
	return nil
}

// dynamicDataIDs lists the values of a DYNAMIC set in [from, to]: the
// expected dataids of a range over it.
func (e *engine) dynamicDataIDs(ctx context.Context, op rangeOp, from, to string) ([]string, error) {
	var ids []string
	after := ""
	for {
		vals, err := e.b.ListPartitionValues(ctx, op.dataset, "", from, after, to, backends.MaxPageSize)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if len(ids) == backends.MaxRangeDataIDs {
				return nil, tooLong(op.name)
			}
			ids = append(ids, v.Value)
		}
		if len(vals) < backends.MaxPageSize {
			return ids, nil
		}
		after = vals[len(vals)-1].Value
	}
}

// checkValue refuses, for a dataset with a DYNAMIC definition, a dataid
// that is not a value of its set (read in tx, whose lock on the chunk
// orders it with an add or a remove of the value).
func checkValue(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string) error {
	ds, err := cat.Dataset(dataset)
	if err != nil || !dynamicDef(ds.Partitions) {
		return err
	}
	vals, err := tx.GetPartitionValues(ctx, dataset, "", []string{dataid})
	if err != nil {
		return err
	}
	if vals[0] == nil {
		return backends.InvalidArgument("dataid %q is not a value of dataset %q (DYNAMIC partitions); add it with addPartitions first", dataid, dataset)
	}
	return nil
}

// queueDynamicValues queues, for job j just created without inputs for a
// DYNAMIC output, a candidate at every value of the set whose chunk has no
// OUTPUT row, due at its adding + lag: an add queues its values only for
// the root job that exists then, so values added before j (or while the
// job of its id was deleted) would wait for an add that never comes. The
// set is read a page at a time in order, with the rows of that page's
// span; a value with a row is left to what its status queues (a RESUBMIT
// or FAILED row taken over is requeueTakenOver's).
func (e *engine) queueDynamicValues(ctx context.Context, cat *backends.Catalog, j backends.Job) error {
	if len(j.Inputs) > 0 {
		return nil
	}
	ds, ok := cat.Datasets.Lookup(j.Output)
	if !ok || !dynamicDef(ds.Partitions) {
		return nil
	}
	lag := ds.Partitions.Lag
	after := ""
	for {
		vals, err := e.b.ListPartitionValues(ctx, j.Output, "", "", after, "", takeOverBatch)
		if err != nil {
			return err
		}
		if len(vals) == 0 {
			return nil
		}
		first, last := vals[0].Value, vals[len(vals)-1].Value
		have := map[string]bool{}
		f := backends.ChunkFilter{Dataset: j.Output, Role: backends.RoleOutput, From: first, To: last, First: backends.MaxPageSize}
		for {
			page, err := e.b.ListRows(ctx, f)
			if err != nil {
				return err
			}
			for _, r := range page.Rows {
				have[r.DataID] = true
			}
			if !page.HasNextPage || len(page.Cursors) == 0 {
				break
			}
			f.After = page.Cursors[len(page.Cursors)-1]
		}
		var queue []backends.Candidate
		for _, v := range vals {
			if !have[v.Value] {
				queue = append(queue, backends.Candidate{Job: j.ID, DataID: v.Value, NotBefore: v.AddedAt.Add(lag)})
			}
		}
		if len(queue) > 0 {
			err := e.b.Update(ctx, func(tx backends.Tx) error {
				for _, c := range queue {
					if err := tx.AddCandidate(ctx, c); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		after = last
	}
}
