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
//     while it is counted, or after, gets that count (its `at` says when it
//     was made), whatever the aliases and however many requests ask, until
//     a mutation goes through the server (Changed) or MaxAge passes (for
//     the changes made through other servers); then the next request
//     counts again;
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
	gate    chan struct{} // held while a count runs, and its rest

	mu      sync.Mutex
	gen     uint64 // bumped by every mutation (Changed)
	entries map[string]*summaryEntry
	// pruneAt is the number of entries at which those not asked for
	// since forgetAfter are dropped (datasets deleted or renamed).
	pruneAt int
}

// summaryEntry is one count of one dataset, made or under way.
type summaryEntry struct {
	def   partition.Def
	gen   uint64 // Summaries.gen when the count was asked for
	count backends.PartitionCount
	err   error
	done  chan struct{} // closed when the count ends
	ended time.Time     // wall clock; zero while the count runs
	asked time.Time     // wall clock of the latest request for it
}

// DefaultSummaryMaxAge is how long a count is shared by default.
const DefaultSummaryMaxAge = 5 * time.Second

// summaryTimeout bounds one count.
const summaryTimeout = time.Minute

// forgetAfter is how long a count nobody asks for is kept.
const forgetAfter = 10 * time.Minute

// maxRest bounds the rest after one count.
const maxRest = 10 * time.Second

// NewSummaries returns the counts of store, each shared for at most
// maxAge.
func NewSummaries(store backends.Store, maxAge time.Duration, log *slog.Logger) *Summaries {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Summaries{store: store, maxAge: maxAge, log: log, timeout: summaryTimeout,
		gate: make(chan struct{}, 1), entries: map[string]*summaryEntry{}, pruneAt: 64}
}

// Changed tells that chunks may have changed: the counts made or begun
// so far are not shared any more.
func (s *Summaries) Changed() {
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
}

// Count returns a count of dataset, whose definition is def: the one
// under way or made since the last change and within MaxAge, else a new
// one.
func (s *Summaries) Count(ctx context.Context, dataset string, def partition.Def) (backends.PartitionCount, error) {
	s.mu.Lock()
	e := s.entries[dataset]
	if e == nil || e.gen != s.gen || !reflect.DeepEqual(e.def, def) || (!e.ended.IsZero() && time.Since(e.ended) >= s.maxAge) {
		e = &summaryEntry{def: def, gen: s.gen, done: make(chan struct{})}
		s.entries[dataset] = e
		s.prune()
		go s.run(dataset, e)
	}
	e.asked = time.Now()
	s.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		return backends.PartitionCount{}, ctx.Err()
	}
	return e.count, e.err
}

// prune drops the entries nobody asked for since forgetAfter, once the
// entries doubled since the last prune; s.mu is held.
func (s *Summaries) prune() {
	if len(s.entries) < s.pruneAt {
		return
	}
	for id, e := range s.entries {
		if !e.ended.IsZero() && time.Since(e.asked) > forgetAfter {
			delete(s.entries, id)
		}
	}
	s.pruneAt = max(64, 2*len(s.entries))
}

// run counts dataset for e when no other count runs, then rests as long as
// the count took before it lets the next one start.
func (s *Summaries) run(dataset string, e *summaryEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		s.finish(dataset, e, backends.PartitionCount{},
			backends.Unavailable(ctx.Err(), "the server counts one dataset's partitions at a time and is busy; retry"))
		return
	}
	begin := time.Now()
	c, err := s.store.PartitionCounts(ctx, dataset)
	took := time.Since(begin)
	s.finish(dataset, e, c, err)
	time.Sleep(min(took, maxRest))
	<-s.gate
}

// finish keeps the count c (or err) in e, and tells its waiters.
func (s *Summaries) finish(dataset string, e *summaryEntry, c backends.PartitionCount, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.count, e.err, e.ended = c, err, time.Now()
	close(e.done)
	if err != nil && s.entries[dataset] == e {
		delete(s.entries, dataset) // the next request counts again
	}
}
