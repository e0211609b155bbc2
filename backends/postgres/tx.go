package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
)

// Update runs fn in one READ COMMITTED transaction. fn runs once: chunk
// locks make the transaction safe without retries. Writes are buffered
// and applied in one statement just before commit, together with the
// events, which get their seq there under a lock that makes seq grow with
// commit order.
func (b *Backend) Update(ctx context.Context, fn func(backends.Tx) error) error {
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
	t := &txn{b: b, q: b.q.WithTx(pgtx), rows: map[backends.RowKey]int{}}
	if err := fn(t); err != nil {
		return err
	}
	if err := t.flush(ctx, true); err != nil {
		return err
	}
	if err := pgtx.Commit(ctx); err != nil {
		return mapErr(err, "committing")
	}
	committed = true
	return nil
}

// txn is the backends.Tx of one Update. It buffers writes: reads of rows
// it wrote are answered from the buffer, and flush applies them all in one
// statement.
type txn struct {
	b *Backend
	q *sqldb.Queries
	// rowOps holds the last write of each row key in first-write order
	// (nil: delete); rows maps a key to its index in rowOps.
	rowOps    []rowOp
	rows      map[backends.RowKey]int
	addCands  []backends.Candidate
	dropCands []int64
	events    []backends.Event
}

type rowOp struct {
	key backends.RowKey
	row *backends.StatusRow
}

func (t *txn) setRow(k backends.RowKey, r *backends.StatusRow) {
	if i, ok := t.rows[k]; ok {
		t.rowOps[i].row = r
		return
	}
	t.rows[k] = len(t.rowOps)
	t.rowOps = append(t.rowOps, rowOp{key: k, row: r})
}

