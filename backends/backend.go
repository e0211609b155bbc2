package backends

import (
	"context"
	"errors"
	"time"
)

// What a storage backend provides, all in this file. A backend implements
// Backend, and its transactions Tx: every method of both is required, and
// the engine (backends/engine) calls them without asking. The optional
// capabilities at the end of this file are the only ones the engine asks a
// transaction or a backend for at run time, each with what the engine does without it.
// Every backend asserts at compile time each interface it implements
// (var _ backends.Tx = (*tx)(nil), and so on), so that a changed signature
// fails the build instead of turning a capability off.

// Backend is what a storage engine implements; engine.New turns it into a
// Store, whose operations are written once for all backends.
type Backend interface {
	// Update runs fn in one read-write transaction and commits its writes
	// all together, or none if fn fails. Backends with optimistic
	// concurrency may run fn again on conflict; fn has no other effects.
	Update(ctx context.Context, fn func(Tx) error) error

	// VersionedCatalog returns every dataset and job, sorted by id, and the
	// version they make up, read atomically. The catalog is numbered:
	// every change to datasets or jobs commits a new version, in the same
	// transaction as the change (Tx.CatalogVersion tells the version a
	// transaction sees).
	VersionedCatalog(ctx context.Context) ([]Dataset, []Job, int64, error)
	// PutDataset creates or updates a dataset, keeping CreatedAt of an
	// existing one, if the catalog version is still version, and returns
	// what was stored and the new catalog version; ErrCatalogChanged, and
	// nothing stored, when the version is another. The frontiers are
	// added as candidates in the same transaction (the producer's frontier
	// after a change of definition, the sweeps a change of a DYNAMIC
	// dimension's values starts), each with its Resubmit.
	PutDataset(ctx context.Context, d Dataset, frontiers []Candidate, version int64) (Dataset, int64, error)
	// PutJob creates or updates a job (already validated against the
	// catalog at version), keeping CreatedAt, if the catalog version is
	// still version (ErrCatalogChanged otherwise), and returns what was
	// stored and the new catalog version. When enqueue is true (the engine
	// decided the job is new or its inputs changed) it also adds a candidate
	// for the job at every dataid at which its first input's OUTPUT row is
	// READY; for a job with no inputs, nothing. A frontier, when not nil,
	// is added as a candidate in the same transaction.
	PutJob(ctx context.Context, j Job, enqueue bool, frontier *Candidate, version int64) (Job, int64, error)
	// DeleteDataset removes dataset id, which no job of the catalog at
	// version reads or writes, with its status rows and the credentials
	// stored for it, if the catalog version is still version
	// (ErrCatalogChanged otherwise), and returns the new catalog version.
	// Its fences stay (a re-created dataset never repeats a token), and
	// so do its events. Unless withChunks, a dataset with chunks (OUTPUT
	// rows) is left as it is: chunks is their number, and the version
	// returned is 0. Atomic with every transaction writing the dataset's
	// rows: one that committed before is deleted or counted, one that
	// commits after finds the catalog changed.
	DeleteDataset(ctx context.Context, id string, withChunks bool, version int64) (chunks int, newVersion int64, err error)
	// DeleteJob removes job j (as stored at catalog version version) if
	// the catalog version is still version (ErrCatalogChanged otherwise)
	// and it has no claim in RUNNING (LOCKED, each blocker one of them, and
	// nothing removed): the job, its credentials, its candidates and its
	// INPUT rows (its reads). Its OUTPUT rows stay, keyed as they are: the
	// output dataset's OutputKey becomes j.ID when it has none, and the
	// backend keeps finding those rows as the dataset's chunks (a later
	// job of any id for the output, or consumers queued by PutJob). The
	// job's claims are its OUTPUT rows keyed under its row job
	// (Catalog.RowJob: the output's OutputKey when set, else j.ID). It
	// returns the new catalog version.
	DeleteJob(ctx context.Context, j Job, version int64) (int64, error)
	// DeletePool removes the definition of pool id from its slot record
	// (holders a record lists stay, until their claims end) if the catalog
	// version is still version (ErrCatalogChanged otherwise; no job of the
	// catalog at version names the pool), and makes a new catalog version,
	// which it returns: a job upserted against the older catalog, when the
	// pool still existed, is validated again.
	DeletePool(ctx context.Context, id string, version int64) (int64, error)
	// Catalog returns every dataset and job, sorted by id.
	Catalog(ctx context.Context) ([]Dataset, []Job, error)
	PutCredential(ctx context.Context, c Credential) error
	// SwapCredential stores c only if the stored credential of (c.Job,
	// c.Dataset) has the ciphertext old, and tells whether it did.
	SwapCredential(ctx context.Context, c Credential, old []byte) (bool, error)
	Credentials(ctx context.Context, job string) ([]Credential, error)

	// ListRows pages through status rows in (dataset, shortlex dataid,
	// role, job) order.
	ListRows(ctx context.Context, f ChunkFilter) (ChunkPage, error)
	// ExpiredClaims returns up to limit OUTPUT rows in RUNNING whose lease
	// ended at or before now.
	ExpiredClaims(ctx context.Context, now time.Time, limit int) ([]RowKey, error)
	// CountCandidates counts a job's findNext candidates, hidden ones (not
	// due yet) included.
	CountCandidates(ctx context.Context, job string) (int, error)
	ListEvents(ctx context.Context, f EventFilter) (EventPage, error)
	// ListChanges pages through the recorded catalog changes (changes.go),
	// newest first: up to f.First (1 to MaxChangesPage) of those f
	// matches, after the change whose Cursor is f.After.
	ListChanges(ctx context.Context, f ChangeFilter) (ChangePage, error)
	WatchEvents(ctx context.Context, f EventFilter) (<-chan Event, error)
	// DeleteEvents removes the events given that are still stored, found
	// by Seq (a backend may use their Dataset and DataID to find its
	// index entries), in one short transaction that locks no status row,
	// and returns how many it removed. Seqs are never given out again.
	DeleteEvents(ctx context.Context, events []Event) (int, error)

	// TakeResourceLock atomically checks the unexpired locks on
	// l.Resource and stores l if the rules allow it, or returns LOCKED
	// with the holders. It assigns l.ID.
	TakeResourceLock(ctx context.Context, l ResourceLock, now time.Time) (ResourceLock, error)
	// RenewResourceLock sets the expiry of lock id to expiresAt if client
	// holds it: NOT_FOUND when there is no such unexpired lock, FORBIDDEN
	// when another client holds it. It returns the lock as stored.
	RenewResourceLock(ctx context.Context, id, client string, expiresAt, now time.Time) (ResourceLock, error)
	// DropResourceLock removes lock id if client holds it: NOT_FOUND when
	// there is no such unexpired lock, FORBIDDEN when another client holds it.
	DropResourceLock(ctx context.Context, id, client string, now time.Time) error
	ListResourceLocks(ctx context.Context, f ResourceLockFilter, now time.Time) ([]ResourceLock, error)

	// The values of dynamic sets (dynamic.go).
	DynamicLister

	// ListPools returns every defined pool (slot records of pools with
	// Slots >= 1), by id.
	ListPools(ctx context.Context) ([]Pool, error)

	// GetRecord and SwapRecord are Store.Record and Store.SwapRecord, the
	// key and value already checked; the swap is atomic.
	GetRecord(ctx context.Context, key string) (Record, error)
	SwapRecord(ctx context.Context, key string, value []byte, version int64) (Record, bool, error)

	// Limits are the bounds of the backend's transactions; the engine
	// reads them once, when it is made.
	Limits() Limits
	// Clock is the clock the engine tells time by unless it is given
	// another (engine.WithClock): PostgreSQL's follows the database's
	// clock, so that every server sharing it computes leases on one time
	// base; the others' is the system clock.
	Clock() Clock

	Ping(ctx context.Context) error
	Close() error
}

