package engine

import (
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// What an operation costs a transaction of a backend whose transactions
// hold a bounded number of keys (Limits.MaxBatchKeys): a batch serves only
// the operations that fit.

// opKeys bounds the keys one claim or live-claim operation of a job with
// inputs inputs reads or writes: its OUTPUT row, live-claim index entry,
// index entry of a new OUTPUT row (etcd's out/), fence and queue entry,
// and per input the input chunk's OUTPUT row and the job's INPUT row.
func opKeys(inputs int) int { return 5 + 2*inputs }

// batchFits tells whether an operation costing keys more keys fits in a
// batch that holds used keys already (always true for an empty batch).
func (e *engine) batchFits(used, keys int) bool {
	return used == 0 || e.maxKeys <= 0 || used+keys <= e.maxKeys
}

// jobInputs is the number of inputs of job in the cached catalog (0 when
// unknown: the operation then fails before it reads anything).
// liveJobID is the id of the job whose claim's OUTPUT row is k, in the
// catalog the engine holds: the producer of k's dataset whose rows are
// keyed under k.Job (Catalog.RowOwner), else k.Job.
func (e *engine) liveJobID(k backends.RowKey) string {
	if c := e.cat.Load(); c != nil {
		if j, ok := c.cat.RowOwner(k.Dataset, k.Job); ok {
			return j.ID
		}
	}
	return k.Job
}

func (e *engine) jobInputs(job string) int {
	if c := e.cat.Load(); c != nil {
		if j, ok := c.cat.Jobs.Lookup(job); ok {
			if j.Mapped() {
				// A mapped claim reads as many chunks as its mappings
				// say: it takes a transaction of its own on a backend
				// with a key budget.
				return partition.MaxMapped
			}
			return len(j.Inputs)
		}
	}
	return 0
}

// jobSlotKeys is the number of slot records an operation of job (by id,
// in the cached catalog) may write.
func (e *engine) jobSlotKeys(job string) int {
	if c := e.cat.Load(); c != nil {
		if j, ok := c.cat.Jobs.Lookup(job); ok {
			return len(slotKeys(j))
		}
	}
	return 0
}

// roundSlotKeys is the number of keys a findNext round of job (by id)
// spends on its slot records and holder checks.
func (e *engine) roundSlotKeys(job string) int {
	if c := e.cat.Load(); c != nil {
		if j, ok := c.cat.Jobs.Lookup(job); ok {
			return slotKeyCount(j)
		}
	}
	return 0
}
