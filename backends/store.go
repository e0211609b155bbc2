package backends

import (
	"context"
	"time"
)

// Store is chunklock's storage API: everything the GraphQL layer, the reaper
// and the runner commands do. Build one with New over a Backend; every
// operation below behaves the same on every backend (the conformance suite
// in backendtest checks it).
//
// Every write is atomic: a claim, a completion or a cascade is applied whole
// or not at all, under any concurrency. Errors are *Error values with a Code
// (NOT_FOUND, INVALID_ARGUMENT, LOCKED, STALE_CLAIM, ...) or, for failures to
// reach the store, UNAVAILABLE. The actor recorded in events comes from the
// context (WithActor).
type Store interface {
	// UpsertDataset creates or replaces a dataset definition.
	UpsertDataset(ctx context.Context, d Dataset) (Dataset, error)
	// Dataset returns one dataset, or NOT_FOUND.
	Dataset(ctx context.Context, id string) (Dataset, error)
	// Datasets lists every dataset by id.
	Datasets(ctx context.Context) ([]Dataset, error)
	// UpsertJob creates or replaces a job. Inputs and output must exist
	// (NOT_FOUND), the output may have no other producer (ALREADY_EXISTS), and
	// the job graph must stay acyclic (INVALID_ARGUMENT). Zero MaxAttempts and
	// LeaseSeconds take the defaults. Chunks already READY on the job's inputs
	// become claimable by it.
	UpsertJob(ctx context.Context, j Job) (Job, error)
	// Job returns one job, or NOT_FOUND.
	Job(ctx context.Context, id string) (Job, error)
	// Jobs lists every job by id.
	Jobs(ctx context.Context) ([]Job, error)
	// SetCredential stores a dataset secret already encrypted to the job's
	// key; the job must use the dataset (as input or output).
	SetCredential(ctx context.Context, c Credential) error
	// Credentials returns every credential stored for a job.
	Credentials(ctx context.Context, job string) ([]Credential, error)
	// ValidateJob checks j as UpsertJob would, without storing it, and
	// returns the job UpsertJob would store: defaults filled in, and the
	// stored key kept when j has none.
	ValidateJob(ctx context.Context, j Job) (Job, error)
	// ReplaceCredential stores c only while the job's credential for
	// c.Dataset is still the ciphertext old, and tells whether it did: a
	// credential set or replaced in between is kept.
	ReplaceCredential(ctx context.Context, c Credential, old []byte) (bool, error)

	// Publish marks a chunk of a source dataset READY. Refused
	// (INVALID_ARGUMENT) for a dataset that has a producing job, LOCKED while
	// the chunk is on HOLD.
	Publish(ctx context.Context, dataset, dataid string) (StatusRow, error)
	// FindNext claims the next claimable chunk of a job: first the lowest
	// RESUBMIT dataid whose inputs are READY, else the lowest dataid whose
	// inputs are READY, that the job holds no job-local lock on, and whose
	// output is free. nil when nothing is claimable or the job is paused.
	FindNext(ctx context.Context, job, executor string) (*Claim, error)
	// Claim claims one given dataid, or fails with LOCKED and its blockers.
	Claim(ctx context.Context, job, dataid, executor string) (*Claim, error)
	// Force claims a dataid whatever its inputs, its job's DONE locks and
	// pausing, superseding a live claim on the output chunk. What downstream
	// jobs computed from the chunk is invalidated in the same transaction,
	// as Resubmit with cascade does; LOCKED (changing nothing) while any of
	// them reads the chunk, or works downstream at that dataid, right now.
	Force(ctx context.Context, job, dataid, executor string) (*Claim, error)
	// Heartbeat extends a live claim's lease by the job's leaseSeconds.
	Heartbeat(ctx context.Context, token string) (*Claim, error)
	// Complete ends a live claim successfully: OUTPUT READY, INPUT DONE.
	//
	// Complete, Fail and Release may be repeated: called again with the
	// token of a claim that the same operation ended, they answer nil and
	// change nothing, on any replica (a runner whose answer was lost learns
	// the truth), for as long as the chunk's OUTPUT row records that ending
	// (until the chunk is claimed, resubmitted or held again). Any other
	// call on an ended claim is STALE_CLAIM; so is a repeated Release that
	// left no row behind, which cannot be told from a token never issued.
	Complete(ctx context.Context, token string) error
	// Fail ends a live claim: OUTPUT FAILED (HOLD when attempts are
	// exhausted), INPUT ERROR. Repeatable, see Complete.
	Fail(ctx context.Context, token, reason string) error
	// Release gives a live claim back without counting an attempt.
	// Repeatable, see Complete.
	Release(ctx context.Context, token string) error
	// ExpireLeases fails every RUNNING claim whose lease has passed, with
	// reason "lease expired", and returns how many it failed. Safe to run
	// from any number of servers at once.
	ExpireLeases(ctx context.Context) (int, error)
	// ResumeBackfills queues what jobs with mappings can claim already,
	// for each whose backfill an upsert began and did not finish (a
	// server stopped half way, a request timed out), and returns how many
	// it ran. Every server runs it when it starts and every reaper
	// interval after; a run returns at once while this store has left
	// nothing owed since its last complete run. Safe to run from any
	// number of servers at once.
	ResumeBackfills(ctx context.Context) (int, error)
	// Resubmit sets a chunk's OUTPUT row to RESUBMIT (from READY, FAILED,
	// HOLD; LOCKED while RUNNING) with its attempt count reset. With cascade,
	// every downstream chunk computed from it (through DONE INPUT rows) is
	// invalidated too, transitively: the DONE rows become ERROR and the
	// downstream OUTPUT rows RESUBMIT; so are downstream chunks that failed
	// on it (INPUT ERROR, OUTPUT FAILED or HOLD), with their attempts
	// counted afresh. LOCKED if any of them is being produced or consumed
	// right now. Returns the OUTPUT rows it changed.
	Resubmit(ctx context.Context, dataset, dataid string, cascade bool) ([]StatusRow, error)
	// Hold freezes a chunk (OUTPUT HOLD), creating its row if it has none.
	// LOCKED while RUNNING.
	Hold(ctx context.Context, dataset, dataid, reason string) (StatusRow, error)
	// PublishRange, ResubmitRange and HoldRange apply Publish, Resubmit
	// and Hold to every dataid in [from, to]: the dataset's expected
	// dataids when it has a partition definition, else the dataids of its
	// existing chunks (PublishRange then is INVALID_ARGUMENT). Each chunk is
	// all or nothing; the ones the operation refuses are skipped and listed.
	// At most MaxRangeDataIDs dataids per call. See rangeops.go.
	PublishRange(ctx context.Context, dataset, from, to string) (RangeResult, error)
	ResubmitRange(ctx context.Context, dataset, from, to string, cascade bool) (RangeResult, error)
	HoldRange(ctx context.Context, dataset, from, to, reason string) (RangeResult, error)

	// Chunks pages through status rows.
	Chunks(ctx context.Context, f ChunkFilter) (ChunkPage, error)
	// Partitions pages through the expected dataids of a dataset with a
	// partition definition, each with its OUTPUT row's status (StatusNone:
	// missing) and whether it is late (SPEC §8). INVALID_ARGUMENT for a
	// dataset without a definition. One call looks at MaxPartitionScan
	// expected dataids at most.
	Partitions(ctx context.Context, f PartitionFilter) (PartitionPage, error)
	// PartitionCounts counts a dataset's missing and late chunks; see
	// PartitionCount for the bounds of the count.
	PartitionCounts(ctx context.Context, dataset string) (PartitionCount, error)
	// PartitionRuns answers a span of a dataset's partitions (its chunks,
	// without a definition) as runs of one status and lateness, and per
	// column of a coarser zoom; see RunsFilter and PartitionSpan. One call
	// looks at MaxRunsLimit dataids at most and answers MaxRuns runs.
	PartitionRuns(ctx context.Context, f RunsFilter) (PartitionSpan, error)
	// LatestReady returns, for each dataset, the highest dataid whose chunk
	// is READY (within its definition's due windows); "" when none is. One
	// transaction for all; NOT_FOUND for an unknown dataset.
	LatestReady(ctx context.Context, datasets []string) ([]string, error)
	// Chunk returns one chunk with every row on it and its derived locks.
	// NOT_FOUND for an unknown dataset; a chunk with no rows has nil Output.
	Chunk(ctx context.Context, dataset, dataid string) (ChunkDetail, error)
	// Claims lists a job's live claims (all jobs when job is empty); a
	// claim past its lease is not live, even before the reaper fails it.
	Claims(ctx context.Context, job string) ([]Claim, error)
	// Locks lists derived locks (at most MaxPageSize rows' worth).
	Locks(ctx context.Context, f LockFilter) ([]Lock, error)
	// Blockers tells why job cannot claim dataid now; empty when it can.
	Blockers(ctx context.Context, job, dataid string) ([]Blocker, error)
	// LockGraph returns the jobs, datasets and chunks around a filter.
	LockGraph(ctx context.Context, f GraphFilter) (LockGraph, error)
	// Events pages through the event log in Seq order.
	Events(ctx context.Context, f EventFilter) (EventPage, error)
	// WatchEvents streams events matching f recorded after f.After, as they
	// are committed by any server sharing the store. The channel closes when
	// ctx ends or the store closes.
	WatchEvents(ctx context.Context, f EventFilter) (<-chan Event, error)

	// LockResource takes a READ or WRITE lock on a resource URI for client:
	// any number of READ locks unless a WRITE lock exists; a WRITE lock only
	// when no lock exists. Never waits: LOCKED lists the holders. ttl <= 0
	// means DefaultResourceLockTTL; beyond MaxResourceLockTTL is
	// INVALID_ARGUMENT.
	LockResource(ctx context.Context, client, resource string, mode LockMode, ttl time.Duration) (ResourceLock, error)
	// RenewResource extends lock id to ttl from now (ttl <= 0:
	// DefaultResourceLockTTL; at most MaxResourceLockTTL). Only its client
	// may (FORBIDDEN); an expired or unknown lock is NOT_FOUND.
	RenewResource(ctx context.Context, id, client string, ttl time.Duration) (ResourceLock, error)
	// UnlockResource removes a lock; only its client may (FORBIDDEN).
	UnlockResource(ctx context.Context, id, client string) error
	// ResourceLocks lists unexpired resource locks.
	ResourceLocks(ctx context.Context, f ResourceLockFilter) ([]ResourceLock, error)

	// UpsertPool creates or replaces a pool (SPEC §1 Pool): id a slug,
	// slots at least 1. Lowering slots below the pool's live claims takes
	// nothing away: no claim is made until they are fewer than its slots.
	UpsertPool(ctx context.Context, p Pool) (Pool, error)
	// Pools lists every pool by id.
	Pools(ctx context.Context) ([]Pool, error)
	// Pool returns one pool, or NOT_FOUND.
	Pool(ctx context.Context, id string) (Pool, error)

	// Record reads a record (records.go); one never written has Version 0
	// and no value.
	Record(ctx context.Context, key string) (Record, error)
	// SwapRecord writes value under key if the record's version is still
	// version (0: never written) and returns the record written and true.
	// When the version is another it writes nothing and returns the record
	// as stored and false.
	SwapRecord(ctx context.Context, key string, value []byte, version int64) (Record, bool, error)

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// Backend is what a storage engine implements. New turns it into a Store;
// the operations themselves live in engine.go, written once for all backends.
type Backend interface {
	// Update runs fn in one read-write transaction and commits its writes
	// all together, or none if fn fails. Backends with optimistic
	// concurrency may run fn again on conflict; fn has no other effects.
	Update(ctx context.Context, fn func(Tx) error) error

	// The catalog is versioned (VersionedCatalog); a Tx tells the version
	// it sees (CatalogVersionTx).
	CatalogVersioner

	// PutDataset creates or updates a dataset, keeping CreatedAt of an
	// existing one, if the catalog version is still version, and returns
	// what was stored and the new catalog version; ErrCatalogChanged, and
	// nothing stored, when the version is another. A frontier, when not
	// nil, is added as a candidate in the same transaction (the producer's
	// frontier after a change of definition: schedule.go).
	PutDataset(ctx context.Context, d Dataset, frontier *Candidate, version int64) (Dataset, int64, error)
	// PutJob creates or updates a job (already validated against the
	// catalog at version), keeping CreatedAt, if the catalog version is
	// still version (ErrCatalogChanged otherwise), and returns what was
	// stored and the new catalog version. When enqueue is true (the engine
	// decided the job is new or its inputs changed) it also adds a candidate
	// for the job at every dataid at which its first input's OUTPUT row is
	// READY; for a job with no inputs, nothing. A frontier, when not nil,
	// is added as a candidate in the same transaction (schedule.go).
	PutJob(ctx context.Context, j Job, enqueue bool, frontier *Candidate, version int64) (Job, int64, error)
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
	ListEvents(ctx context.Context, f EventFilter) (EventPage, error)
	WatchEvents(ctx context.Context, f EventFilter) (<-chan Event, error)

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

	// ListPools returns every defined pool (slot records of pools with
	// Slots >= 1), by id.
	ListPools(ctx context.Context) ([]Pool, error)

	// GetRecord and SwapRecord are Store.Record and Store.SwapRecord, the
	// key and value already checked; the swap is atomic.
	GetRecord(ctx context.Context, key string) (Record, error)
	SwapRecord(ctx context.Context, key string, value []byte, version int64) (Record, bool, error)

	Ping(ctx context.Context) error
	Close() error
}

// RowPeeker is implemented by transactions that can read status rows as a
// hint: as committed (and as this transaction wrote them), neither locked
// nor validated at commit, so that a later change to them neither waits
// nor fails the transaction. A sweep (a frontier walking rows that exist,
// schedule.go) reads the rows ahead of it so; without, it reads them with
// GetRows.
type RowPeeker interface {
	PeekRows(ctx context.Context, keys []RowKey) ([]*StatusRow, error)
}

// LatestReadyFinder is implemented by transactions that can find, as a
// hint (see RowPeeker), the READY chunk of dataset with the highest
// dataid in shortlex order from from (none when empty) to to, inclusive,
// in one ordered read, however many dataids between have no chunk. A
// chunk's status is that of its OUTPUT row of job, the dataset's producer
// ("" for a source): rows of other jobs (left by an earlier catalog) are
// not the chunk's.
type LatestReadyFinder interface {
	LatestReady(ctx context.Context, dataset, job, from, to string) (dataid string, ok bool, err error)
}

// peekRows reads rows as a hint through tx (RowPeeker), or with GetRows.
func peekRows(ctx context.Context, tx Tx, keys []RowKey) ([]*StatusRow, error) {
	if p, ok := tx.(RowPeeker); ok {
		return p.PeekRows(ctx, keys)
	}
	return tx.GetRows(ctx, keys)
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
	// NextCandidate returns the job's first candidate in (resubmit first,
	// then shortlex dataid) order among those due at now (NotBefore zero
	// or not after now) that no concurrent transaction is looking at, and
	// reserves it for this transaction; ok is false when there is none.
	// Candidates not yet due stay where they are and block nothing.
	NextCandidate(ctx context.Context, job string, now time.Time) (c Candidate, ok bool, err error)
	// DropCandidate removes the candidate NextCandidate returned (only that
	// entry, not duplicates added since). Dropping a frontier also drops
	// the job's other frontiers of the same kind (Resubmit) at the same
	// dataid that no transaction, this one included, has reserved: two
	// frontiers that meet merge, and the engine drops a reserved twin only
	// when it takes the dataid.
	DropCandidate(ctx context.Context, c Candidate) error

	// GetSlots reads slot records (slots.go) by key, given in ascending
	// order; nil for a record never written. With forUpdate the records
	// are locked until the transaction ends, exclusively (backends that
	// validate reads at commit track them instead): a transaction calls it
	// so at most once, after all its LockChunks calls. Without, the
	// records are read as committed at the transaction's start or later,
	// neither locked nor tracked: the caller accepts a stale answer.
	GetSlots(ctx context.Context, keys []string, forUpdate bool) ([]*Slots, error)
	// PutSlots writes a slot record read with forUpdate in this
	// transaction.
	PutSlots(ctx context.Context, s Slots) error
}

// Candidate is a hint that Job may be able to claim DataID. Handle is the
// backend's own reference to the entry (an id, a key).
type Candidate struct {
	Job      string
	DataID   string
	Resubmit bool
	// NotBefore, when not zero, hides the candidate from NextCandidate
	// until then: a failed chunk's retry time, a window's due time.
	NotBefore time.Time
	// Frontier marks the one candidate of a scheduled job (no inputs, an
	// output with a partition definition) that stands for the lowest
	// expected dataid the job has not claimed yet, and the sweeps of a job
	// reading through LATEST or ALL; a sweep with Resubmit looks for the
	// job's RESUBMIT outputs (schedule.go).
	Frontier bool
	Handle   any
}

type actorKey struct{}

// WithActor records who acts in ctx; events made under it carry the name.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor set by WithActor, or "system".
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return "system"
}
