// Package memory is an in-process Backend: everything in maps behind one
// mutex. It keeps nothing across restarts; it exists for unit tests of the
// layers above the store and as the simplest reading of the Backend
// contract. It takes the engine's paths that PostgreSQL takes (batches,
// live claims counted rather than listed in slot records), so that the
// conformance suite and its model exercise on memory what production runs.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Backend keeps every table in memory.
type Backend struct {
	mu sync.Mutex
	// loaded is when the first Load came: rows copied from another store
	// may be from before holds were checked (HoldsCheckedSince).
	loaded   time.Time
	datasets map[string]backends.Dataset
	jobs     map[string]backends.Job
	version  int64             // the catalog version: counts catalog changes
	producer map[string]string // dataset -> the job producing it
	creds    map[[2]string]backends.Credential
	rows     map[backends.RowKey]backends.StatusRow
	counts   map[[2]string]map[backends.Status]int    // (dataset, job) -> OUTPUT rows by status
	running  map[string]map[backends.RowKey]time.Time // job -> its OUTPUT rows in RUNNING, with their leases
	fences   map[[2]string]int64
	// fenceFloor is the fence every chunk without a counter of its own
	// starts above: a store loaded from one numbering all chunks from one
	// counter (PostgreSQL) may not know every chunk it fenced (dump.go).
	fenceFloor int64
	cands      map[int64]backends.Candidate
	candSeq    int64
	events     []backends.Event         // in Seq order
	eventSeq   int64                    // the last Seq given out: pruned events leave gaps
	changes    []backends.CatalogChange // catalog changes, oldest first (changes.go)
	locks      map[string]backends.ResourceLock
	lockSeq    int64
	slots      map[string]backends.Slots
	records    recordTable                       // records.go
	values     map[valueKey]map[string]time.Time // dynamic sets (dynamic.go)
	watchers   map[*watcher]struct{}
	closed     bool
}

type watcher struct {
	f  backends.EventFilter
	ch chan backends.Event
}

// What the backend implements (backends/backend.go): the paths of the
// engine that PostgreSQL takes, batches and counted live claims, so that
// the conformance suite on memory exercises what production runs.
var (
	_ backends.Backend     = (*Backend)(nil)
	_ backends.Tx          = (*tx)(nil)
	_ backends.LiveCounter = (*tx)(nil)
)

// New returns an empty backend.
func New() *Backend {
	return &Backend{
		datasets: map[string]backends.Dataset{},
		jobs:     map[string]backends.Job{},
		producer: map[string]string{},
		creds:    map[[2]string]backends.Credential{},
		rows:     map[backends.RowKey]backends.StatusRow{},
		counts:   map[[2]string]map[backends.Status]int{},
		running:  map[string]map[backends.RowKey]time.Time{},
		fences:   map[[2]string]int64{},
		cands:    map[int64]backends.Candidate{},
		locks:    map[string]backends.ResourceLock{},
		slots:    map[string]backends.Slots{},
		watchers: map[*watcher]struct{}{},
		values:   map[valueKey]map[string]time.Time{},
	}
}

// tx buffers writes until Update commits them.
type tx struct {
	b        *Backend
	rows     map[backends.RowKey]*backends.StatusRow // nil value: deleted
	fences   map[[2]string]int64
	addCands []backends.Candidate
	reserved map[int64]bool // candidates NextCandidates returned, by handle
	dropped  map[int64]bool
	events   []backends.Event
	slots    map[string]backends.Slots
	values   map[valueKey]map[string]time.Time // values written (zero time: removed)
}

func (b *Backend) Update(ctx context.Context, fn func(backends.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backends.Unavailable(nil, "store is closed")
	}
	t := &tx{b: b, rows: map[backends.RowKey]*backends.StatusRow{}, fences: map[[2]string]int64{}, dropped: map[int64]bool{}}
	if err := fn(t); err != nil {
		return err
	}
	for k, r := range t.rows {
		b.putRow(k, r)
	}
	for k, f := range t.fences {
		b.fences[k] = f
	}
	for k, s := range t.slots {
		b.slots[k] = s
	}
	b.commitValues(t)
	for id := range t.dropped {
		delete(b.cands, id)
	}
	for _, c := range t.addCands {
		b.candSeq++
		c.Handle = b.candSeq
		b.cands[b.candSeq] = c
	}
	b.recordChange(ctx, nil)
	for _, e := range t.events {
		b.eventSeq++
		e.Seq = b.eventSeq
		b.events = append(b.events, e)
		for w := range b.watchers {
			if matches(w.f, e) {
				select {
				case w.ch <- e:
				default: // a watcher that does not keep up misses events
				}
			}
		}
	}
	return nil
}