// Limits bound what one transaction of a backend serves. The zero Limits
// serve one operation per transaction, with no bound on its keys or bytes.
type Limits struct {
	// MaxBatch is the most operations one transaction may serve (findNext
	// calls of a job, live-claim operations, chunks of a range); below 2,
	// operations are never combined. A transaction serving several calls
	// LockChunks once per dataid, in ascending dataid order, before it
	// reads any of those chunks; a backend that locks must accept that
	// (locks taken in (dataid, dataset) order, by every transaction,
	// cannot deadlock).
	MaxBatch int
	// MaxRangeBatch is the most chunks of a range operation one batching
	// transaction (MaxBatch above 1) serves: a range's chunks come from
	// one caller who waits for them all, so what bounds such a
	// transaction is its statements, not the wait of callers queued
	// behind it. 0: MaxBatch.
	MaxRangeBatch int
	// MaxBatchKeys bounds the keys one batched transaction holds (etcd:
	// --max-txn-ops): a batch serves only as many operations as fit, and
	// an operation that does not fit alone is served alone. 0: no bound.
	MaxBatchKeys int
	// MaxTxnBytes bounds what one transaction sends to commit (etcd:
	// --max-request-bytes): a job with mappings whose claims, or the
	// publishes of whose inputs, would send more is refused when it is
	// stored. 0: no bound.
	MaxTxnBytes int
	// CommitBytes, set with MaxTxnBytes, is what guarding the rows keyed
	// guards, writing rows and cands, and recording events add to a
	// commit.
	CommitBytes func(guards []RowKey, rows []StatusRow, cands []Candidate, events []Event) int
}

