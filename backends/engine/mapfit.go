package engine

import (
	"math"
	"slices"
	"strings"
	"time"

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
		if m := j.Mapping(dataset); windowKind(m.Kind) || m.Kind == partition.ByDimension {
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
		return backends.InvalidArgument("job %q reads up to %d input chunks for one output dataid through its mappings; a claim of it reads and writes them in one transaction of up to %d operations, more than this store's limit of %d (etcd's --max-txn-ops): on an etcd cluster raise its --max-txn-ops and the store URL's max_txn_ops (the embedded store's is fixed; PostgreSQL has none), or map fewer chunks per output",
			job.ID, reads, need, e.maxKeys)
	}
	next := cat.WithJob(job)
	for _, in := range job.Inputs {
		if need := opKeys(0) + readyKeys(next, in); need > e.maxKeys {
			return backends.InvalidArgument("with job %q, a chunk of %q becoming READY queues the outputs it completes for its readers in one transaction of up to %d operations, more than this store's limit of %d (etcd's --max-txn-ops): on an etcd cluster raise its --max-txn-ops and the store URL's max_txn_ops (the embedded store's is fixed; PostgreSQL has none), or narrow the job's window",
				job.ID, in, need, e.maxKeys)
		}
	}
	return e.bytesFit(cat, job)
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

// readyKeysOf is readyKeys of dataset in the cached catalog (0 when there
// is none yet): what a live-claim operation making a chunk of dataset
// READY adds to its batch (takeLive).
func (e *engine) readyKeysOf(dataset string) int {
	if c := e.cat.Load(); c != nil {
		return readyKeys(c.cat, dataset)
	}
	return 0
}

// And whether they fit a backend whose transactions are bounded in bytes
// (Limits.MaxTxnBytes: etcd's --max-request-bytes). A claim sends, for
// every input chunk it reads, the guards of the chunk's OUTPUT row and of
// the job's INPUT row on it, that INPUT row, its event, and the read in
// the claim's OUTPUT row; a chunk becoming READY writes a candidate for
// every output it completes. The bounds take the widest mappings (above),
// dataids of the longest length, and, for the names only known when a
// runner claims (its executor name, the actor of its token),
// sampleNameBytes.

// sampleNameBytes is the length of an executor or actor name the bounds
// assume. A runner's default executor name (host, process id, random
// suffix) is shorter.
const sampleNameBytes = 64

// longestID is a dataid of d of the longest length d expects: that of its
// start for a time kind (all of one length), MaxDataIDLen otherwise.
func longestID(d partition.Def) string {
	if d.Kind.IsTime() && d.Start != "" {
		return d.Start
	}
	if d.Kind == partition.Dimensional {
		return strings.Repeat("9", backends.MaxTupleLen)
	}
	return strings.Repeat("9", backends.MaxDataIDLen)
}

// sampleTime is a time whose encodings are as long as any a row carries.
var sampleTime = time.Date(2999, 12, 31, 23, 59, 59, 999999999, time.UTC)

// claimBytes bounds what one claim of job sends to commit (commit: the
// backend's commitBytes).
func claimBytes(commit commitBytes, cat *backends.Catalog, job backends.Job) int64 {
	name := strings.Repeat("x", sampleNameBytes)
	outID := longestID(cat.DefOf(job.Output))
	token := backends.NewToken(cat.RowJob(job), job.Output, outID, math.MaxInt64)
	out := backends.StatusRow{RowKey: outputKey(cat, job, outID), Status: backends.StatusRunning, Attempt: math.MaxInt32, Executor: name,
		Token: token, Fence: math.MaxInt64, LeaseExpiresAt: sampleTime, UpdatedAt: sampleTime, PrevStatus: backends.StatusResubmit}
	outEvent := backends.Event{Time: sampleTime, Actor: name, Job: job.ID, Dataset: job.Output, DataID: outID, Role: backends.RoleOutput,
		From: backends.StatusResubmit, To: backends.StatusRunning, Attempt: math.MaxInt32, Executor: name}
	base := int64(commit([]backends.RowKey{out.RowKey}, []backends.StatusRow{out}, nil, []backends.Event{outEvent}))
	total := base + 4096 // the job's slot records and live-claim index
	for _, in := range job.Inputs {
		n := job.Mapping(in).MaxInputs(cat.DefOf(job.Output), cat.DefOf(in))
		read := backends.Read{Dataset: in, DataID: longestID(cat.DefOf(in))}
		row := out
		row.RowKey = backends.ReadKey(job.ID, read, outID)
		row.RowKey.ReadFor = outID
		withRead := out
		withRead.Reads = []backends.Read{read}
		ev := outEvent
		ev.Dataset, ev.DataID, ev.Role, ev.ReadFor = in, read.DataID, backends.RoleInput, outID
		per := commit([]backends.RowKey{chunkOutputKey(cat, in, read.DataID), row.RowKey}, []backends.StatusRow{row, withRead}, nil, []backends.Event{ev})
		per -= commit(nil, []backends.StatusRow{out}, nil, nil) // the OUTPUT row itself is in base
		total += n * int64(per)
	}
	return total
}

// readyBytes bounds what making one chunk of dataset READY sends to commit
// (commit: the backend's commitBytes): its row and event, and per consumer its
// candidates (every output a chunk may complete through TIME_WINDOW, one or
// two otherwise) and the guards of the chunks next to them.
func readyBytes(commit commitBytes, cat *backends.Catalog, dataset string) int64 {
	id := longestID(cat.DefOf(dataset))
	row := backends.StatusRow{RowKey: chunkOutputKey(cat, dataset, id), Status: backends.StatusReady, Attempt: math.MaxInt32, UpdatedAt: sampleTime}
	ev := backends.Event{Time: sampleTime, Actor: strings.Repeat("x", sampleNameBytes), Job: row.Job, Dataset: dataset, DataID: id,
		Role: backends.RoleOutput, From: backends.StatusResubmit, To: backends.StatusReady, Attempt: math.MaxInt32}
	total := int64(commit([]backends.RowKey{row.RowKey, row.RowKey, row.RowKey}, []backends.StatusRow{row}, nil, []backends.Event{ev}))
	for _, jid := range cat.Consumers(dataset) {
		j := cat.Jobs.Get(jid)
		cand := backends.Candidate{Job: jid, DataID: longestID(cat.DefOf(j.Output)), Resubmit: true, NotBefore: sampleTime, Frontier: true}
		per := int64(commit([]backends.RowKey{outputKey(cat, j, cand.DataID)}, nil, []backends.Candidate{cand}, nil))
		n := int64(2)
		if m := j.Mapping(dataset); windowKind(m.Kind) || m.Kind == partition.ByDimension {
			n = m.MaxOutputs(cat.DefOf(j.Output), cat.DefOf(dataset)) + 2
		}
		total += n * per
	}
	return total
}

// bytesFit refuses, on a backend bounded in bytes, a job with mappings
// whose claims, or the publishes of whose inputs, would send more than one
// transaction takes.
func (e *engine) bytesFit(cat *backends.Catalog, job backends.Job) error {
	if e.maxBytes <= 0 || e.commit == nil || !job.Mapped() {
		return nil
	}
	limit := int64(e.maxBytes)
	if need := claimBytes(e.commit, cat, job); need > limit {
		return backends.InvalidArgument("job %q: a claim of it sends up to %d bytes in one transaction (a row, a guard and an event for each of up to %d input chunks, with executor and actor names of %d bytes), more than this store's limit of %d (etcd's --max-request-bytes): raise the cluster's --max-request-bytes and the store's max_request_bytes, or map fewer chunks per output",
			job.ID, need, mappedReads(cat, job), sampleNameBytes, limit)
	}
	next := cat.WithJob(job)
	for _, in := range job.Inputs {
		if need := readyBytes(e.commit, next, in); need > limit {
			return backends.InvalidArgument("with job %q, a chunk of %q becoming READY sends up to %d bytes in one transaction for the outputs it completes, more than this store's limit of %d (etcd's --max-request-bytes): raise the cluster's --max-request-bytes and the store's max_request_bytes, or narrow the job's window",
				job.ID, in, need, limit)
		}
	}
	return nil
}
