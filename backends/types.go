package backends

import (
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// Status is the status of a status row. OUTPUT rows use RUNNING, READY,
// FAILED, RESUBMIT and HOLD; INPUT rows use RUNNING, DONE and ERROR.
// StatusNone stands for "no row".
type Status string

const (
	StatusNone     Status = ""
	StatusRunning  Status = "RUNNING"
	StatusReady    Status = "READY"
	StatusFailed   Status = "FAILED"
	StatusResubmit Status = "RESUBMIT"
	StatusHold     Status = "HOLD"
	StatusDone     Status = "DONE"
	StatusError    Status = "ERROR"
)

// Role tells whether a status row is the producing (OUTPUT) or a consuming
// (INPUT) side of a chunk.
type Role string

const (
	RoleInput  Role = "INPUT"
	RoleOutput Role = "OUTPUT"
)

// Defaults applied to a job definition that leaves them zero.
const (
	DefaultMaxAttempts  = 3
	DefaultLeaseSeconds = 60
	// DefaultRetryMaxDelaySeconds caps the backoff of a job that sets none.
	DefaultRetryMaxDelaySeconds = 3600
	// DefaultResourceLockTTL is the lifetime of a resource lock whose TTL is not given.
	DefaultResourceLockTTL = time.Hour
	// MaxResourceLockTTL bounds a resource lock's lifetime from its taking
	// or renewal: every lock expires.
	MaxResourceLockTTL = 7 * 24 * time.Hour
	// ReasonLeaseExpired is the reason recorded when the reaper fails a claim.
	ReasonLeaseExpired = "lease expired"
)

// Bounds of stored text (SPEC §1 Text). Every stored string is also valid
// UTF-8 without NUL.
const (
	MaxDescriptionBytes = 4 << 10
	// MaxLocatorBytes bounds a dataset's url, connection and location.
	MaxLocatorBytes  = 2 << 10
	MaxEnvEntries    = 100
	MaxEnvValueBytes = 8 << 10
)

// Dataset locates a dataset: URL and Connection form its connection string,
// Location is a template with {dataid} that locates one chunk.
type Dataset struct {
	ID          string
	Description string
	URL         string
	Connection  string
	Location    string
	// Partitions is the set of dataids the dataset is expected to have
	// (SPEC §8); nil when it has no definition.
	Partitions *partition.Def
	// OutputKey is the job id the dataset's OUTPUT rows are keyed under
	// once the job that wrote them is deleted (SPEC §11, engine/doc.go):
	// its chunks stay readable under it, and the next job of any id
	// declared for the dataset keys its OUTPUT rows under it too
	// (Catalog.RowJob). Set once, by the first deletion; empty while the
	// dataset never lost a producer; the engine keeps it across upserts.
	OutputKey string
	// Pipeline names the pipeline whose `chunklock apply` created the
	// dataset (apply --prune deletes only those); "" for one created
	// otherwise. Set when the dataset is created, kept by every upsert
	// after (PipelineOf).
	Pipeline string
	// Retention, when not nil, is how long the dataset's events are kept,
	// in place of the server's setting (retention.go).
	Retention *Retention `json:",omitempty"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Job reads Inputs and writes Output, one dataid at a time. The location of
// the job's code is deliberately not part of it.
type Job struct {
	ID           string
	Description  string
	Inputs       []string
	Output       string
	Env          []EnvVar
	MaxAttempts  int
	LeaseSeconds int
	Paused       bool
	// RetryDelaySeconds is the backoff after a chunk's first failure,
	// doubling with every attempt up to RetryMaxDelaySeconds (SPEC §3 fail).
	RetryDelaySeconds    int
	RetryMaxDelaySeconds int
	// MaxConcurrent bounds the job's live claims; 0: no limit.
	MaxConcurrent int
	// Pool names the pool of slots the job's live claims share; "" for none.
	Pool string
	// InputMappings says, for inputs whose dataids differ from the output's,
	// which input dataids each output dataid reads (SPEC §9), in Inputs
	// order, at most one per input. An input without one is IDENTITY: the
	// output dataid reads the input chunk of the same dataid.
	InputMappings []InputMapping
	// Key is the job's public key material: enough to encrypt secrets to the
	// job, never enough to decrypt them. Set by the keys layer.
	Key JobKey
	// Pipeline names the pipeline whose apply created the job, as
	// Dataset.Pipeline.
	Pipeline  string
	CreatedAt time.Time
	UpdatedAt time.Time
	// acrossDims lists the inputs read across dimensions (SPEC §10's
	// default rules: partition.AcrossDimensions): those without a mapping
	// whose dimensions differ from the output's. The Catalog derives it
	// from the definitions; it is never stored.
	acrossDims []string
	// byDims lists those of them the default rules read as a mapping by
	// dimension with no entry (partition.ByDimensions): the tuples an
	// output reads are no run of the input's (a dimension read whole
	// before one read by value, dimensions read by value in another order,
	// hours read into days), which AcrossDimensions needs.
	byDims []string
}

// Declared is j without what the Catalog derives for it: the job as
// declared and stored.
func (j Job) Declared() Job {
	j.acrossDims, j.byDims = nil, nil
	return j
}

// InputMapping maps the output dataids of a job to the dataids of one of
// its inputs, Dataset, that each reads.
type InputMapping struct {
	Dataset           string `json:"dataset" yaml:"dataset"`
	partition.Mapping `yaml:",inline"`
}

// Mapping is the mapping of input dataset in: IDENTITY unless the job
// names another.
//
// An input whose entries name dimensions (SPEC §10: one entry per mapped
// dimension) is mapped by dimension (partition.ByDimensions).
func (j Job) Mapping(in string) partition.Mapping {
	var entries []partition.Mapping
	for _, m := range j.InputMappings {
		if m.Dataset == in {
			entries = append(entries, m.Mapping)
		}
	}
	if len(entries) == 1 && (!entries[0].Named() || entries[0].Kind == partition.Latest && entries[0].Dimension == "") {
		// One entry of section 9's: a LATEST one naming the output's
		// dimension it pairs with reads a one-dimensional input as
		// section 9's LATEST does (partition.validateLatestIntoDimensions).
		return entries[0]
	}
	if len(entries) > 0 {
		return partition.ByDimensions(entries)
	}
	if slices.Contains(j.byDims, in) {
		return partition.ByDimensions(nil)
	}
	if slices.Contains(j.acrossDims, in) {
		return partition.Mapping{Kind: partition.AcrossDimensions}
	}
	return partition.Mapping{Kind: partition.Identity}
}

// Mapped tells whether some input of the job is read through a mapping
// other than IDENTITY: only such jobs pay for mappings.
func (j Job) Mapped() bool {
	if len(j.acrossDims) > 0 {
		return true
	}
	for _, m := range j.InputMappings {
		if m.Kind != partition.Identity && m.Kind != "" || m.Named() {
			return true
		}
	}
	return false
}

// Lease is how long a claim of the job lives without a heartbeat.
func (j Job) Lease() time.Duration { return time.Duration(j.LeaseSeconds) * time.Second }

// EnvVar is one entry of a job's environment; order is kept as defined.
type EnvVar struct {
	Name  string
	Value string
}

// JobKey records which keyring a job's secrets are encrypted with and its
// public part (an age recipient, a Vault transit key name).
type JobKey struct {
	Kind   string
	Public string
}

// Credential is a dataset secret encrypted to one job's key.
type Credential struct {
	Job        string
	Dataset    string
	KeyKind    string
	Ciphertext []byte
	UpdatedAt  time.Time
}

// RowKey identifies a status row. Job is empty for chunks published into a
// source dataset.
//
// ReadFor is set on the INPUT row of a mapped read only (SPEC §9): the
// output dataid the job reads the chunk for, when it differs from the
// chunk's own dataid. A 7-day lookback reads one daily chunk for seven
// output chunks, and each of those reads is a job-local read lock of its
// own, taken by its own claim, made DONE or ERROR by that claim's ending and
// invalidated by a cascade on its own: the key (dataset, dataid, job) would
// merge them, so the output dataid joins the key. It stays empty when the
// output dataid equals the input dataid (every IDENTITY read), so that the
// rows of jobs without mappings keep the key they always had: they pay
// nothing for mappings, and stores written before mappings need no change
// of their rows.
type RowKey struct {
	Dataset string
	DataID  string
	Job     string
	Role    Role
	ReadFor string
}

// Read is one input chunk a claim reads: an input dataset and one of its
// dataids, which a mapping may make differ from the output dataid.
type Read struct {
	Dataset string
	DataID  string
}

// ReadKey is the INPUT row of job's read r for the output dataid dataid.
func ReadKey(job string, r Read, dataid string) RowKey {
	k := RowKey{Dataset: r.Dataset, DataID: r.DataID, Job: job, Role: RoleInput}
	if r.DataID != dataid {
		k.ReadFor = dataid
	}
	return k
}

// ReadForOf is the output dataid an INPUT row is read for.
func (k RowKey) ReadForOf() string {
	if k.ReadFor != "" {
		return k.ReadFor
	}
	return k.DataID
}

// StatusRow is one row of the status table, which is the lock table too:
// the locks on a chunk are derived from the rows on it (rules.go).
type StatusRow struct {
	RowKey
	Status   Status
	Attempt  int
	Executor string
	// Token is the opaque claim token of the claim that last wrote the row;
	// Fence is its fencing number.
	Token          string
	Fence          int64
	LeaseExpiresAt time.Time // zero unless RUNNING
	UpdatedAt      time.Time
	Reason         string
	// PrevStatus is what the row was before the claim that holds it
	// (StatusNone: there was no row), so that release can restore it.
	PrevStatus Status
	// RetryAt is when a FAILED chunk may be claimed again (zero: at once).
	RetryAt time.Time
	// Ended tells how the claim named by Token ended, on an OUTPUT row
	// that claim's ending wrote; empty on a row written otherwise (a live
	// claim, publish, resubmit, hold). A repeated complete, fail or release
	// reads it to answer as the first call did (SPEC §3 "Retries are safe").
	Ended Ending
	// Reads lists, on the RUNNING OUTPUT row of a claim of a job with
	// mappings, every input chunk the claim reads: its ending finds the
	// claim's INPUT rows there (a LATEST read cannot be computed again).
	// Nil on every other row.
	Reads []Read
}

// Claim is one executor's right to produce one output chunk.
type Claim struct {
	Token  string
	Fence  int64
	Job    string
	Output string // output dataset
	Inputs []string
	// Reads lists every input chunk the claim reads, in input order and,
	// within an input, in dataid order: one per input at DataID for a job
	// without mappings, the mapped set of each input otherwise (SPEC §9).
	Reads          []Read
	DataID         string
	Attempt        int
	Executor       string
	LeaseExpiresAt time.Time
	// Datasets holds the definitions of the output dataset, then of each
	// input, and Env the job's environment, as the catalog version of the
	// claim's own transaction had them: a claim's answer never needs a
	// read after its commit (SPEC §3 "Retries are safe").
	Datasets []Dataset
	Env      []EnvVar
}

// Event records one status transition. Seq increases with every event the
// store records and is the cursor for paging and watching.
type Event struct {
	Seq      int64
	Time     time.Time
	Actor    string
	Job      string
	Dataset  string
	DataID   string
	Role     Role
	From     Status
	To       Status
	Attempt  int
	Executor string
	Reason   string
	// ReadFor is the row's RowKey.ReadFor: the output dataid an INPUT row
	// of a mapped read is read for (SPEC §9), empty otherwise.
	ReadFor string
}

// LockMode is the mode of a resource lock.
type LockMode string

const (
	LockRead  LockMode = "READ"
	LockWrite LockMode = "WRITE"
)

// ResourceLock is a named soft lock on a resource URI held by a client.
type ResourceLock struct {
	ID        string
	Client    string
	Resource  string
	Mode      LockMode
	CreatedAt time.Time
	ExpiresAt time.Time
}

// LockKind names a lock derived from the status rows.
type LockKind string

const (
	// LockGlobalRead: consumers may not read the chunk.
	LockGlobalRead LockKind = "GLOBAL_READ"
	// LockGlobalWrite: producers may not write the chunk.
	LockGlobalWrite LockKind = "GLOBAL_WRITE"
	// LockLocalRead: the holder job may not consume the chunk again.
	LockLocalRead LockKind = "LOCAL_READ"
)

// Lock is a derived lock on one chunk, held by Job (empty for a published
// source chunk) because of a row in Status.
type Lock struct {
	Dataset string
	DataID  string
	Kind    LockKind
	Job     string
	Status  Status
	// ReadFor is, on a LOCAL_READ lock, the output dataid the holder reads
	// the chunk for: the chunk's own dataid, unless a mapping (SPEC §9)
	// reads it for another. Empty on global locks.
	ReadFor string
}

// BlockerKind says why a chunk cannot be claimed.
type BlockerKind string

const (
	// BlockerInputNotReady: an input chunk's OUTPUT row is not READY (its
	// global read lock is held, or it was never produced).
	BlockerInputNotReady BlockerKind = "INPUT_NOT_READY"
	// BlockerOutputLocked: the output chunk is not free for producers.
	BlockerOutputLocked BlockerKind = "OUTPUT_LOCKED"
	// BlockerLocalRead: the job holds a job-local read lock on an input chunk.
	BlockerLocalRead BlockerKind = "LOCAL_READ"
	// BlockerPaused: the job is paused.
	BlockerPaused BlockerKind = "PAUSED"
	// BlockerNoInputs: a job without inputs is claimed by dataid only.
	BlockerNoInputs BlockerKind = "NO_INPUTS"
	// BlockerNotDue: the output chunk's window is not due yet (Until);
	// for a DYNAMIC output, the value is not due yet (Until), or not in
	// the set (no Until).
	BlockerNotDue BlockerKind = "NOT_DUE"
	// BlockerBackoff: the output chunk failed and may be retried from Until.
	BlockerBackoff BlockerKind = "BACKOFF"
	// BlockerConcurrency: the job is at its maxConcurrent live claims, or
	// its pool has no free slot.
	BlockerConcurrency BlockerKind = "CONCURRENCY"
)

// Blocker is one reason a job cannot claim a dataid now: the row (or the
// missing row) at Dataset/DataID for Job, and its Status.
type Blocker struct {
	Dataset string
	DataID  string
	Job     string
	Kind    BlockerKind
	Status  Status
	// Until is when the blocker lifts by itself (NOT_DUE: the due time;
	// BACKOFF: the retry time); zero when no time is known.
	Until time.Time
	// Pool names the pool without a free slot (CONCURRENCY); empty when
	// the job's own maxConcurrent is reached.
	Pool string
}

// ChunkDetail is one chunk with every status row on it and its derived locks.
type ChunkDetail struct {
	Dataset string
	DataID  string
	// Output is the chunk's OUTPUT row; nil when it was never produced.
	Output *StatusRow
	// Rows holds the OUTPUT row and every consumer's INPUT row on the chunk.
	Rows  []StatusRow
	Locks []Lock
}

// ChunkFilter selects status rows. Empty fields do not filter. From and To
// bound the dataid inclusively in shortlex order.
type ChunkFilter struct {
	Dataset string
	Job     string
	Role    Role
	Status  Status
	From    string
	To      string
	// First is the page size (DefaultPageSize when 0, at most MaxPageSize).
	First int
	// After is the cursor of the last row of the previous page.
	After string
}

// ChunkPage is one page of status rows in (dataset, dataid, role, job) order.
type ChunkPage struct {
	Rows []StatusRow
	// Cursors[i] is the cursor of Rows[i].
	Cursors     []string
	HasNextPage bool
}

// EventFilter selects events. Empty fields do not filter.
type EventFilter struct {
	Dataset string
	Job     string
	DataID  string
	// After is the Seq of the last event already seen.
	After int64
	First int
}

// EventPage is one page of events in Seq order.
type EventPage struct {
	Events      []Event
	HasNextPage bool
}

// LockFilter selects derived locks by chunk dataset and holder job.
type LockFilter struct {
	Dataset string
	Job     string
}

// ResourceLockFilter selects resource locks.
type ResourceLockFilter struct {
	Resource string
	Client   string
	Mode     LockMode
}

// Page sizes for the paged read models.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// PageSize clamps a requested page size.
func PageSize(first int) int {
	switch {
	case first <= 0:
		return DefaultPageSize
	case first > MaxPageSize:
		return MaxPageSize
	}
	return first
}

// GraphNodeKind and GraphEdgeKind describe the lock graph.
type GraphNodeKind string

const (
	NodeJob     GraphNodeKind = "JOB"
	NodeDataset GraphNodeKind = "DATASET"
	NodeChunk   GraphNodeKind = "CHUNK"
)

type GraphEdgeKind string

const (
	EdgeReads  GraphEdgeKind = "READS"
	EdgeWrites GraphEdgeKind = "WRITES"
)

// GraphNode is a job, a dataset or a chunk (dataset + dataid). ID is unique
// in the graph: "job:<id>", "dataset:<id>", "chunk:<dataset>/<dataid>".
type GraphNode struct {
	ID      string
	Kind    GraphNodeKind
	Job     string
	Dataset string
	DataID  string
	// Status of a chunk node: its OUTPUT row's status (StatusNone: no row).
	Status Status
}

// GraphEdge goes from a job to what it reads or writes. Between a job and a
// chunk it carries the status of the job's row on the chunk and the lock
// that row implies (none when the row implies no lock).
type GraphEdge struct {
	From   string
	To     string
	Kind   GraphEdgeKind
	Locks  []LockKind
	Status Status
	// Mapping is, on a READS edge from a job to a dataset, the mapping the
	// job reads it through; nil when it reads one to one (IDENTITY).
	Mapping *InputMapping
}

// LockGraph is the subgraph of jobs, datasets and chunks around a filter.
type LockGraph struct {
	Nodes []GraphNode
	Edges []GraphEdge
}

// GraphFilter centres the lock graph: on a job (its inputs and output), on a
// dataset (its producer and consumers), and with DataID on that dataid's
// chunks. All empty: every job and dataset, no chunks.
type GraphFilter struct {
	Job     string
	Dataset string
	DataID  string
}

// MaxReasonBytes bounds a failure or hold reason; longer ones keep their tail.
const MaxReasonBytes = 4096

// Ending is how a live claim ends; the OUTPUT row that the ending writes
// records it (StatusRow.Ended).
type Ending string

const (
	EndComplete Ending = "COMPLETE" // OUTPUT READY, INPUT DONE
	EndFail     Ending = "FAIL"     // OUTPUT FAILED (HOLD once attempts are exhausted), INPUT ERROR
	EndExpire   Ending = "EXPIRE"   // as EndFail, by the reaper once the lease passed
	EndRelease  Ending = "RELEASE"  // rows back to what they were before the claim
)