// Tx is one transaction of Backend.Update. All reads and writes of one
// operation go through it.
type Tx interface {
	// LockChunks serialises this transaction with every other transaction
	// writing the chunks (dataset, dataid) it names: exclusive for chunks
	// this transaction may write, shared for chunks it only reads. An
	// operation calls it once per dataid it touches, before reading those
	// chunks; one that touches several (a findNext round, a batch of live
	// claims, a claim of a job whose mappings read other dataids, SPEC §9)
	// calls it in ascending byte order of dataid. Backends that lock must
	// take the locks of one call in ascending dataset order, after those
	// of the calls before (no deadlocks); backends that validate reads at
	// commit may do nothing.
	LockChunks(ctx context.Context, dataid string, exclusive, shared []string) error
	// GetRows reads status rows; the result is aligned with keys, nil for a
	// missing row.
	GetRows(ctx context.Context, keys []RowKey) ([]*StatusRow, error)
	// PeekRows reads status rows as a hint: as committed (and as this
	// transaction wrote them), neither locked nor validated at commit, so
	// that a later change to them neither waits nor fails the transaction
	// (a sweep reads the rows ahead of it so). A backend whose GetRows
	// neither locks nor validates implements it as GetRows.
	PeekRows(ctx context.Context, keys []RowKey) ([]*StatusRow, error)
	// LatestReady finds, as a hint (see PeekRows), the READY chunk of
	// dataset with the highest dataid in shortlex order from from (none
	// when empty) to to, inclusive, in one ordered read, however many
	// dataids between have no chunk. A chunk's status is that of its
	// OUTPUT row of job, the dataset's producer ("" for a source): rows of
	// other jobs (left by an earlier catalog) are not the chunk's.
	LatestReady(ctx context.Context, dataset, job, from, to string) (dataid string, ok bool, err error)
	// ListReads returns job's INPUT rows on chunk (dataset, dataid) that
	// are read for another output dataid (RowKey.ReadFor set: mapped
	// reads, SPEC §9), in shortlex ReadFor order, as this transaction sees
	// them, its own writes included. Backends that validate reads at
	// commit guard the whole set: a row added to it or changed since makes
	// the commit fail. Backends that lock read it after the locks of the
	// transaction's chunks are taken.
	ListReads(ctx context.Context, dataset, dataid, job string) ([]StatusRow, error)
	// PutRow inserts or replaces a row.
	PutRow(ctx context.Context, r StatusRow) error
	// DeleteRow removes a row if it exists.
	DeleteRow(ctx context.Context, k RowKey) error
	// NextFence returns a fencing number greater than every fence issued
	// before for the output chunk (dataset, dataid), even if its rows were
	// deleted since.
	NextFence(ctx context.Context, dataset, dataid string) (int64, error)
	// AppendEvent records an event; the backend assigns Seq, which must
	// grow with commit order.
	AppendEvent(ctx context.Context, e Event) error

	// AddCandidate notes that job may be able to claim dataid. Candidates
	// are hints: findNext checks each one and drops it if it is not
	// claimable. Duplicates are allowed. Resubmit candidates come first.
	AddCandidate(ctx context.Context, c Candidate) error
	// NextCandidates returns up to n of the job's first candidates in
	// (resubmit first, then shortlex dataid) order among those due at now
	// (NotBefore zero or not after now) that no concurrent transaction is
	// looking at, and reserves them for this transaction. Candidates not
	// yet due stay where they are and block nothing.
	NextCandidates(ctx context.Context, job string, n int, now time.Time) ([]Candidate, error)
	// DropCandidate removes a candidate NextCandidates returned (only that
	// entry, not duplicates added since). Dropping a frontier also drops
	// the job's other frontiers of the same kind (Resubmit) at the same
	// dataid that no transaction, this one included, has reserved: two
	// frontiers that meet merge, and the engine drops a reserved twin only
	// when it takes the dataid.
	DropCandidate(ctx context.Context, c Candidate) error

	// CatalogVersion returns the catalog version this transaction sees:
	// the engine commits an operation only under the catalog version it
	// decided with (else ErrCatalogChanged, and the operation runs again).
	CatalogVersion(ctx context.Context) (int64, error)

	// GetSlots reads slot records (slotrecords.go) by key, given in
	// ascending order; nil for a record never written. With forUpdate the
	// records are locked until the transaction ends, exclusively (backends
	// that validate reads at commit track them instead): a transaction
	// calls it so at most once, after all its LockChunks calls. Without,
	// the records are read as committed at the transaction's start or
	// later, neither locked nor tracked: the caller accepts a stale answer.
	GetSlots(ctx context.Context, keys []string, forUpdate bool) ([]*Slots, error)
	// PutSlots writes a slot record read with forUpdate in this
	// transaction.
	PutSlots(ctx context.Context, s Slots) error

	// The values of dynamic sets (dynamic.go).
	DynamicTx
}

