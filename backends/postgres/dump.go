package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
)

// The PostgreSQL backend dumps its tables (backends/dump.go) with plain
// SELECTs in primary key order, and loads them through its own write paths
// (catalog, transactions) where they exist, plain INSERTs elsewhere.

var _ backends.Dumper = (*Backend)(nil)

// DumpCovers names every table and sequence of the schema with the kind
// that dumps it; the tests check that the migrations create no other.
func (b *Backend) DumpCovers() map[string]backends.DumpKind {
	return map[string]backends.DumpKind{
		"datasets": backends.DumpDatasets, "jobs": backends.DumpJobs, "catalog_version": "",
		"credentials": backends.DumpCredentials, "status_rows": backends.DumpRows,
		"fences": backends.DumpFences, "candidates": backends.DumpCandidates, "candidates_id_seq": "",
		"events": backends.DumpEvents, "resource_locks": backends.DumpLocks, "resource_locks_id_seq": "",
		"slots": backends.DumpSlots, "records": backends.DumpRecords, "schema_migrations": "",
		"chunk_counts": "", "chunk_count_deltas": "", "chunk_count_deltas_id_seq": "", // kept by triggers as rows load
		"catalog_changes": backends.DumpChanges, "catalog_changes_id_seq": "", // ids are the target's, in load order
		"partition_values": backends.DumpValues,
		"store_marks":      "", // the target's own: made by its migrations
	}
}

// dumpPage is how many rows one SELECT of a dump reads.
const dumpPage = 1000

func (b *Backend) Empty(ctx context.Context) (bool, error) {
	var n bool
	err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM datasets) OR EXISTS (SELECT FROM jobs) OR EXISTS (SELECT FROM credentials)
 OR EXISTS (SELECT FROM status_rows) OR EXISTS (SELECT FROM candidates) OR EXISTS (SELECT FROM events)
 OR EXISTS (SELECT FROM resource_locks) OR EXISTS (SELECT FROM slots) OR EXISTS (SELECT FROM records)
 OR EXISTS (SELECT FROM catalog_changes) OR EXISTS (SELECT FROM partition_values) OR (SELECT is_called FROM fences)`).Scan(&n)
	return !n, mapErr(err, "reading whether the store is empty")
}

func (b *Backend) Dump(ctx context.Context, kind backends.DumpKind, fn func(backends.DumpItem) error) error {
	switch kind {
	case backends.DumpDatasets, backends.DumpJobs:
		ds, js, err := b.Catalog(ctx)
		if err != nil {
			return err
		}
		if kind == backends.DumpDatasets {
			return each(ds, func(d *backends.Dataset) error { return fn(backends.DumpItem{Dataset: d}) })
		}
		return each(js, func(j *backends.Job) error { return fn(backends.DumpItem{Job: j}) })
	case backends.DumpRows:
		return b.dumpRows(ctx, fn)
	case backends.DumpFences:
		var last int64
		var called bool
		if err := b.pool.QueryRow(ctx, `SELECT last_value, is_called FROM fences`).Scan(&last, &called); err != nil {
			return mapErr(err, "reading the fence counter")
		}
		if !called {
			last--
		}
		return fn(backends.DumpItem{Fence: &backends.Fence{Global: true, Fence: last}})
	case backends.DumpEvents:
		return b.dumpEvents(ctx, fn)
	case backends.DumpBackfills:
		return nil // PostgreSQL backfills in the job's transaction
	}
	q, scan := dumpQuery(b, kind)
	if scan == nil {
		return fmt.Errorf("postgres: no dump kind %q", kind)
	}
	rows, err := b.pool.Query(ctx, q)
	if err != nil {
		return mapErr(err, "dumping "+string(kind))
	}
	defer rows.Close()
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return fmt.Errorf("postgres: dumping %s: %w", kind, err)
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	return mapErr(rows.Err(), "dumping "+string(kind))
}

func each[T any](xs []T, fn func(*T) error) error {
	for i := range xs {
		if err := fn(&xs[i]); err != nil {
			return err
		}
	}
	return nil
}

// dumpQuery is the SELECT of a small kind (read in one statement) and what
// reads one of its rows.
func dumpQuery(b *Backend, kind backends.DumpKind) (string, func(pgx.Rows) (backends.DumpItem, error)) {
	switch kind {
	case backends.DumpValues:
		return `SELECT dataset, dimension, value, added_at FROM partition_values ORDER BY dataset, dimension, sortkey`,
			func(r pgx.Rows) (backends.DumpItem, error) {
				var v backends.PartitionValue
				err := r.Scan(&v.Dataset, &v.Dimension, &v.Value, &v.AddedAt)
				v.AddedAt = v.AddedAt.UTC()
				return backends.DumpItem{Value: &v}, err
			}
	case backends.DumpChanges:
		return `SELECT actor, at, kind, object, op, dataset, job, before FROM catalog_changes ORDER BY id`,
			func(r pgx.Rows) (backends.DumpItem, error) {
				var c backends.CatalogChange
				err := r.Scan(&c.Actor, &c.Time, &c.Kind, &c.ID, &c.Op, &c.Dataset, &c.Job, &c.Before)
				c.Time = c.Time.UTC()
				return backends.DumpItem{Change: &c}, err
			}
	case backends.DumpCredentials:
		return `SELECT job, dataset, key_kind, ciphertext, updated_at FROM credentials ORDER BY job, dataset`,
			func(r pgx.Rows) (backends.DumpItem, error) {
				var c backends.Credential
				err := r.Scan(&c.Job, &c.Dataset, &c.KeyKind, &c.Ciphertext, &c.UpdatedAt)
				c.UpdatedAt = c.UpdatedAt.UTC()
				return backends.DumpItem{Credential: &c}, err
			}
	case backends.DumpCandidates:
		return `SELECT id, job, resubmit, sortkey, dataid, not_before, frontier FROM candidates ORDER BY id`,
			func(r pgx.Rows) (backends.DumpItem, error) {
				var c sqldb.Candidate
				err := r.Scan(&c.ID, &c.Job, &c.Resubmit, &c.Sortkey, &c.Dataid, &c.NotBefore, &c.Frontier)
				cand := candFromDB(c.Job, c.ID, c.Dataid, c.Resubmit, c.NotBefore, c.Frontier)
				cand.Handle = nil
				return backends.DumpItem{Candidate: &cand}, err
			}
	case backends.DumpLocks:
		return `SELECT id, client, resource, mode, created_at, expires_at FROM resource_locks ORDER BY id`,
			func(r pgx.Rows) (backends.DumpItem, error) {
				var l sqldb.ResourceLock
				err := r.Scan(&l.ID, &l.Client, &l.Resource, &l.Mode, &l.CreatedAt, &l.ExpiresAt)
				rl := resourceLockFromDB(l)
				return backends.DumpItem{Lock: &rl}, err
			}
	case backends.DumpSlots:
		return `SELECT key, record FROM slots ORDER BY key`, func(r pgx.Rows) (backends.DumpItem, error) {
			var key string
			var doc []byte
			if err := r.Scan(&key, &doc); err != nil {
				return backends.DumpItem{}, err
			}
			s, err := b.slots.Decode(key, doc)
			return backends.DumpItem{Slots: s}, err
		}
	case backends.DumpRecords:
		return `SELECT key, value, version FROM records ORDER BY key`, func(r pgx.Rows) (backends.DumpItem, error) {
			var rec backends.Record
			err := r.Scan(&rec.Key, &rec.Value, &rec.Version)
			return backends.DumpItem{Record: &rec}, err
		}
	}
	return "", nil
}

const dumpRowsSQL = `SELECT dataset, dataid, job, role, sortkey, status, attempt, executor, token, fence,
 lease_expires_at, updated_at, reason, prev_status, ended, retry_at, read_for, reads
