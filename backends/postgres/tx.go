package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Update runs fn in one READ COMMITTED transaction on one pooled
// connection. fn runs once: chunk locks make the transaction safe without
// retries.
//
// The transaction's statements are pipelined, so that the round trips are
// the ones the engine cannot avoid. BEGIN and the read of the catalog
// version travel with the first statement; chunk locks travel with the
// statement after them (a read, which PostgreSQL runs after the locks are
// granted, with a fresh snapshot); writes are buffered and applied in one
// statement sent together with COMMIT. A findNext takes three round trips
// (candidate; locks, fence and reads; writes and commit), a completion two.
func (b *Backend) Update(ctx context.Context, fn func(backends.Tx) error) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return mapErr(err, "starting a transaction")
	}
	// A connection left inside a transaction (a failed rollback) is
	// destroyed by Release rather than reused.
	defer conn.Release()
	t := &txn{b: b, conn: conn, rows: map[backends.RowKey]int{}}
	t.q = sqldb.New(pipe{t})
	committed := false
	defer func() {
		if !committed {
			t.rollback(ctx)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	t.enqueueValues()
	if args := changeArgs(ctx, nil); args != nil {
		t.enqueue(insertChangeSQL, args, nil)
	}
	hadEvents := len(t.events) > 0
	if err := t.commit(ctx); err != nil {
		return err
	}
	committed = true
	t.slotRowsCommitted()
	if hadEvents {
		b.eventsCommitted()
	}
	return nil
}

// txn is the backends.Tx of one Update. It buffers writes: reads of rows
// it wrote are answered from the buffer, and flush applies them all in one
// statement.
type txn struct {
	b    *Backend
	conn *pgxpool.Conn
	q    *sqldb.Queries // runs each statement through pipe, after the queued ones

	begun         bool     // BEGIN has been sent
	queued        []queued // statements to send ahead of the next one
	trailer       string   // statement to send after the next Exec (COMMIT)
	version       int64    // catalog version read in this transaction, when haveVersion
	haveVersion   bool
	fences        map[string]int64 // fencing numbers drawn right after a chunk's exclusive lock, by chunk
	tookCandidate bool             // NextCandidates returned an entry: a claim, which needs a fence, is likely

	// rowOps holds the last write of each row key in first-write order
	// (nil: delete); rows maps a key to its index in rowOps.
	rowOps       []rowOp
	rows         map[backends.RowKey]int
	addCands     []backends.Candidate
	dropCands    []int64
	events       []backends.Event
	eventsStored bool
	// locked holds the slot records this transaction locked (slots.go),
	// nil for a missing one.
	locked map[string]*backends.Slots
	// slotsAhead are the slot records to lock and read with the next read
	// of rows (PrefetchSlots).
	slotsAhead []string
	// liveAhead are the live-claim counts to send with the slot records'
	// lock, at liveAt (PrefetchLive); liveCounts their answers (liveKey).
	liveAhead  [][]string
	liveAt     time.Time
	liveCounts map[string]int
	// reserved are the candidates NextCandidates returned, by id.
	reserved []int64
	// slotsCreated are the slot records this transaction may have
	// created: known to exist once it commits (ensureSlots).
	slotsCreated []string
	// valueOps are the buffered writes of values of dynamic sets
	// (values.go).
	valueOps []valueOp
}

// queued is a statement sent ahead of the next one, in the same round trip;
// read consumes its result.
type queued struct {
	sql  string
	args []any
	read func(pgx.BatchResults) error
}

const (
	beginSQL    = "BEGIN ISOLATION LEVEL READ COMMITTED"
	commitSQL   = "COMMIT"
	rollbackSQL = "ROLLBACK"
)

// commit applies the buffered writes and commits, in one round trip. A
// transaction that sent nothing and wrote nothing has nothing to commit.
func (t *txn) commit(ctx context.Context) error {
	p, err := t.writes(true)
	if err != nil {
		return err
	}
	if p == nil && !t.begun && len(t.queued) == 0 {
		return nil
	}
	if p != nil {
		t.trailer = commitSQL
		err = t.q.ApplyWrites(ctx, *p)
		t.trailer = ""
	} else {
		_, err = pipe{t}.Exec(ctx, commitSQL)
	}
	if err != nil {
		return mapErr(err, "committing")
	}
	t.begun = false
	return nil
}

// rollback ends a transaction that did not commit. On failure the
// connection stays inside a transaction, and Release destroys it (closing
// it rolls back too).
func (t *txn) rollback(ctx context.Context) {
	if !t.begun {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, _ = t.conn.Exec(rctx, rollbackSQL)
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

// maxEventsPerTx is the number of events one transaction may record: an
// event's seq keeps 20 bits for its position in its transaction.
const maxEventsPerTx = 1<<20 - 1

// writes takes the buffered row and queue writes and, with events, the
// buffered events, as the parameters of one ApplyWrites statement; nil when
// there is nothing to write.
func (t *txn) writes(withEvents bool) (*sqldb.ApplyWritesParams, error) {
	if !withEvents || len(t.events) == 0 {
		withEvents = false
		if len(t.rowOps) == 0 && len(t.addCands) == 0 && len(t.dropCands) == 0 {
			return nil, nil
		}
	}
	p := sqldb.ApplyWritesParams{DropCandidateIds: t.dropCands}
	for _, op := range t.rowOps {
		k := op.key
		if op.row == nil {
			p.DelDatasets = append(p.DelDatasets, k.Dataset)
			p.DelDataids = append(p.DelDataids, k.DataID)
			p.DelSortkeys = append(p.DelSortkeys, backends.SortKey(k.DataID))
			p.DelJobs = append(p.DelJobs, k.Job)
			p.DelRoles = append(p.DelRoles, string(k.Role))
			p.DelReadFors = append(p.DelReadFors, k.ReadFor)
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
		p.RowEndings = append(p.RowEndings, string(r.Ended))
		p.RowHasRetry = append(p.RowHasRetry, !r.RetryAt.IsZero())
		p.RowRetryAts = append(p.RowRetryAts, r.RetryAt)
		p.RowReadFors = append(p.RowReadFors, k.ReadFor)
		p.RowReads = append(p.RowReads, encodeReads(r.Reads))
	}
	for _, c := range t.addCands {
		p.CandJobs = append(p.CandJobs, c.Job)
		p.CandResubmits = append(p.CandResubmits, c.Resubmit)
		p.CandSortkeys = append(p.CandSortkeys, backends.SortKey(c.DataID))
		p.CandDataids = append(p.CandDataids, c.DataID)
		p.CandHasNotBefore = append(p.CandHasNotBefore, !c.NotBefore.IsZero())
		p.CandNotBefores = append(p.CandNotBefores, c.NotBefore)
		p.CandFrontiers = append(p.CandFrontiers, c.Frontier)
	}
	if withEvents {
		// Positions within the transaction make the seqs: one ApplyWrites
		// with events per transaction, and a bounded number of them.
		if t.eventsStored {
			return nil, errors.New("postgres: events were already stored in this transaction")
		}
		if len(t.events) > maxEventsPerTx {
			return nil, backends.InvalidArgument("one operation would record %d events; at most %d fit in one transaction", len(t.events), maxEventsPerTx)
		}
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
			p.EventReadFors = append(p.EventReadFors, e.ReadFor)
		}
		t.events, t.eventsStored = nil, true
	}
	t.rowOps, t.rows, t.addCands, t.dropCands = nil, map[backends.RowKey]int{}, nil, nil
	return &p, nil
}

// flush applies the buffered row and queue writes (not the events) now.
func (t *txn) flush(ctx context.Context) error {
	p, err := t.writes(false)
	if err != nil || p == nil {
		return err
	}
	return mapErr(t.q.ApplyWrites(ctx, *p), "writing")
}

// LockChunks queues the advisory lock of every chunk (dataset, dataid):
// exclusive for the datasets in exclusive, shared for the others, in
// ascending dataset order, in one statement sent with the next one. The
// locks last until the transaction ends. When the transaction took a
// candidate, a fencing number is drawn right after the locks as well, for
// each chunk locked exclusively: the claim that usually follows needs one,
// drawn while the chunk's lock is held.
func (t *txn) LockChunks(_ context.Context, dataid string, exclusive, shared []string) error {
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
	t.enqueue(sqldb.LockChunks, []any{datasets, dataid, t.b.salt, excl}, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return mapErr(err, "locking chunks")
	})
	if t.tookCandidate {
		for _, d := range exclusive {
			chunk := d + "/" + dataid
			if _, ok := t.fences[chunk]; ok {
				continue
			}
			t.enqueue(sqldb.NextFence, nil, func(br pgx.BatchResults) error {
				var f int64
				if err := br.QueryRow().Scan(&f); err != nil {
					return mapErr(err, "taking a fencing number")
				}
				if t.fences == nil {
					t.fences = map[string]int64{}
				}
				t.fences[chunk] = f
				return nil
			})
		}
	}
	return nil
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
		p.Sortkeys = append(p.Sortkeys, backends.SortKey(k.DataID))
		p.Jobs = append(p.Jobs, k.Job)
		p.Roles = append(p.Roles, string(k.Role))
		p.ReadFors = append(p.ReadFors, k.ReadFor)
	}
	if len(p.Datasets) == 0 {
		return t.fromBuffer(keys, out), nil
	}
	t.sendSlotsAhead()
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

// PeekRows reads as GetRows does: reads take no lock (chunk locks are
// advisory, LockChunks) and are not validated at commit.
func (t *txn) PeekRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	return t.GetRows(ctx, keys)
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

// ListReads flushes the buffered writes, so that the query sees them,
// and reads the job's mapped reads of the chunk.
func (t *txn) ListReads(ctx context.Context, dataset, dataid, job string) ([]backends.StatusRow, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	rows, err := t.q.ListReads(ctx, sqldb.ListReadsParams{Dataset: dataset, Dataid: dataid, Job: job})
	if err != nil {
		return nil, mapErr(err, "reading mapped reads")
	}
	out := make([]backends.StatusRow, len(rows))
	for i, r := range rows {
		out[i] = rowFromDB(r)
	}
	return out, nil
}

// NextFence takes the next value of one global sequence. The caller holds
// the chunk's exclusive lock, so fences strictly increase per chunk. A
// value drawn ahead with the lock (see LockChunks) is used once.
func (t *txn) NextFence(ctx context.Context, dataset, dataid string) (int64, error) {
	chunk := dataset + "/" + dataid
	if f, ok := t.fences[chunk]; ok {
		delete(t.fences, chunk) // used once
		return f, nil
	}
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

// NextCandidates locks up to n of the job's first candidates that no
// concurrent transaction holds (FOR UPDATE SKIP LOCKED); the locks last
// until the transaction ends.
func (t *txn) NextCandidates(ctx context.Context, job string, n int, now time.Time) ([]backends.Candidate, error) {
	if len(t.addCands) > 0 || len(t.dropCands) > 0 {
		if err := t.flush(ctx); err != nil {
			return nil, err
		}
	}
	rows, err := t.q.NextCandidates(ctx, sqldb.NextCandidatesParams{Job: job, Now: now, MaxRows: int32(n)})
	if err != nil {
		return nil, mapErr(err, "reading the candidate queue")
	}
	out := make([]backends.Candidate, len(rows))
	for i, r := range rows {
		out[i] = candFromDB(job, r.ID, r.Dataid, r.Resubmit, r.NotBefore, r.Frontier)
		t.reserved = append(t.reserved, r.ID)
	}
	t.tookCandidate = t.tookCandidate || len(out) > 0
	return out, nil
}

// DropCandidate buffers the deletion of the one queue entry NextCandidates
// returned (by id: duplicates added since stay).
func (t *txn) DropCandidate(_ context.Context, c backends.Candidate) error {
	id, ok := c.Handle.(int64)
	if !ok {
		return fmt.Errorf("postgres: candidate handle %v (%T) did not come from NextCandidates", c.Handle, c.Handle)
	}
	t.dropCands = append(t.dropCands, id)
	if c.Frontier {
		// Other frontiers of the job at the same dataid merge into this
		// one; those a transaction holds, this one included, are left to
		// it (Tx.DropCandidate).
		t.enqueue(dropFrontierTwinsSQL, []any{c.Job, backends.SortKey(c.DataID), id, slices.Clone(t.reserved), c.Resubmit}, nil)
	}
	return nil
}

// dropFrontierTwinsSQL deletes the frontier candidates of job $1 at sort
// key $2 with resubmit $5 (the same kind) other than $3 that no
// transaction holds: not among $4, those this one reserved, nor locked by
// another.
const dropFrontierTwinsSQL = `DELETE FROM candidates WHERE id IN (
    SELECT id FROM candidates WHERE job = $1 AND sortkey = $2 AND frontier AND resubmit = $5 AND id <> $3 AND id <> ALL($4::bigint[])
    FOR UPDATE SKIP LOCKED)`

// CatalogVersion returns the catalog version this transaction read with
// its first statement.
func (t *txn) CatalogVersion(ctx context.Context) (int64, error) {
	if !t.haveVersion {
		v, err := t.q.ReadCatalogVersion(ctx)
		if err != nil {
			return 0, mapErr(err, "reading the catalog version")
		}
		t.version, t.haveVersion = v, true
	}
	return t.version, nil
}

// candFromDB converts a stored candidate.
func candFromDB(job string, id int64, dataid string, resubmit bool, notBefore pgtype.Timestamptz, frontier bool) backends.Candidate {
	c := backends.Candidate{Job: job, DataID: dataid, Resubmit: resubmit, Frontier: frontier, Handle: id}
	if notBefore.Valid {
		c.NotBefore = notBefore.Time.UTC()
	}
	return c
}

// rowFromDB converts a stored status row.
func rowFromDB(r sqldb.StatusRow) backends.StatusRow {
	out := backends.StatusRow{
		RowKey:     backends.RowKey{Dataset: r.Dataset, DataID: r.Dataid, Job: r.Job, Role: backends.Role(r.Role), ReadFor: r.ReadFor},
		Status:     backends.Status(r.Status),
		Attempt:    int(r.Attempt),
		Executor:   r.Executor,
		Token:      r.Token,
		Fence:      r.Fence,
		UpdatedAt:  r.UpdatedAt.UTC(),
		Reason:     r.Reason,
		PrevStatus: backends.Status(r.PrevStatus),
		Ended:      backends.Ending(r.Ended),
	}
	if r.LeaseExpiresAt.Valid {
		out.LeaseExpiresAt = r.LeaseExpiresAt.Time.UTC()
	}
	if r.RetryAt.Valid {
		out.RetryAt = r.RetryAt.Time.UTC()
	}
	out.Reads = decodeReads(r.Reads)
	return out
}

// encodeReads is a claim's reads as ApplyWrites takes them: the
// 'dataset/dataid' of each, separated by spaces (neither a dataset id nor
// a dataid holds a space or a '/'); "" for none.
func encodeReads(reads []backends.Read) string {
	if reads == nil {
		return ""
	}
	parts := make([]string, len(reads))
	for i, r := range reads {
		parts[i] = r.Dataset + "/" + r.DataID
	}
	return strings.Join(parts, " ")
}

// decodeReads inverts the stored form of a claim's reads; nil for none.
func decodeReads(stored []string) []backends.Read {
	if stored == nil {
		return nil
	}
	reads := make([]backends.Read, 0, len(stored))
	for _, s := range stored {
		d, id, _ := strings.Cut(s, "/")
		reads = append(reads, backends.Read{Dataset: d, DataID: id})
	}
	return reads
}

// maxBatch is how many operations one transaction may serve
// (Limits.MaxBatch): enough to amortise a transaction's round trips and
// commit over many runners, few enough to keep its statements small.
const maxBatch = 32

// maxRangeBatch is how many chunks of a range operation one transaction
// serves (Limits.MaxRangeBatch): over 10,000 daily chunks, holdRange and
// resubmitRange took about two thirds of their time at 32, publishRange
// was within the noise (BENCHMARKS.md, "Ranges").
const maxRangeBatch = 256

// Limits let the engine serve up to maxBatch operations in one
// transaction, and maxRangeBatch chunks of a range. LockChunks queues
// each call's locks in call order, which the engine makes ascending
// (dataid, dataset) order.
func (b *Backend) Limits() backends.Limits {
	return backends.Limits{MaxBatch: maxBatch, MaxRangeBatch: maxRangeBatch}
}
