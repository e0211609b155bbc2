package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Slot records (backends/slots.go) live in table slots, one JSON document
// per record. A claim locks its job's records with FOR UPDATE after its
// chunk locks; every transaction takes them in ascending key order, so
// they cannot deadlock with each other or with chunk locks. The claim then
// counts the live claims (CountLive, through the index of RUNNING rows)
// rather than keeping holders in the records (backends.LiveCounter), in
// the same round trip (PrefetchLive).

const (
	// ensureSlotsSQL makes sure the records exist, so that FOR UPDATE has
	// rows to lock: two transactions creating one record meet on its key.
	ensureSlotsSQL = `INSERT INTO slots (key, record)
SELECT k, '{}' FROM unnest($1::text[]) AS k ORDER BY k
ON CONFLICT (key) DO NOTHING`
	// lockSlotsSQL locks the records of $1 and reads those of $2 unlocked.
	lockSlotsSQL = `WITH locked AS (SELECT key, record FROM slots WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE)
SELECT key, record FROM locked UNION ALL SELECT key, record FROM slots WHERE key = ANY($2::text[])`
	readSlotsSQL = `SELECT key, record FROM slots WHERE key = ANY($1::text[])`
	putSlotsSQL  = `INSERT INTO slots (key, record) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET record = EXCLUDED.record`
	// tryLockHoldersSQL takes, without waiting, the shared lock of each
	// holder's chunk: a holder whose chunk another transaction is changing
	// (a heartbeat, an ending) cannot be read consistently now.
	tryLockHoldersSQL = `SELECT pg_try_advisory_xact_lock_shared(hashtextextended(u.d || '/' || u.i, $3::bigint))
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(d, i, n) ORDER BY u.n`
	runningOutputsSQL = `SELECT dataset, dataid, job, role, sortkey, status, attempt, executor, token, fence,
       lease_expires_at, updated_at, reason, prev_status, ended
FROM status_rows
WHERE job = $1 AND dataset = $2 AND role = 'OUTPUT' AND status = 'RUNNING'`
	listPoolsSQL = `SELECT key, record FROM slots WHERE key LIKE 'pool/%' ORDER BY key`
	// countLiveSQL counts the live claims of the jobs $1 at $2, through
	// the index of RUNNING OUTPUT rows (status_rows_expiry).
	countLiveSQL = `SELECT count(*) FROM status_rows
WHERE role = 'OUTPUT' AND status = 'RUNNING' AND lease_expires_at > $2 AND job = ANY($1::text[])`
)

func (b *Backend) scanSlots(rows pgx.Rows) (map[string]*backends.Slots, error) {
	out := map[string]*backends.Slots{}
	for rows.Next() {
		var key string
		var doc []byte
		if err := rows.Scan(&key, &doc); err != nil {
			return nil, err
		}
		s, err := b.slots.Decode(key, doc)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		out[key] = s
	}
	return out, rows.Err()
}

// ensureSlots queues the creation of the records of keys not known to
// exist yet. Rows of table slots are never deleted, so a record once seen
// committed exists for good: the insert runs until the first claim that
// finds the record. A record this transaction may have created itself is
// known only once it commits (slotRowsCommitted): a rollback removes it.
func (t *txn) ensureSlots(keys []string) {
	for _, k := range keys {
		if _, known := t.b.slotRows.Load(k); !known {
			t.enqueue(ensureSlotsSQL, []any{keys}, nil)
			t.slotsCreated = append(t.slotsCreated, keys...)
			return
		}
	}
}

// noteSlotRows notes the records found by a read of this transaction that
// existed before it.
func (t *txn) noteSlotRows(found map[string]*backends.Slots) {
	for k := range found {
		if !slices.Contains(t.slotsCreated, k) {
			t.b.slotRows.Store(k, struct{}{})
		}
	}
}

// slotRowsCommitted notes, once the transaction committed, the records it
// created or wrote.
func (t *txn) slotRowsCommitted() {
	for _, k := range t.slotsCreated {
		t.b.slotRows.Store(k, struct{}{})
	}
}

