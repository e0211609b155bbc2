package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Update runs fn in one READ COMMITTED transaction. fn runs once: chunk
// locks make the transaction safe without retries. The events fn records
// are inserted just before commit, under a lock that makes their seq grow
// with commit order.
func (b *Backend) Update(ctx context.Context, fn func(backends.Tx) error) (err error) {
	if err := b.usable(ctx); err != nil {
		return err
	}
	pgtx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return mapErr(err, "starting a transaction")
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = pgtx.Rollback(rctx) // on failure pgx closes the connection, which rolls back too
	}()
	t := &txn{b: b, q: b.q.WithTx(pgtx)}
	if err := fn(t); err != nil {
		return err
	}
	if err := t.insertEvents(ctx); err != nil {
		return err
	}
	if err := pgtx.Commit(ctx); err != nil {
		return mapErr(err, "committing")
	}
	committed = true
	return nil
}

// txn is the backends.Tx of one Update.
type txn struct {
	b      *Backend
	q      *sqldb.Queries
	events []backends.Event
}

// LockChunks takes the advisory lock of every chunk (dataset, dataid):
// exclusive for the datasets in exclusive, shared for the others, in
// ascending dataset order, in one round trip. The locks last until the
// transaction ends.
func (t *txn) LockChunks(ctx context.Context, dataid string, exclusive, shared []string) error {
	mode := make(map[string]bool, len(exclusive)+len(shared))
	for _, d := range shared {
		mode[d] = false
	}
	for _, d := range exclusive {
		mode[d] = true // exclusive wins over shared
	}
	if len(mode) == 0 {
		return nil
	}
	datasets := make([]string, 0, len(mode))
	for d := range mode {
		datasets = append(datasets, d)
	}
	slices.Sort(datasets)
	excl := make([]bool, len(datasets))
	for i, d := range datasets {
		excl[i] = mode[d]
	}
	err := t.q.LockChunks(ctx, sqldb.LockChunksParams{Datasets: datasets, Dataid: dataid, Salt: t.b.salt, Exclusive: excl})
	return mapErr(err, "locking chunks")
}

// GetRows reads the rows named by keys in one query.
func (t *txn) GetRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	p := sqldb.GetRowsParams{
		Datasets: make([]string, len(keys)), Dataids: make([]string, len(keys)),
		Jobs: make([]string, len(keys)), Roles: make([]string, len(keys)),
	}
	for i, k := range keys {
		p.Datasets[i], p.Dataids[i], p.Jobs[i], p.Roles[i] = k.Dataset, k.DataID, k.Job, string(k.Role)
	}
	rows, err := t.q.GetRows(ctx, p)
	if err != nil {
		return nil, mapErr(err, "reading status rows")
	}
	found := make(map[backends.RowKey]*backends.StatusRow, len(rows))
	for _, r := range rows {
		sr := rowFromDB(r)
		found[sr.RowKey] = &sr
	}
	for i, k := range keys {
		if r, ok := found[k]; ok {
			c := *r
			out[i] = &c
		}
	}
	return out, nil
}

// PutRow inserts or replaces a row.
func (t *txn) PutRow(ctx context.Context, r backends.StatusRow) error {
	err := t.q.PutRow(ctx, sqldb.PutRowParams{
		Dataset: r.Dataset, Dataid: r.DataID, Job: r.Job, Role: string(r.Role),
		Sortkey: backends.SortKey(r.DataID), Status: string(r.Status), Attempt: int32(r.Attempt),
		Executor: r.Executor, Token: r.Token, Fence: r.Fence, LeaseExpiresAt: tsOrNull(r.LeaseExpiresAt),
		UpdatedAt: r.UpdatedAt, Reason: r.Reason, PrevStatus: string(r.PrevStatus),
	})
	return mapErr(err, "writing a status row")
}

// DeleteRow removes a row if it exists.
func (t *txn) DeleteRow(ctx context.Context, k backends.RowKey) error {
	err := t.q.DeleteRow(ctx, sqldb.DeleteRowParams{Dataset: k.Dataset, Dataid: k.DataID, Job: k.Job, Role: string(k.Role)})
	return mapErr(err, "deleting a status row")
}

