package engine

import (
	"math"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Whether the transactions of a job with mappings fit a backend whose
// transactions hold a bounded number of keys (Limits.MaxBatchKeys: etcd's
// --max-txn-ops): a claim reads and writes every input chunk it reads, and
// a chunk becoming READY queues every output whose window it completes.
// The counts are bounds over the whole definitions (partition.Mapping's
// MaxInputs and MaxOutputs), worked out from the kinds, zones and offsets,
// so that a job stored is never one whose claims, or whose inputs'
// publishes, fail later, at an output far from the definition's start.

// mappedReads bounds the input chunks one claim of job reads: per input,
// the most its mapping maps one output dataid to (one for IDENTITY and
// LATEST, every expected dataid for ALL, the widest window for
// TIME_WINDOW).
func mappedReads(cat *backends.Catalog, job backends.Job) int {
	var n int64
	out := cat.DefOf(job.Output)
	for _, in := range job.Inputs {
		n += job.Mapping(in).MaxInputs(out, cat.DefOf(in))
	}
	return int(min(n, math.MaxInt32))
}

// readyKeys bounds the keys a transaction making one chunk of dataset READY
// spends on its consumers: per consumer, its output row and candidate (one
// to one), two sweep candidates (LATEST, ALL), or, through TIME_WINDOW, a
// candidate for every output whose window one chunk may complete (the
// outputs themselves are read as a hint) and the two chunks next to them.
func readyKeys(cat *backends.Catalog, dataset string) int {
	var n int64
	for _, jid := range cat.Consumers(dataset) {
		j := cat.Jobs.Get(jid)
		if m := j.Mapping(dataset); m.Kind == partition.TimeWindow {
			n += m.MaxOutputs(cat.DefOf(j.Output), cat.DefOf(dataset)) + 2
		} else {
			n += 2
		}
	}
	return int(min(n, math.MaxInt32))
}

// claimFits refuses a job with mappings whose claims read more input
// chunks than one transaction of e's backend holds, or one of whose inputs
// would then queue, for one chunk becoming READY, more outputs than one
// transaction holds: every such claim, or publish, would fail.
func (e *engine) claimFits(cat *backends.Catalog, job backends.Job) error {
	if e.maxKeys <= 0 || !job.Mapped() {
		return nil
	}
	reads := mappedReads(cat, job)
	if need := opKeys(reads); need > e.maxKeys {
		return backends.InvalidArgument("job %q reads up to %d input chunks for one output dataid through its mappings; a claim of it reads and writes them in one transaction of up to %d operations, more than this store's limit of %d (etcd's --max-txn-ops): raise the cluster's --max-txn-ops and the store's max_txn_ops, or map fewer chunks per output",
			job.ID, reads, need, e.maxKeys)
	}
	next := cat.WithJob(job)
	for _, in := range job.Inputs {
		if need := opKeys(0) + readyKeys(next, in); need > e.maxKeys {
			return backends.InvalidArgument("with job %q, a chunk of %q becoming READY queues the outputs it completes for its readers in one transaction of up to %d operations, more than this store's limit of %d (etcd's --max-txn-ops): raise the cluster's --max-txn-ops and the store's max_txn_ops, or narrow the job's window",
				job.ID, in, need, e.maxKeys)
		}
	}
	return e.bytesFit(cat, job)
}

// readyKeysOf is readyKeys of dataset in the cached catalog (0 when there
// is none yet): what a live-claim operation making a chunk of dataset
// READY adds to its batch (takeLive).
func (e *engine) readyKeysOf(dataset string) int {
	if c := e.cat.Load(); c != nil {
		return readyKeys(c.cat, dataset)
	}
	return 0
}

// checkDatasetMappings refuses a definition of d that breaks a mapping of
// a job reading or producing it (Catalog.CheckMappingsOf), or makes its
// claims, or its inputs' publishes, larger than one transaction of e's
// backend holds (claimFits).
func (e *engine) checkDatasetMappings(cat *backends.Catalog, d backends.Dataset) error {
	if err := cat.CheckMappingsOf(d); err != nil {
		return err
	}
	if e.maxKeys <= 0 {
		return nil
	}
	next := cat.WithDataset(d)
	jobs := slices.Clone(cat.Consumers(d.ID))
	if p := cat.Producer(d.ID); p != "" {
		jobs = append(jobs, p)
	}
	for _, jid := range jobs {
		if j, ok := next.Jobs.Lookup(jid); ok {
			if err := e.claimFits(next, j); err != nil {
				return backends.InvalidArgument("dataset %q: this definition would make the transactions of job %q too large: %s", d.ID, jid, err.Error())
			}
		}
	}
	return nil
}