// Candidate is a hint that Job may be able to claim DataID. Handle is the
// backend's own reference to the entry (an id, a key).
type Candidate struct {
	Job      string
	DataID   string
	Resubmit bool
	// NotBefore, when not zero, hides the candidate from NextCandidates
	// until then: a failed chunk's retry time, a window's due time.
	NotBefore time.Time
	// Frontier marks the one candidate of a scheduled job (no inputs, an
	// output with a partition definition) that stands for the lowest
	// expected dataid the job has not claimed yet, and the sweeps of a job
	// reading through LATEST or ALL; a sweep with Resubmit looks for the
	// job's RESUBMIT outputs.
	Frontier bool
	Handle   any
}

// ErrCatalogChanged rolls back a transaction that found the catalog
// changed; the engine then runs the operation again. A backend's
// PutDataset and PutJob return it when the catalog version is no longer
// the one the change was validated against; the engine then validates
// the change again against the new catalog.
var ErrCatalogChanged = errors.New("backends: the catalog changed during the operation")

// The slot strategy: how a transaction's claims count the live claims of
// a job or pool with a limit (SPEC §4 guarantee 7). Its Tx is a
// LiveCounter, or else a HolderTx; the engine asks which in one place.

// LiveCounter is implemented by a Tx that counts live claims itself (a
// claim is live while its OUTPUT row is RUNNING with a lease to come):
// PostgreSQL, whose index of RUNNING rows answers at once, and whose
// READ COMMITTED statements each see every commit made before them; and
// memory, whose transactions run one at a time. Its slot gates lock the
// slot records, for the pool's size and to order the claims of one job or
// pool one after the other, and count the live claims of the record's
// jobs after the lock: a claim that took the lock before has committed,
// one that takes it after waits for this one. No holders are kept: claims
// write nothing to the records, and endings nothing at all.
type LiveCounter interface {
	// CountLive counts the live claims of jobs at now, as committed
	// before this statement (this transaction's own are not counted).
	CountLive(ctx context.Context, jobs []string, now time.Time) (int, error)
}

// HolderTx is implemented by a Tx whose slot records list their holders
// (etcd, which cannot count rows within a transaction it validates at
// commit): what checking and rebuilding the lists needs.
type HolderTx interface {
	// CheckHolders reads the OUTPUT rows of claims that hold slots, to
	// tell whether they are still live, as GetRows does, except that it
	// never waits: known[i] is false when the row cannot be read
	// consistently without waiting (another transaction is changing it),
	// and the caller then counts the holder as live.
	CheckHolders(ctx context.Context, keys []RowKey) (rows []*StatusRow, known []bool, err error)
	// RunningOutputs returns the OUTPUT rows of job on dataset output in
	// RUNNING (whatever their lease), as committed when the slot records
	// of this transaction were locked.
	RunningOutputs(ctx context.Context, job, output string) ([]StatusRow, error)
}

// The optional capabilities of a Tx. The engine asks for each where it
// would use it; without it, it does what each says.

// ReadyLister is implemented by transactions that can list, as a hint (see
// Tx.PeekRows), the READY chunks of dataset with dataids from from to to
// (inclusive, shortlex order), in that order, in one ordered read that
// reads no other rows at those dataids; a chunk's status is that of its
// OUTPUT row of job, as in Tx.LatestReady. A walk over a window's chunks
// reads them so; without, it reads them by key (PeekRows).
type ReadyLister interface {
	ReadyBetween(ctx context.Context, dataset, job, from, to string) ([]string, error)
}

// WideLocker is implemented by transactions of a backend whose chunk locks
// live in a table of limited size (PostgreSQL's advisory locks). A
// transaction about to lock more than WideLocks chunks calls LockWide
// before its first LockChunks: such transactions then hold their locks one
// at a time, and never fill the table together. Without, a transaction
// locks its chunks as any other.
type WideLocker interface {
	LockWide(ctx context.Context) error
}

