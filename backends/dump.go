package backends

import (
	"context"
	"time"
)

// Dumping and loading a whole store: what `chunklock store copy` moves
// between any two backends (package backends/storecopy), while no server
// runs on either. Every backend implements Dumper, and asserts it at
// compile time (var _ backends.Dumper = (*Backend)(nil)).
//
// A store is dumped kind by kind (DumpKinds, in that order), each as a
// stream of items in the backend's own order. Loading takes the items of
// one kind in batches, into a store that holds nothing yet (Dumper.Empty),
// and stores each as the source had it, but for what numbers items within
// one store: the target numbers events (Seq, in the order loaded, which is
// Seq order), resource locks keep their ids, records get versions of
// their own, candidates handles.
//
// A backend that adds a table or a key prefix adds what it holds to a
// kind here (or a new kind, in DumpKinds and in every backend), and names
// it in its DumpCovers: the tests of each backend fail while a table or
// prefix exists that no kind covers.

// DumpKind names one kind of item of a dump.
type DumpKind string

const (
	DumpDatasets    DumpKind = "datasets"    // Dataset, partition definitions included
	DumpJobs        DumpKind = "jobs"        // Job, with its key's public part and pause
	DumpCredentials DumpKind = "credentials" // Credential: the ciphertext only
	DumpRows        DumpKind = "rows"        // StatusRow
	DumpFences      DumpKind = "fences"      // Fence: what NextFence must exceed
	DumpCandidates  DumpKind = "candidates"  // Candidate: the jobs' queues
	DumpEvents      DumpKind = "events"      // Event, in Seq order
	DumpLocks       DumpKind = "locks"       // ResourceLock, expired ones included
	DumpSlots       DumpKind = "slots"       // Slots: pools and slot records
	DumpRecords     DumpKind = "records"     // Record: webhook cursors, backfill records, ...
	DumpBackfills   DumpKind = "backfills"   // Backfill: a job's backend backfill not finished
	DumpChanges     DumpKind = "changes"     // CatalogChange, oldest first
	DumpValues      DumpKind = "values"      // PartitionValue: the values of dynamic sets
)

// DumpKinds lists every kind, in the order a store is dumped and loaded:
// the catalog first, events before fences (a global fence floor is laid
// on every chunk the rows and events name).
var DumpKinds = []DumpKind{DumpDatasets, DumpJobs, DumpCredentials, DumpRows, DumpEvents, DumpFences,
	DumpCandidates, DumpLocks, DumpSlots, DumpRecords, DumpBackfills, DumpChanges, DumpValues}

// Fence is the fencing counter of an output chunk: the next fence it
// issues exceeds Fence. A backend that numbers all chunks from one counter
// (PostgreSQL) dumps one Fence with Global set, which stands for every
// chunk.
type Fence struct {
	Dataset, DataID string
	Fence           int64
	Global          bool
}

// Backfill is a job's backfill that a backend started when the job was
// stored and had not finished (etcd's backfill markers): loading it
// queues a candidate for the job at every dataid where its first input is
// READY, which is what the backfill would have done.
type Backfill struct {
	Job   string
	Since time.Time
}

// DumpItem is one item of a dump: the field of its kind is set.
type DumpItem struct {
	Dataset    *Dataset
	Job        *Job
	Credential *Credential
	Row        *StatusRow
	Fence      *Fence
	Candidate  *Candidate
	Event      *Event
	Lock       *ResourceLock
	Slots      *Slots
	Record     *Record
	Backfill   *Backfill
	Change     *CatalogChange
	Value      *PartitionValue
}

// Dumper dumps and loads a whole store. No server may run on the store
// meanwhile: a dump is a consistent copy only of a store nobody changes.
type Dumper interface {
	// Dump calls fn with every item of kind, in the backend's order,
	// until fn fails.
	Dump(ctx context.Context, kind DumpKind, fn func(DumpItem) error) error
	// Load stores items, all of kind, in a store being loaded: kinds in
	// DumpKinds order, each in as many calls as the loader likes.
	Load(ctx context.Context, kind DumpKind, items []DumpItem) error
	// FinishLoad completes a load: sequences and counters set past what
	// was loaded (fences, lock ids, event numbering), so that the store
	// serves as the source did.
	FinishLoad(ctx context.Context) error
	// Empty tells whether the store holds nothing of any kind.
	Empty(ctx context.Context) (bool, error)
	// DumpCovers lists the backend's tables or key prefixes, each with
	// the kind that dumps it ("" for those that hold nothing to copy,
	// such as a commit marker or an index rebuilt from the rows):
	// a backend's tests compare it with what its store holds.
	DumpCovers() map[string]DumpKind
}
