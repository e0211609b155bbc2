package backends

import (
	"context"
	"time"
)

// Store is chunklock's storage API: everything the GraphQL layer, the reaper
// and the runner commands do. Build one with engine.New over a Backend; every
// operation below behaves the same on every backend (the conformance suite in
// backendtest checks it).
//
// Every write is atomic: a claim, a completion or a cascade is applied whole
// or not at all, under any concurrency. Errors are *Error values with a Code
// (NOT_FOUND, INVALID_ARGUMENT, LOCKED, STALE_CLAIM, ...) or, for failures to
// reach the store, UNAVAILABLE. The actor recorded in events comes from the
// context (WithActor).
type Store interface {
	EventPruner
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

	// Runner pools (SPEC §6): one call for many claims of one runner.
	//
	// ClaimNext makes up to max claims of a job, by FindNext's rules and
	// in its order (the claims a call returns are those as many FindNext
	// calls in a row would make), maxConcurrent and pool slots counted
	// over the whole batch; each claim has its own token and fence. It
	// makes them in one transaction when the job's first candidates are
	// claimable and fit in one (on a backend whose transactions hold a
	// bounded number of keys, Limits.MaxBatchKeys), and goes on in more
	// otherwise (a candidate that was a stale hint, a schedule whose next
	// dataid one candidate stands for): every claim of a transaction that
	// committed is answered, even when a later one fails. It returns fewer
	// than max only when no more are claimable now or the job or its pool
	// has no free slot; none for a paused job. max is 1 to MaxClaimNext
	// (INVALID_ARGUMENT otherwise).
	ClaimNext(ctx context.Context, job, executor string, max int) ([]*Claim, error)
	// CompleteMany, FailMany and HeartbeatMany apply Complete, Fail and
	// Heartbeat to each token, all or nothing for each one, and answer
	// one TokenResult per token in the order given: a stale or malformed
	// token fails alone, with the error the single operation answers.
	// Repeating a batch whose answer was lost answers as the single
	// operations do (SPEC §3). The error is for the call itself: a list
	// longer than MaxManyTokens (INVALID_ARGUMENT).
	CompleteMany(ctx context.Context, tokens []string) ([]TokenResult, error)
	FailMany(ctx context.Context, items []FailItem) ([]TokenResult, error)
	HeartbeatMany(ctx context.Context, tokens []string) ([]TokenResult, error)
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
	// QueueLength tells how many findNext candidates job has, hidden ones
	// (not due yet) included: the length of the queue that a schedule
	// keeps flat (one frontier, however long its definition), for
	// operators and tests.
	QueueLength(ctx context.Context, job string) (int, error)
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
	// At most MaxRangeDataIDs dataids per call (see backends/engine/rangeops.go).
	PublishRange(ctx context.Context, dataset, from, to string) (RangeResult, error)
	ResubmitRange(ctx context.Context, dataset, from, to string, cascade bool) (RangeResult, error)
	HoldRange(ctx context.Context, dataset, from, to, reason string) (RangeResult, error)
	// SlicedRange is one of them over the tuples of a slice of a dataset
	// with dimensions (SPEC §10): from and to may be values of its first
	// dimension.
	SlicedRange(ctx context.Context, r RangeRequest) (RangeResult, error)

	// AddPartitions adds values to the set of a DYNAMIC partition
	// definition (SPEC §10): dimension is "" for a one-dimensional dataset.
	// A value already in the set is skipped (listed with its reason), the
	// others are added, each due at now + lag; from is for a DYNAMIC
	// dimension beside a time dimension (a backfill) and INVALID_ARGUMENT
	// for a one-dimensional dataset; a job without inputs
	// producing the dataset claims each of them once. At most
	// MaxPartitionValues values a call (INVALID_ARGUMENT beyond, or for a
	// dataset whose definition is not DYNAMIC). Each value is all or
	// nothing; the call is recorded as a catalog change of the dataset.
	AddPartitions(ctx context.Context, dataset string, values []string, dimension, from string) (RangeResult, error)
	// RemovePartitions removes values from a dynamic set; a value not in
	// it is skipped. The chunks of a removed value stay (listed by Chunks),
	// as when any definition changes; it is no longer expected, nor
	// claimed by a job without inputs.
	RemovePartitions(ctx context.Context, dataset string, values []string, dimension string) (RangeResult, error)

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
	// ValueCounts counts the missing and late dataids of a dataset with
	// dimensions by value of one STATIC or DYNAMIC dimension (SPEC §10):
	// a page of values in shortlex order, each with its counts and oldest
	// missing and late dataids.
	ValueCounts(ctx context.Context, f ValueCountFilter) (ValueCountPage, error)
	// ChunkCounts counts a dataset's chunks by status (its producer's
	// OUTPUT rows), without reading them through the caller: NOT_FOUND for
	// an unknown dataset.
	ChunkCounts(ctx context.Context, dataset string) (ChunkCount, error)
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
	// CatalogChanges lists the recorded catalog changes (SPEC §11) newest
	// first, paged (f.First up to MaxChangesPage, f.After a cursor of a
	// change listed before), filtered by dataset, job and actor.
	CatalogChanges(ctx context.Context, f ChangeFilter) (ChangePage, error)
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

	// PauseJob pauses a job (SPEC §11): from the commit on, no replica
	// grants it a claim (FindNext answers nil, Claim is LOCKED with a
	// PAUSED blocker); its live claims run to their end. ResumeJob lets it
	// claim again. Both answer the job as stored, and NOT_FOUND for an
	// unknown job; pausing a paused job (resuming a running one) changes
	// nothing.
	PauseJob(ctx context.Context, id string) (Job, error)
	ResumeJob(ctx context.Context, id string) (Job, error)

	// DeleteJob removes a job (SPEC §11): its key, credentials, queue,
	// INPUT rows (its reads) and backfill record. LOCKED, each blocker one
	// of them, while it has live claims (RUNNING OUTPUT rows); NOT_FOUND for
	// an unknown job. The chunks it produced stay, READY ones readable by
	// consumers: its output keeps them keyed under the id of the first job
	// deleted (Dataset.OutputKey), and the next job declared for it, of any
	// id, takes them over without recomputing READY ones. From the commit on, no
	// replica grants the job a claim.
	DeleteJob(ctx context.Context, id string) error
	// DeleteDataset removes a dataset with its status rows and credentials
	// (SPEC §11); its events stay, and its fences (a dataset declared again
	// under the id never repeats a token). LOCKED, naming them, while a job
	// reads or writes it; INVALID_ARGUMENT, naming how many, when it has
	// chunks and deleteChunks is false; NOT_FOUND for an unknown dataset.
	DeleteDataset(ctx context.Context, id string, deleteChunks bool) error

	// DeletePool removes a pool (SPEC §11): LOCKED, naming them, while a
	// job names it; NOT_FOUND for an unknown pool.
	DeletePool(ctx context.Context, id string) error

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
