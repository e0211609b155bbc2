package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
)

// engine implements Store on a Backend (New, new.go, makes it). Every
// operation is written once, in the file named after what it does;
// backends only read and write rows. This file holds the engine's state
// and what its queues hold (batcher.go).
type engine struct {
	b        backends.Backend
	clock    backends.Clock
	cat      atomic.Pointer[versionedCatalog] // see catalogcache.go
	catMu    sync.Mutex                       // serialises catalog changes (changeCatalog)
	maxBatch int                              // Limits.MaxBatch; 1: no batches
	maxKeys  int                              // Limits.MaxBatchKeys; 0: no bound
	maxBytes int                              // Limits.MaxTxnBytes; 0: no bound
	commit   commitBytes                      // Limits.CommitBytes
	maxRange int                              // chunks of a range per transaction
	live     batcher[*liveOp]                 // see live.go
	next     batcher[*nextOp]                 // see next.go, by job
	// resumeSkip is set once ResumeBackfills has run every owed backfill,
	// and cleared when an upsert of this engine leaves one owed: until
	// then ResumeBackfills has nothing to look for (backfillmark.go).
	resumeSkip atomic.Bool
	// envAllow holds the env names the operator allows beyond envname's
	// rule (WithEnvAllow).
	envAllow envname.Allow
	// conform keeps rowsConform's answer by dataset (partitionkept.go).
	conform sync.Map
	// settled keeps findOldest's settledMemo by dataset.
	settled sync.Map
	// agreed holds, by dataset and producer, when the store's row count
	// last agreed with the kept counts (countsAgree), for agreedFor.
	agreed sync.Map
	// pruneFloor is where PruneEvents starts a sweep (retention.go).
	pruneFloor  atomic.Value
	pruneSweeps atomic.Int64 // sweeps begun (retention.go)
}

// expireBatch bounds how many expired claims one ExpireLeases call reads at once.
const expireBatch = 256

func (e *engine) catalog(ctx context.Context) (*backends.Catalog, error) {
	ds, js, err := e.b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return backends.NewCatalog(ds, js), nil
}

func (e *engine) Ping(ctx context.Context) error { return e.b.Ping(ctx) }
func (e *engine) Close() error                   { return e.b.Close() }

// versionedCatalog is a catalog and its version.
type versionedCatalog struct {
	cat     *backends.Catalog
	version int64
}

// commitBytes is what guarding the rows keyed guards, writing rows and
// cands, and recording events add to a commit (Limits.CommitBytes).
type commitBytes func(guards []backends.RowKey, rows []backends.StatusRow, cands []backends.Candidate, events []backends.Event) int

// liveClaim is what an operation on a live claim acts on, read in its
// transaction.
type liveClaim struct {
	cat    *backends.Catalog
	job    backends.Job
	out    backends.StatusRow    // the claim's OUTPUT row
	inputs []*backends.StatusRow // its INPUT rows, in job.Inputs order
	now    time.Time
	// slots gathers the slots that endings give back, for the whole
	// transaction (slots.go).
	slots slotReleases
}

// liveFn makes an operation's writes on a live claim. ctx carries the
// operation's actor; tx, the (possibly shared) transaction.
type liveFn func(ctx context.Context, tx backends.Tx, c liveClaim) error

// liveOp is one operation on a live claim waiting to be served.
type liveOp struct {
	call
	key backends.RowKey
	// token and fence name the claim; the reaper's operation has no token:
	// it ends whatever claim holds key once its lease has passed.
	token string
	fence int64
	// ending is how the operation ends the claim ("" for a heartbeat): a
	// repeat of the ending that already ended it answers as the first did.
	ending backends.Ending
	fn     liveFn
	acted  bool // the claim was live and fn made its writes
	// many marks an operation of a batch call (CompleteMany, ...): a
	// transaction serving one may serve up to a range's batch of them
	// (takeLive).
	many bool
}

// nextOp is one findNext or claimNext call waiting to be served.
type nextOp struct {
	call
	job      string
	executor string
	want     int               // the claims asked: 1 for findNext, max for claimNext
	claims   []*backends.Claim // made by the round under way
	got      []*backends.Claim // made by the rounds committed
}

// seatsLeft is how many more claims op asks for.
func (op *nextOp) seatsLeft() int {
	return max(1, op.want) - len(op.got) - len(op.claims)
}
