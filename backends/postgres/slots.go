package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/jackc/pgx/v5"
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
	// lockSlotsSQL locks and reads the records of $1.
	lockSlotsSQL = `SELECT key, record FROM slots WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE`
	readSlotsSQL = `SELECT key, record FROM slots WHERE key = ANY($1::text[])`
	putSlotsSQL  = `INSERT INTO slots (key, record) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET record = EXCLUDED.record`
	listPoolsSQL = `SELECT key, record FROM slots WHERE key LIKE 'pool/%' ORDER BY key`
	// countLiveSQL counts the live claims of the jobs $1 at $2, through
	// the index of leased rows, RUNNING OUTPUT rows only (status_rows_expiry).
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

// GetSlots reads records, locking them with forUpdate; records locked
// ahead of time (PrefetchSlots) are answered from memory.
func (t *txn) GetSlots(ctx context.Context, keys []string, forUpdate bool) ([]*backends.Slots, error) {
	out := make([]*backends.Slots, len(keys))
	all := t.locked != nil
	for i, k := range keys {
		s, ok := t.locked[k]
		out[i], all = s, all && ok
	}
	if all {
		return out, nil
	}
	var rows pgx.Rows
	var err error
	if forUpdate {
		t.ensureSlots(keys)
		rows, err = pipe{t}.Query(ctx, lockSlotsSQL, keys)
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
	if forUpdate {
		t.remember(keys, found)
	}
	return out, nil
}

// remember caches records this transaction locked (nil for a missing one).
func (t *txn) remember(locked []string, found map[string]*backends.Slots) {
	if t.locked == nil {
		t.locked = map[string]*backends.Slots{}
	}
	for _, k := range locked {
		t.locked[k] = found[k]
	}
}

// PrefetchSlots has the next read of rows lock the records locked, in its
// round trip, after the chunk locks queued before it (the lock order every
// transaction keeps). The gates of a LiveCounter read no other record:
// peeked is empty.
func (t *txn) PrefetchSlots(locked, _ []string) {
	t.slotsAhead = slices.Clone(locked)
}

// sendSlotsAhead queues the statements PrefetchSlots asked for.
func (t *txn) sendSlotsAhead() {
	if t.slotsAhead == nil {
		return
	}
	locked := t.slotsAhead
	t.slotsAhead = nil
	t.ensureSlots(locked)
	t.enqueue(lockSlotsSQL, []any{locked}, func(br pgx.BatchResults) error {
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
		t.remember(locked, found)
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