func (t *tx) LockChunks(context.Context, string, []string, []string) error { return nil }

func (t *tx) GetRows(_ context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	for i, k := range keys {
		if r, ok := t.rows[k]; ok {
			if r != nil {
				c := *r
				out[i] = &c
			}
			continue
		}
		if r, ok := t.b.rows[k]; ok {
			out[i] = &r
		}
	}
	return out, nil
}

// LatestReady finds the newest READY chunk of dataset between from and
// to (Tx.LatestReady), looking at every row.
func (t *tx) LatestReady(_ context.Context, dataset, job, from, to string) (string, bool, error) {
	best, found := "", false
	consider := func(k backends.RowKey, r *backends.StatusRow) {
		if k.Dataset != dataset || k.Role != backends.RoleOutput || k.Job != job || k.ReadFor != "" {
			return
		}
		if backends.CompareDataID(k.DataID, to) > 0 || (from != "" && backends.CompareDataID(k.DataID, from) < 0) {
			return
		}
		if found && backends.CompareDataID(k.DataID, best) <= 0 {
			return
		}
		if w, ok := t.rows[k]; ok {
			r = w // this transaction's write
		}
		if r != nil && r.Status == backends.StatusReady {
			best, found = k.DataID, true
		}
	}
	for k, r := range t.b.rows {
		consider(k, &r)
	}
	for k, r := range t.rows {
		if _, ok := t.b.rows[k]; !ok {
			consider(k, r)
		}
	}
	return best, found, nil
}

// PeekRows reads as GetRows does: transactions run one at a time.
func (t *tx) PeekRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	return t.GetRows(ctx, keys)
}

func (t *tx) ListReads(_ context.Context, dataset, dataid, job string) ([]backends.StatusRow, error) {
	byKey := map[backends.RowKey]*backends.StatusRow{}
	for k, r := range t.b.rows {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == backends.RoleInput && k.ReadFor != "" {
			byKey[k] = &r
		}
	}
	for k, r := range t.rows {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == backends.RoleInput && k.ReadFor != "" {
			byKey[k] = r
		}
	}
	return backends.SortedReads(byKey), nil
}

func (t *tx) PutRow(_ context.Context, r backends.StatusRow) error {
	t.rows[r.RowKey] = &r
	return nil
}

func (t *tx) DeleteRow(_ context.Context, k backends.RowKey) error {
	t.rows[k] = nil
	return nil
}

func (t *tx) NextFence(_ context.Context, dataset, dataid string) (int64, error) {
	k := [2]string{dataset, dataid}
	f, ok := t.fences[k]
	if !ok {
		f = max(t.b.fences[k], t.b.fenceFloor)
	}
	f++
	t.fences[k] = f
	return f, nil
}

func (t *tx) AppendEvent(_ context.Context, e backends.Event) error {
	t.events = append(t.events, e)
	return nil
}

// rowCursor is the position of a row in listing order.
func rowCursor(k backends.RowKey) string {
	c := k.Dataset + "\x00" + backends.SortKey(k.DataID) + "\x00" + string(k.Role) + "\x00" + k.Job
	if k.ReadFor != "" {
		c += "\x00" + backends.SortKey(k.ReadFor)
	}
	return c
}

func (b *Backend) ListRows(_ context.Context, f backends.ChunkFilter) (backends.ChunkPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var rows []backends.StatusRow
	for k, r := range b.rows {
		switch {
		case f.Dataset != "" && k.Dataset != f.Dataset,
			f.Job != "" && k.Job != f.Job,
			f.Role != "" && k.Role != f.Role,
			f.Status != "" && r.Status != f.Status,
			f.From != "" && backends.CompareDataID(k.DataID, f.From) < 0,
			f.To != "" && backends.CompareDataID(k.DataID, f.To) > 0,
			f.After != "" && rowCursor(k) <= f.After:
			continue
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b backends.StatusRow) int { return cmp.Compare(rowCursor(a.RowKey), rowCursor(b.RowKey)) })
	page := backends.ChunkPage{}
	if len(rows) > f.First {
		rows, page.HasNextPage = rows[:f.First], true
	}
	page.Rows = rows
	for _, r := range rows {
		page.Cursors = append(page.Cursors, rowCursor(r.RowKey))
	}
	return page, nil
}

