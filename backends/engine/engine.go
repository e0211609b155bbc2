package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
)

// engine implements Store on a Backend. Every operation is written here
// once; backends only read and write rows.
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
}

// New builds the Store on a backend: its clock is the backend's
// (Backend.Clock) unless an option gives another.
func New(b backends.Backend, opts ...Option) backends.Store {
	o := options{clock: b.Clock()}
	for _, opt := range opts {
		opt(&o)
	}
	l := b.Limits()
	e := &engine{b: b, clock: o.clock, envAllow: o.envAllow, maxBatch: max(1, l.MaxBatch),
		maxKeys: l.MaxBatchKeys, maxBytes: l.MaxTxnBytes, commit: l.CommitBytes}
	e.maxRange = e.maxBatch
	if l.MaxRangeBatch > 0 && e.maxBatch > 1 {
		e.maxRange = l.MaxRangeBatch
	}
	e.live = batcher[*liveOp]{size: e.maxBatch, take: e.takeLive, run: e.runLive,
		inFlight: "it may have taken effect"}
	e.next = batcher[*nextOp]{size: e.maxBatch, take: e.takeNext, run: e.runNext,
		inFlight: "a chunk may have been claimed for it; that claim fails when its lease passes, with an attempt counted"}
	return e
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

func outputKey(job backends.Job, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: job.Output, DataID: dataid, Job: job.ID, Role: backends.RoleOutput}
}

// chunkOutputKey is the OUTPUT row of a chunk: written by its producer, or
// with an empty job for a source dataset.
func chunkOutputKey(cat *backends.Catalog, dataset, dataid string) backends.RowKey {
	return backends.RowKey{Dataset: dataset, DataID: dataid, Job: cat.Producer(dataset), Role: backends.RoleOutput}
}

func event(ctx context.Context, old *backends.StatusRow, r backends.StatusRow) backends.Event {
	from := backends.StatusNone
	if old != nil {
		from = old.Status
	}
	return backends.Event{
		Time: r.UpdatedAt, Actor: backends.ActorFrom(ctx), Job: r.Job, Dataset: r.Dataset, DataID: r.DataID,
		Role: r.Role, From: from, To: r.Status, Attempt: r.Attempt, Executor: r.Executor, Reason: r.Reason,
		ReadFor: r.ReadFor,
	}
}

// put writes a row and records the transition from old.
func put(ctx context.Context, tx backends.Tx, old *backends.StatusRow, r backends.StatusRow) error {
	if err := tx.PutRow(ctx, r); err != nil {
		return err
	}
	return tx.AppendEvent(ctx, event(ctx, old, r))
}

// del deletes a row and records the transition to "no row".
func del(ctx context.Context, tx backends.Tx, old backends.StatusRow, now time.Time, reason string) error {
	if err := tx.DeleteRow(ctx, old.RowKey); err != nil {
		return err
	}
	ev := event(ctx, &old, old)
	ev.Time, ev.To, ev.Reason, ev.Attempt = now, backends.StatusNone, reason, old.Attempt-1
	return tx.AppendEvent(ctx, ev)
}

// enqueueConsumers adds candidates for every job reading (dataset, dataid)
// whose output there is free for producers: the chunk just became READY.
// A consumer that reads the dataset through a mapping other than IDENTITY
// gets candidates at the outputs whose mapped set holds the chunk (the
// reverse mapping, enqueueMapped), so that findNext stays as cheap however
// long the history and however wide the window.
func enqueueConsumers(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string, now time.Time) error {
	consumers := cat.Consumers(dataset)
	if len(consumers) == 0 {
		return nil
	}
	keys := make([]backends.RowKey, 0, len(consumers))
	plain := make([]string, 0, len(consumers))
	for _, j := range consumers {
		job := cat.Jobs.Get(j)
		if k := job.Mapping(dataset).Kind; k != partition.Identity && k != "" {
			if err := enqueueMapped(ctx, tx, cat, job, dataset, dataid, now); err != nil {
				return err
			}
			continue
		}
		plain = append(plain, j)
		keys = append(keys, outputKey(job, dataid))
	}
	if len(keys) == 0 {
		return nil
	}
	outs, err := tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	for i, j := range plain {
		st := backends.StatusOf(outs[i])
		if !backends.FreeForProducers(st) {
			continue
		}
		if err := tx.AddCandidate(ctx, backends.Candidate{Job: j, DataID: dataid, Resubmit: st == backends.StatusResubmit}); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) Ping(ctx context.Context) error { return e.b.Ping(ctx) }
func (e *engine) Close() error                   { return e.b.Close() }
