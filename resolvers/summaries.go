package resolvers

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Summaries counts the missing and late chunks of datasets
// (Store.PartitionCounts) for every request of a server and for its
// gauges, so that no request can make the server count more than the
// history holds:
//
//   - a count is shared: every request asking for a dataset's summary
//     within MaxAge of its count gets that count (its `at` says when it was
//     made), whatever the aliases, repeats and concurrent requests;
//   - an older count is answered as it is while a recount runs in the
//     background; only a dataset never counted (or whose definition
//     changed) makes its request wait for a count;
//   - counts are made one at a time per server, each followed by a rest as
//     long as it took: a count of ten years of hours reads about 88,000
//     rows, and however many requests ask, counts take at most half of one
//     core, so the other work of the server (claims, publishes, the reaper,
//     /readyz) keeps the rest of the machine.
type Summaries struct {
	store  backends.Store
	maxAge time.Duration
	log    *slog.Logger
	// timeout bounds one count, which runs apart from the requests that
	// asked for it (they may leave; the count is kept for the next).
	timeout time.Duration
	gate    chan struct{} // held while a count runs

	mu      sync.Mutex
	entries map[string]*summaryEntry
	// pruneAt is the number of entries at which those not asked for
	// since forgetAfter are dropped (datasets deleted or renamed).
	pruneAt int
}

// summaryEntry is the latest count of one dataset, or the first one in
// progress.
type summaryEntry struct {
	def       partition.Def
	count     backends.PartitionCount
	err       error
	countedAt time.Time     // wall clock; zero until the first count ends
	ready     chan struct{} // closed when the first count ends
	done      chan struct{} // while a count runs: closed when it ends
	asked     time.Time     // wall clock of the latest request for it
}

// forgetAfter is how long a count nobody asks for is kept.
const forgetAfter = 10 * time.Minute

// DefaultSummaryMaxAge is how long a count is shared by default.
const DefaultSummaryMaxAge = 5 * time.Second

// summaryTimeout bounds one count.
const summaryTimeout = time.Minute

// NewSummaries returns the counts of store, each shared for maxAge.
func NewSummaries(store backends.Store, maxAge time.Duration, log *slog.Logger) *Summaries {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Summaries{store: store, maxAge: maxAge, log: log, timeout: summaryTimeout,
		gate: make(chan struct{}, 1), entries: map[string]*summaryEntry{}, pruneAt: 64}
}

// prune drops the entries nobody asked for since forgetAfter, once the
// entries doubled since the last prune; s.mu is held.
func (s *Summaries) prune() {
	if len(s.entries) < s.pruneAt {
		return
	}
	for id, e := range s.entries {
		if e.done == nil && time.Since(e.asked) > forgetAfter {
			delete(s.entries, id)
		}
	}
	s.pruneAt = max(64, 2*len(s.entries))
}

// Count returns the count of dataset, whose definition is def: a shared
// one no older than MaxAge, an older one while it is recounted, or a new
// one when there is none for def.
func (s *Summaries) Count(ctx context.Context, dataset string, def partition.Def) (backends.PartitionCount, error) {
	return s.count(ctx, dataset, def, false)
}

// Fresh returns a count of dataset no older than MaxAge, waiting for a
// recount when the shared one is older (for the gauges, which ask once
// per refresh and have no request waiting).
func (s *Summaries) Fresh(ctx context.Context, dataset string, def partition.Def) (backends.PartitionCount, error) {
	return s.count(ctx, dataset, def, true)
}

func (s *Summaries) count(ctx context.Context, dataset string, def partition.Def, fresh bool) (backends.PartitionCount, error) {
	s.mu.Lock()
	e := s.entries[dataset]
	if e == nil || !reflect.DeepEqual(e.def, def) {
		e = &summaryEntry{def: def, ready: make(chan struct{})}
		s.entries[dataset] = e
		s.prune()
		s.start(dataset, e)
	} else if e.done == nil && !e.countedAt.IsZero() && time.Since(e.countedAt) >= s.maxAge {
		s.start(dataset, e)
	}
	wait := e.ready
	if fresh && e.done != nil {
		wait = e.done
	}
	e.asked = time.Now()
	s.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return backends.PartitionCount{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.count, e.err
}

// start counts dataset in the background for e; s.mu is held.
func (s *Summaries) start(dataset string, e *summaryEntry) {
	done := make(chan struct{})
	e.done = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		select {
		case s.gate <- struct{}{}:
		case <-ctx.Done():
			s.finish(dataset, e, done, backends.PartitionCount{},
				backends.Unavailable(ctx.Err(), "the server counts one dataset's partitions at a time and is busy; retry"))
			return
		}
		begin := time.Now()
		c, err := s.store.PartitionCounts(ctx, dataset)
		took := time.Since(begin)
		s.finish(dataset, e, done, c, err)
		// Rest as long as the count took before the next one starts:
		// counts take at most half of one core's time, however many
		// requests ask.
		time.Sleep(min(took, maxRest))
		<-s.gate
	}()
}

// maxRest bounds the rest after one count.
const maxRest = 10 * time.Second

// finish keeps the count c of dataset (or err) in e, and ends the count
// done.
func (s *Summaries) finish(dataset string, e *summaryEntry, done chan struct{}, c backends.PartitionCount, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.done = nil
	defer close(done)
	first := e.countedAt.IsZero()
	switch {
	case err == nil || first:
		e.count, e.err, e.countedAt = c, err, time.Now()
	default:
		s.log.Warn("recounting missing and late chunks", "dataset", dataset, "err", err)
	}
	if first {
		close(e.ready)
	}
	if err != nil && first && s.entries[dataset] == e {
		delete(s.entries, dataset) // the next request counts again
	}
}