// NextFence takes the next value of one global sequence. The caller holds
// the chunk's exclusive lock, so fences strictly increase per chunk.
func (t *txn) NextFence(ctx context.Context, _, _ string) (int64, error) {
	f, err := t.q.NextFence(ctx)
	return f, mapErr(err, "taking a fencing number")
}

// AppendEvent buffers an event; Update inserts the buffer before commit.
func (t *txn) AppendEvent(_ context.Context, e backends.Event) error {
	t.events = append(t.events, e)
	return nil
}

// insertEvents records the buffered events and notifies listeners. The
// event-log lock is held from here to commit, so a transaction that took
// smaller seqs always commits before one that takes larger ones: a reader
// that has seen seq n will never see a smaller seq appear later.
func (t *txn) insertEvents(ctx context.Context) error {
	if len(t.events) == 0 {
		return nil
	}
	if err := t.q.LockEventLog(ctx, t.b.eventKey); err != nil {
		return mapErr(err, "locking the event log")
	}
	n := len(t.events)
	p := sqldb.InsertEventsParams{
		Channel: eventsChannel, Times: make([]time.Time, n), Actors: make([]string, n), Jobs: make([]string, n),
		Datasets: make([]string, n), Dataids: make([]string, n), Roles: make([]string, n),
		FromStatuses: make([]string, n), ToStatuses: make([]string, n), Attempts: make([]int32, n),
		Executors: make([]string, n), Reasons: make([]string, n),
	}
	for i, e := range t.events {
		p.Times[i], p.Actors[i], p.Jobs[i], p.Datasets[i], p.Dataids[i] = e.Time, e.Actor, e.Job, e.Dataset, e.DataID
		p.Roles[i], p.FromStatuses[i], p.ToStatuses[i] = string(e.Role), string(e.From), string(e.To)
		p.Attempts[i], p.Executors[i], p.Reasons[i] = int32(e.Attempt), e.Executor, e.Reason
	}
	return mapErr(t.q.InsertEvents(ctx, p), "recording events")
}

// AddCandidate appends to the findNext queue. A plain INSERT: it never waits.
func (t *txn) AddCandidate(ctx context.Context, c backends.Candidate) error {
	err := t.q.AddCandidate(ctx, sqldb.AddCandidateParams{Job: c.Job, Resubmit: c.Resubmit, Sortkey: backends.SortKey(c.DataID), Dataid: c.DataID})
	return mapErr(err, "queueing a candidate")
}

// NextCandidate locks the job's first candidate that no concurrent
// transaction holds (FOR UPDATE SKIP LOCKED); the lock lasts until the
// transaction ends.
func (t *txn) NextCandidate(ctx context.Context, job string) (backends.Candidate, bool, error) {
	r, err := t.q.NextCandidate(ctx, job)
	if errors.Is(err, pgx.ErrNoRows) {
		return backends.Candidate{}, false, nil
	}
	if err != nil {
		return backends.Candidate{}, false, mapErr(err, "reading the candidate queue")
	}
	return backends.Candidate{Job: job, DataID: r.Dataid, Resubmit: r.Resubmit, Handle: r.ID}, true, nil
}

// DropCandidate deletes the one queue entry NextCandidate returned.
func (t *txn) DropCandidate(ctx context.Context, c backends.Candidate) error {
	id, ok := c.Handle.(int64)
	if !ok {
		return fmt.Errorf("postgres: candidate handle %v (%T) did not come from NextCandidate", c.Handle, c.Handle)
	}
	return mapErr(t.q.DropCandidate(ctx, id), "dropping a candidate")
}

// rowFromDB converts a stored status row.
func rowFromDB(r sqldb.StatusRow) backends.StatusRow {
	out := backends.StatusRow{
		RowKey:     backends.RowKey{Dataset: r.Dataset, DataID: r.Dataid, Job: r.Job, Role: backends.Role(r.Role)},
		Status:     backends.Status(r.Status),
		Attempt:    int(r.Attempt),
		Executor:   r.Executor,
		Token:      r.Token,
		Fence:      r.Fence,
		UpdatedAt:  r.UpdatedAt.UTC(),
		Reason:     r.Reason,
		PrevStatus: backends.Status(r.PrevStatus),
	}
	if r.LeaseExpiresAt.Valid {
		out.LeaseExpiresAt = r.LeaseExpiresAt.Time.UTC()
	}
	return out
}

// tsOrNull stores a zero time as NULL.
func tsOrNull(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}