// GetSlots with forUpdate also reads, unlocked, each record's partner
// (partnerOf), which the engine asks for next: one round trip for both.
func (t *txn) GetSlots(ctx context.Context, keys []string, forUpdate bool) ([]*backends.Slots, error) {
	out := make([]*backends.Slots, len(keys))
	if t.peeked != nil {
		all := true
		for i, k := range keys {
			s, ok := t.peeked[k]
			out[i], all = s, all && ok && (!forUpdate || t.locked[k])
		}
		if all {
			return out, nil
		}
	}
	var partners []string
	var rows pgx.Rows
	var err error
	if forUpdate {
		for _, k := range keys {
			partners = append(partners, partnerOf(k))
		}
		t.ensureSlots(keys)
		rows, err = pipe{t}.Query(ctx, lockSlotsSQL, keys, partners)
	} else {
		rows, err = pipe{t}.Query(ctx, readSlotsSQL, keys)
	}
	if err != nil {
		return nil, mapErr(err, "reading slot records")
	}
	defer rows.Close()
	found, err := t.b.scanSlots(rows)
	if err != nil {
		return nil, mapErr(err, "reading slot records")
	}
	t.noteSlotRows(found)
	for i, k := range keys {
		out[i] = found[k]
	}
	if len(partners) > 0 {
		t.remember(keys, partners, found)
	}
	return out, nil
}

// remember caches records read ahead: locked ones and peeked ones.
func (t *txn) remember(locked, peeked []string, found map[string]*backends.Slots) {
	if t.peeked == nil {
		t.peeked, t.locked = map[string]*backends.Slots{}, map[string]bool{}
	}
	for _, k := range locked {
		t.peeked[k], t.locked[k] = found[k], true
	}
	for _, k := range peeked {
		if !t.locked[k] {
			t.peeked[k] = found[k]
		}
	}
}

// PrefetchSlots has the next read of rows lock the records locked and
// read those peeked, in its round trip, after the chunk locks queued
// before it (the lock order every transaction keeps).
func (t *txn) PrefetchSlots(locked, peeked []string) {
	t.slotsAhead = &[2][]string{slices.Clone(locked), slices.Clone(peeked)}
}

// sendSlotsAhead queues the statements PrefetchSlots asked for.
func (t *txn) sendSlotsAhead() {
	if t.slotsAhead == nil {
		return
	}
	locked, peeked := t.slotsAhead[0], t.slotsAhead[1]
	t.slotsAhead = nil
	t.ensureSlots(locked)
	t.enqueue(lockSlotsSQL, []any{locked, peeked}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return mapErr(err, "reading slot records")
		}
		defer rows.Close()
		found, err := t.b.scanSlots(rows)
		if err != nil {
			return mapErr(err, "reading slot records")
		}
		t.noteSlotRows(found)
		t.remember(locked, peeked, found)
		return nil
	})
	for _, jobs := range t.liveAhead {
		key := liveKey(jobs, t.liveAt)
		t.enqueue(countLiveSQL, []any{jobs, t.liveAt}, func(br pgx.BatchResults) error {
			var n int64
			if err := br.QueryRow().Scan(&n); err != nil {
				return mapErr(err, "counting live claims")
			}
			if t.liveCounts == nil {
				t.liveCounts = map[string]int{}
			}
			t.liveCounts[key] = int(n)
			return nil
		})
	}
	t.liveAhead = nil
}

// partnerOf is the record read with key: "ended/<key>" for a slot record
// and the slot record for an ended one.
func partnerOf(key string) string {
	if rest, ok := strings.CutPrefix(key, "ended/"); ok {
		return rest
	}
	return "ended/" + key
}

// PutSlots queues the write; it goes out with the transaction's next
// statement (at the latest with its commit).
func (t *txn) PutSlots(_ context.Context, s backends.Slots) error {
	doc, err := t.b.slots.Encode(s)
	if err != nil {
		return err
	}
	t.slotsCreated = append(t.slotsCreated, s.Key)
	t.enqueue(putSlotsSQL, []any{s.Key, doc}, nil)
	return nil
}