// WideLocks is how many chunk locks a transaction takes before it counts
// as wide (WideLocker).
const WideLocks = 1024

// LivePrefetcher is implemented by a LiveCounter that can send the counts
// a claim's gate asks for with the statement locking its records, in one
// round trip: CountLive of those jobs at that time then answers from it.
// Without, CountLive asks when it is called.
type LivePrefetcher interface {
	PrefetchLive(jobs [][]string, now time.Time)
}

// SlotPrefetcher is implemented by a Tx that can fetch slot records
// together with the reads that precede them: one round trip less per
// claim round (a job's rounds are served one at a time) and per batch of
// endings. Without, GetSlots reads them when it is called.
type SlotPrefetcher interface {
	// PrefetchSlots notes that the records locked will be read next with
	// forUpdate, and the records peeked without: the next read of rows
	// may fetch (and lock, after the chunk locks queued before it) them
	// ahead.
	PrefetchSlots(locked, peeked []string)
}

// The optional capabilities of a Backend: read paths the engine uses when
// a backend offers them; without, it does what each says.

// OutputStatusReader is implemented by backends that read the dataids and
// statuses of one job's OUTPUT rows on a dataset, with dataids between
// from and to inclusive (shortlex), in shortlex order and without the rest
// of each row: up to limit of them, as committed. PartitionRuns reads long
// histories so, a window at a time; without it, with ListRows.
type OutputStatusReader interface {
	OutputStatuses(ctx context.Context, dataset, job, from, to string, limit int) (ids []string, statuses []Status, err error)
}

// OutputStatusBatcher is implemented by backends that read several spans
// as OutputStatusReader does in one request (etcd: one transaction of
// range reads), so that the newest READY chunk of hundreds of datasets is
// found without a round trip for each.
type OutputStatusBatcher interface {
	OutputStatusesBatch(ctx context.Context, spans []StatusSpan) (ids [][]string, statuses [][]Status, err error)
}

// FinalEventLister is implemented by backends whose ListEvents waits for
// events still being committed (PostgreSQL: the horizon, events.go). It
// lists events as ListEvents does without waiting: only those already
// final, so a page may end early (HasNextPage false) where transactions
// still run. Store.PruneEvents reads so, looking only for old events;
// without, it reads with ListEvents.
type FinalEventLister interface {
	ListFinalEvents(ctx context.Context, f EventFilter) (EventPage, error)
}

// HoldsMarker is implemented by backends that record since when every
// server writing to the store refuses to hold a dataid the dataset's
// definition does not expect (the first start of a version that does, or
// the store's creation). A hold of an earlier version could leave a row at
// any dataid; the engine trusts the kept counts of a dataset made before
// that time only while it has no HOLD or RESUBMIT chunk (the statuses such
// a row can have). Without it, every dataset is taken as made before.
type HoldsMarker interface {
	HoldsCheckedSince(ctx context.Context) (time.Time, error)
}

// OutputCounter is implemented by backends that count one job's OUTPUT
// rows on a dataset with dataids between from and to inclusive (shortlex;
// an empty from is before every dataid) without reading the rows
// (PostgreSQL: an index-only count; etcd: a count-only read of an index of
// the OUTPUT rows kept beside them). ok is false while the store cannot
// count so (etcd still building the index of a store written before it
// was kept); the engine then reads the rows. The count is as committed:
// it never counts a row that is not there. The missing and late counts
// use it to find the oldest missing chunk of a long history by bisection,
// reading one window of rows instead of every row before it.
type OutputCounter interface {
	CountOutputs(ctx context.Context, dataset, job, from, to string) (n int64, ok bool, err error)
}

// ValueCounter is implemented by backends that count one job's OUTPUT
// rows on a dataset with dimensions by the value of dimension i (1 to 3:
// after the first, whose values are runs of sort keys) and by status, as
// committed, without reading the rows (the counts kept with them, as
// StatusCounter's). The missing and late counts by value of a STATIC or
// DYNAMIC dimension (SPEC §10) count so; without, the rows are read.
type ValueCounter interface {
	CountValueStatuses(ctx context.Context, dataset, job string, i int) (map[string]map[Status]int, error)
}

// StatusCounter is implemented by backends that count one job's OUTPUT
// rows on a dataset by status in the store (PostgreSQL: one aggregate
// over the dataset's index), as committed. Store.ChunkCounts counts so;
// without, it pages through the rows with ListRows.
type StatusCounter interface {
	CountStatuses(ctx context.Context, dataset, job string) (map[Status]int, error)
}