// flush applies the buffered row and queue writes and, with events, the
// buffered events, in one round trip.
func (t *txn) flush(ctx context.Context, withEvents bool) error {
	if !withEvents && len(t.rowOps) == 0 && len(t.addCands) == 0 && len(t.dropCands) == 0 {
		return nil
	}
	p := sqldb.ApplyWritesParams{Channel: eventsChannel, EventKey: t.b.eventKey, DropCandidateIds: t.dropCands}
	for _, op := range t.rowOps {
		k := op.key
		if op.row == nil {
			p.DelDatasets = append(p.DelDatasets, k.Dataset)
			p.DelDataids = append(p.DelDataids, k.DataID)
			p.DelJobs = append(p.DelJobs, k.Job)
			p.DelRoles = append(p.DelRoles, string(k.Role))
			continue
		}
		r := op.row
		p.RowDatasets = append(p.RowDatasets, k.Dataset)
		p.RowDataids = append(p.RowDataids, k.DataID)
		p.RowJobs = append(p.RowJobs, k.Job)
		p.RowRoles = append(p.RowRoles, string(k.Role))
		p.RowSortkeys = append(p.RowSortkeys, backends.SortKey(k.DataID))
		p.RowStatuses = append(p.RowStatuses, string(r.Status))
		p.RowAttempts = append(p.RowAttempts, int32(r.Attempt))
		p.RowExecutors = append(p.RowExecutors, r.Executor)
		p.RowTokens = append(p.RowTokens, r.Token)
		p.RowFences = append(p.RowFences, r.Fence)
		p.RowHasLease = append(p.RowHasLease, !r.LeaseExpiresAt.IsZero())
		p.RowLeases = append(p.RowLeases, r.LeaseExpiresAt)
		p.RowUpdated = append(p.RowUpdated, r.UpdatedAt)
		p.RowReasons = append(p.RowReasons, r.Reason)
		p.RowPrevStatuses = append(p.RowPrevStatuses, string(r.PrevStatus))
	}
	for _, c := range t.addCands {
		p.CandJobs = append(p.CandJobs, c.Job)
		p.CandResubmits = append(p.CandResubmits, c.Resubmit)
		p.CandSortkeys = append(p.CandSortkeys, backends.SortKey(c.DataID))
		p.CandDataids = append(p.CandDataids, c.DataID)
	}
	if withEvents {
		for _, e := range t.events {
			p.EventTimes = append(p.EventTimes, e.Time)
			p.EventActors = append(p.EventActors, e.Actor)
			p.EventJobs = append(p.EventJobs, e.Job)
			p.EventDatasets = append(p.EventDatasets, e.Dataset)
			p.EventDataids = append(p.EventDataids, e.DataID)
			p.EventRoles = append(p.EventRoles, string(e.Role))
			p.EventFrom = append(p.EventFrom, string(e.From))
			p.EventTo = append(p.EventTo, string(e.To))
			p.EventAttempts = append(p.EventAttempts, int32(e.Attempt))
			p.EventExecutors = append(p.EventExecutors, e.Executor)
			p.EventReasons = append(p.EventReasons, e.Reason)
		}
		t.events = nil
	}
	if len(p.RowDatasets)+len(p.DelDatasets)+len(p.CandJobs)+len(p.DropCandidateIds)+len(p.EventTimes) == 0 {
		return nil
	}
	t.rowOps, t.rows, t.addCands, t.dropCands = nil, map[backends.RowKey]int{}, nil, nil
	return mapErr(t.q.ApplyWrites(ctx, p), "writing")
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
	var p sqldb.GetRowsParams
	for _, k := range keys {
		if _, ok := t.rows[k]; ok {
			continue // written by this transaction: answered from the buffer below
		}
		p.Datasets = append(p.Datasets, k.Dataset)
		p.Dataids = append(p.Dataids, k.DataID)
		p.Jobs = append(p.Jobs, k.Job)
		p.Roles = append(p.Roles, string(k.Role))
	}
	if len(p.Datasets) == 0 {
		return t.fromBuffer(keys, out), nil
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
	return t.fromBuffer(keys, out), nil
}

// fromBuffer fills out with the rows this transaction wrote.
func (t *txn) fromBuffer(keys []backends.RowKey, out []*backends.StatusRow) []*backends.StatusRow {
	for i, k := range keys {
		if j, ok := t.rows[k]; ok {
			out[i] = nil
			if r := t.rowOps[j].row; r != nil {
				c := *r
				out[i] = &c
			}
		}
	}
	return out
}

// PutRow buffers an insert-or-replace of a row.
func (t *txn) PutRow(_ context.Context, r backends.StatusRow) error {
	t.setRow(r.RowKey, &r)
	return nil
}

// DeleteRow buffers the removal of a row.
func (t *txn) DeleteRow(_ context.Context, k backends.RowKey) error {
	t.setRow(k, nil)
	return nil
}

// NextFence takes the next value of one global sequence. The caller holds
// the chunk's exclusive lock, so fences strictly increase per chunk.
func (t *txn) NextFence(ctx context.Context, _, _ string) (int64, error) {
	f, err := t.q.NextFence(ctx)
	return f, mapErr(err, "taking a fencing number")
}

// AppendEvent buffers an event; it is inserted, and gets its seq, at commit.
func (t *txn) AppendEvent(_ context.Context, e backends.Event) error {
	t.events = append(t.events, e)
	return nil
}

// AddCandidate buffers an append to the findNext queue: a plain INSERT at
// commit, which never waits.
func (t *txn) AddCandidate(_ context.Context, c backends.Candidate) error {
	t.addCands = append(t.addCands, c)
	return nil
}

// NextCandidate locks the job's first candidate that no concurrent
// transaction holds (FOR UPDATE SKIP LOCKED); the lock lasts until the
// transaction ends.
func (t *txn) NextCandidate(ctx context.Context, job string) (backends.Candidate, bool, error) {
	if len(t.addCands) > 0 || len(t.dropCands) > 0 {
		// Let the query see this transaction's own queue changes.
		if err := t.flush(ctx, false); err != nil {
			return backends.Candidate{}, false, err
		}
	}
	r, err := t.q.NextCandidate(ctx, job)
	if errors.Is(err, pgx.ErrNoRows) {
		return backends.Candidate{}, false, nil
	}
	if err != nil {
		return backends.Candidate{}, false, mapErr(err, "reading the candidate queue")
	}
	return backends.Candidate{Job: job, DataID: r.Dataid, Resubmit: r.Resubmit, Handle: r.ID}, true, nil
}

// DropCandidate buffers the deletion of the one queue entry NextCandidate
// returned (by id: duplicates added since stay).
func (t *txn) DropCandidate(_ context.Context, c backends.Candidate) error {
	id, ok := c.Handle.(int64)
	if !ok {
		return fmt.Errorf("postgres: candidate handle %v (%T) did not come from NextCandidate", c.Handle, c.Handle)
	}
	t.dropCands = append(t.dropCands, id)
	return nil
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