FROM status_rows WHERE (dataset, dataid, job, role, read_for) > ($1, $2, $3, $4, $5)
ORDER BY dataset, dataid, job, role, read_for LIMIT $6`

// dumpRows pages through the status rows in primary key order.
func (b *Backend) dumpRows(ctx context.Context, fn func(backends.DumpItem) error) error {
	after := []any{"", "", "", "", ""}
	for {
		page, err := b.rowPage(ctx, after)
		if err != nil {
			return err
		}
		for i := range page {
			if err := fn(backends.DumpItem{Row: &page[i]}); err != nil {
				return err
			}
		}
		if len(page) < dumpPage {
			return nil
		}
		k := page[len(page)-1].RowKey
		after = []any{k.Dataset, k.DataID, k.Job, string(k.Role), k.ReadFor}
	}
}

func (b *Backend) rowPage(ctx context.Context, after []any) ([]backends.StatusRow, error) {
	rows, err := b.pool.Query(ctx, dumpRowsSQL, append(after, dumpPage)...)
	if err != nil {
		return nil, mapErr(err, "dumping status rows")
	}
	defer rows.Close()
	var out []backends.StatusRow
	for rows.Next() {
		var r sqldb.StatusRow
		if err := rows.Scan(&r.Dataset, &r.Dataid, &r.Job, &r.Role, &r.Sortkey, &r.Status, &r.Attempt, &r.Executor, &r.Token, &r.Fence,
			&r.LeaseExpiresAt, &r.UpdatedAt, &r.Reason, &r.PrevStatus, &r.Ended, &r.RetryAt, &r.ReadFor, &r.Reads); err != nil {
			return nil, mapErr(err, "dumping status rows")
		}
		out = append(out, rowFromDB(r))
	}
	return out, mapErr(rows.Err(), "dumping status rows")
}

const dumpEventsSQL = `SELECT seq, time, actor, job, dataset, dataid, role, from_status, to_status, attempt, executor, reason, read_for
FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`

// dumpEvents pages through the event log in Seq order (every event is
// final: nobody writes to a dumped store).
func (b *Backend) dumpEvents(ctx context.Context, fn func(backends.DumpItem) error) error {
	var after int64
	for {
		rows, err := b.pool.Query(ctx, dumpEventsSQL, after, dumpPage)
		if err != nil {
			return mapErr(err, "dumping events")
		}
		var page []backends.Event
		for rows.Next() {
			var e backends.Event
			var role, from, to string
			if err := rows.Scan(&e.Seq, &e.Time, &e.Actor, &e.Job, &e.Dataset, &e.DataID, &role, &from, &to, &e.Attempt, &e.Executor, &e.Reason, &e.ReadFor); err != nil {
				rows.Close()
				return mapErr(err, "dumping events")
			}
			e.Time, e.Role, e.From, e.To = e.Time.UTC(), backends.Role(role), backends.Status(from), backends.Status(to)
			page = append(page, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err, "dumping events")
		}
		for i := range page {
			if err := fn(backends.DumpItem{Event: &page[i]}); err != nil {
				return err
			}
		}
		if len(page) < dumpPage {
			return nil
		}
		after = page[len(page)-1].Seq
	}
}

// Load writes through the catalog and transactions of the backend where
// they take the item whole, plain INSERTs elsewhere.
func (b *Backend) Load(ctx context.Context, kind backends.DumpKind, items []backends.DumpItem) error {
	if err := b.markLoaded(ctx); err != nil {
		return err
	}
	switch kind {
	case backends.DumpDatasets, backends.DumpJobs, backends.DumpBackfills:
		return b.loadCatalog(ctx, items)
	case backends.DumpCredentials:
		return each(items, func(it *backends.DumpItem) error { return b.PutCredential(ctx, *it.Credential) })
	case backends.DumpChanges:
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			return each(items, func(it *backends.DumpItem) error {
				return recordChange(backends.WithChange(ctx, it.Change), tx, nil)
			})
		})
		return mapErr(err, "loading catalog changes")
	case backends.DumpValues:
		_, err := b.pool.CopyFrom(ctx, pgx.Identifier{"partition_values"}, []string{"dataset", "dimension", "sortkey", "value", "added_at"},
			pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
				v := items[i].Value
				return []any{v.Dataset, v.Dimension, backends.SortKey(v.Value), v.Value, v.AddedAt}, nil
			}))
		return mapErr(err, "loading partition values")
	case backends.DumpRows:
		return b.copyRows(ctx, items)
	case backends.DumpEvents:
		return b.copyEvents(ctx, items)
	case backends.DumpCandidates:
		return b.copyCandidates(ctx, items)
	case backends.DumpSlots:
		return b.Update(ctx, func(tx backends.Tx) error {
			return each(items, func(it *backends.DumpItem) error { return tx.PutSlots(ctx, *it.Slots) })
		})
	case backends.DumpFences:
		// One counter for every chunk: past the largest fence of any.
		var top int64 = 1
		for _, it := range items {
			top = max(top, it.Fence.Fence)
		}
		_, err := b.pool.Exec(ctx, `SELECT setval('fences', greatest($1::bigint, (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fences)))`, top)
		return mapErr(err, "loading the fence counter")
	case backends.DumpLocks:
		return each(items, func(it *backends.DumpItem) error {
			l := it.Lock
			_, err := b.pool.Exec(ctx, `INSERT INTO resource_locks (client, resource, mode, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
				l.Client, l.Resource, string(l.Mode), l.CreatedAt, l.ExpiresAt)
			return mapErr(err, "loading a resource lock")
		})
	case backends.DumpRecords:
		return each(items, func(it *backends.DumpItem) error {
			value := it.Record.Value
			if value == nil {
				value = []byte{} // an empty record (etcd gives no bytes for it), never NULL
			}
			_, err := b.pool.Exec(ctx, `INSERT INTO records (key, value, version) VALUES ($1, $2, 1)`, it.Record.Key, value)
			return mapErr(err, "loading a record")
		})
	}
	return fmt.Errorf("postgres: no dump kind %q", kind)
}

// loadCatalog stores datasets and jobs as the catalog operations do; a
// backfill stores its job again with its candidates queued.
func (b *Backend) loadCatalog(ctx context.Context, items []backends.DumpItem) error {
	_, jobs, version, err := b.VersionedCatalog(ctx)
	if err != nil {
		return err
	}
	for _, it := range items {
		switch {
		case it.Dataset != nil:
			_, version, err = b.PutDataset(ctx, *it.Dataset, nil, version)
		case it.Job != nil:
			_, version, err = b.PutJob(ctx, *it.Job, false, nil, version)
		case it.Backfill != nil:
			for _, j := range jobs {
				if j.ID == it.Backfill.Job {
					_, version, err = b.PutJob(ctx, j, true, nil, version)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// FinishLoad has nothing to do: sequences moved with the loads.
func (b *Backend) FinishLoad(context.Context) error { return nil }

// schemaObjects lists the tables and sequences of the backend's schema
// (tests: what the migrations created, against DumpCovers).
func (b *Backend) schemaObjects(ctx context.Context) ([]string, error) {
	rows, err := b.pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'S', 'p', 'v', 'm') ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