func (b *Backend) ExpiredClaims(_ context.Context, now time.Time, limit int) ([]backends.RowKey, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backends.RowKey
	for k, r := range b.rows {
		if k.Role == backends.RoleOutput && r.Status == backends.StatusRunning && !now.Before(r.LeaseExpiresAt) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b backends.RowKey) int { return cmp.Compare(rowCursor(a), rowCursor(b)) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func matches(f backends.EventFilter, e backends.Event) bool {
	return (f.Dataset == "" || e.Dataset == f.Dataset) && (f.Job == "" || e.Job == f.Job) && (f.DataID == "" || e.DataID == f.DataID)
}

func (b *Backend) ListEvents(_ context.Context, f backends.EventFilter) (backends.EventPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var page backends.EventPage
	from, _ := slices.BinarySearchFunc(b.events, f.After+1, func(e backends.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	for _, e := range b.events[from:] {
		if !matches(f, e) {
			continue
		}
		if len(page.Events) == f.First {
			page.HasNextPage = true
			break
		}
		page.Events = append(page.Events, e)
	}
	return page, nil
}

func (b *Backend) DeleteEvents(ctx context.Context, evs []backends.Event) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, backends.Unavailable(nil, "store is closed")
	}
	drop := make(map[int64]bool, len(evs))
	for _, e := range evs {
		drop[e.Seq] = true
	}
	n := len(b.events)
	b.events = slices.DeleteFunc(b.events, func(e backends.Event) bool { return drop[e.Seq] })
	return n - len(b.events), nil
}

func (b *Backend) WatchEvents(ctx context.Context, f backends.EventFilter) (<-chan backends.Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := &watcher{f: f, ch: make(chan backends.Event, 1024)}
	for _, e := range b.events {
		if e.Seq > f.After && matches(f, e) {
			select {
			case w.ch <- e:
			default:
			}
		}
	}
	b.watchers[w] = struct{}{}
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.watchers[w]; ok {
			delete(b.watchers, w)
			close(w.ch)
		}
	}()
	return w.ch, nil
}

func (b *Backend) TakeResourceLock(_ context.Context, l backends.ResourceLock, now time.Time) (backends.ResourceLock, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if holders := backends.ResourceLockRefusers(slices.Collect(maps.Values(b.locks)), l, now); len(holders) > 0 {
		return backends.ResourceLock{}, backends.LockedResource(holders, l.Resource)
	}
	b.lockSeq++
	l.ID = fmt.Sprintf("rl%010d", b.lockSeq)
	b.locks[l.ID] = l
	return l, nil
}

func (b *Backend) DropResourceLock(_ context.Context, id, client string, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.locks[id]
	if !ok || !now.Before(l.ExpiresAt) {
		return backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	}
	if l.Client != client {
		return backends.Forbidden("resource lock %q is held by another client", id)
	}
	delete(b.locks, id)
	return nil
}

func (b *Backend) RenewResourceLock(_ context.Context, id, client string, expiresAt, now time.Time) (backends.ResourceLock, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.locks[id]
	if !ok || !now.Before(l.ExpiresAt) {
		return backends.ResourceLock{}, backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	}
	if l.Client != client {
		return backends.ResourceLock{}, backends.Forbidden("resource lock %q is held by another client", id)
	}
	l.ExpiresAt = expiresAt
	b.locks[id] = l
	return l, nil
}

func (b *Backend) ListResourceLocks(_ context.Context, f backends.ResourceLockFilter, now time.Time) ([]backends.ResourceLock, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []backends.ResourceLock{}
	for _, l := range b.locks {
		if !now.Before(l.ExpiresAt) ||
			(f.Resource != "" && l.Resource != f.Resource) ||
			(f.Client != "" && l.Client != f.Client) ||
			(f.Mode != "" && l.Mode != f.Mode) {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b backends.ResourceLock) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// maxBatch and maxRangeBatch are PostgreSQL's: operations per
// transaction, and chunks of a range per transaction.
const maxBatch, maxRangeBatch = 32, 256

// Limits serve batches, as PostgreSQL's do.
func (b *Backend) Limits() backends.Limits {
	return backends.Limits{MaxBatch: maxBatch, MaxRangeBatch: maxRangeBatch}
}

// Clock is the system clock.
func (b *Backend) Clock() backends.Clock { return backends.SystemClock{} }

func (b *Backend) Ping(context.Context) error { return nil }

func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for w := range b.watchers {
		close(w.ch)
		delete(b.watchers, w)
	}
	return nil
}

// String describes the backend for logs.
func (b *Backend) String() string { return "memory (" + strconv.Itoa(len(b.rows)) + " rows)" }