// CheckHolders tries the shared lock of each holder's chunk, then reads
// the rows with a snapshot taken after the locks: a row whose lock was
// taken cannot change before this transaction ends, and a heartbeat
// waiting for it decides on the lease after this transaction.
func (t *txn) CheckHolders(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, []bool, error) {
	ds := make([]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		ds[i], ids[i] = k.Dataset, k.DataID
	}
	known := make([]bool, len(keys))
	t.enqueue(tryLockHoldersSQL, []any{ds, ids, t.b.salt}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return mapErr(err, "locking slot holders")
		}
		defer rows.Close()
		for i := 0; rows.Next(); i++ {
			if err := rows.Scan(&known[i]); err != nil {
				return mapErr(err, "locking slot holders")
			}
		}
		return mapErr(rows.Err(), "locking slot holders")
	})
	rows, err := t.GetRows(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	return rows, known, nil
}

// CountLive counts live claims in a statement of its own, which sees every
// commit made before it: sent after the statement locking the slot records
// (backends.LiveCounter), in its round trip when PrefetchLive asked.
func (t *txn) CountLive(ctx context.Context, jobs []string, now time.Time) (int, error) {
	if n, ok := t.liveCounts[liveKey(jobs, now)]; ok {
		return n, nil
	}
	var n int64
	if err := (pipe{t}).QueryRow(ctx, countLiveSQL, jobs, now).Scan(&n); err != nil {
		return 0, mapErr(err, "counting live claims")
	}
	return int(n), nil
}

// PrefetchLive has the counts of jobs at now sent right after the
// statement locking the slot records that PrefetchSlots asked for
// (backends.LivePrefetcher).
func (t *txn) PrefetchLive(jobs [][]string, now time.Time) {
	t.liveAhead = jobs
	t.liveAt = now
}

// liveKey names a count of jobs at now.
func liveKey(jobs []string, now time.Time) string {
	return strings.Join(jobs, "/") + "@" + now.Format(time.RFC3339Nano)
}

func (t *txn) RunningOutputs(ctx context.Context, job, output string) ([]backends.StatusRow, error) {
	rows, err := pipe{t}.Query(ctx, runningOutputsSQL, job, output)
	if err != nil {
		return nil, mapErr(err, "reading live claims")
	}
	defer rows.Close()
	var out []backends.StatusRow
	for rows.Next() {
		var r sqldb.StatusRow
		var lease pgtype.Timestamptz
		var updated time.Time
		if err := rows.Scan(&r.Dataset, &r.Dataid, &r.Job, &r.Role, &r.Sortkey, &r.Status, &r.Attempt, &r.Executor,
			&r.Token, &r.Fence, &lease, &updated, &r.Reason, &r.PrevStatus, &r.Ended); err != nil {
			return nil, mapErr(err, "reading live claims")
		}
		r.LeaseExpiresAt, r.UpdatedAt = lease, updated
		row := rowFromDB(r)
		if _, written := t.rows[row.RowKey]; !written {
			out = append(out, row)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "reading live claims")
	}
	for _, op := range t.rowOps {
		if r := op.row; r != nil && r.Job == job && r.Dataset == output && r.Role == backends.RoleOutput && r.Status == backends.StatusRunning {
			out = append(out, *r)
		}
	}
	return out, nil
}

// ListPools reads every pool's slot record.
func (b *Backend) ListPools(ctx context.Context) ([]backends.Pool, error) {
	rows, err := b.pool.Query(ctx, listPoolsSQL)
	if err != nil {
		return nil, mapErr(err, "listing pools")
	}
	defer rows.Close()
	found, err := b.scanSlots(rows)
	if err != nil {
		return nil, mapErr(err, "listing pools")
	}
	var out []backends.Pool
	for _, k := range sortedKeys(found) {
		if p := found[k].Pool; p.Slots > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]*backends.Slots) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
