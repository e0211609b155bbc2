package postgres

import (
	"context"

	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A txn's pipeline (see Update): statements queue and go out with the next
// one that needs an answer, in one round trip; sqldb's queries run through
// it as through any connection.

func execResult(br pgx.BatchResults) error {
	_, err := br.Exec()
	return err
}

// enqueue adds a statement to send ahead of the next one.
func (t *txn) enqueue(sql string, args []any, read func(pgx.BatchResults) error) {
	if read == nil {
		read = execResult
	}
	t.queued = append(t.queued, queued{sql: sql, args: args, read: read})
}

// send sends BEGIN and StartUpdate (the first time), the queued statements and then sql, in one round trip, reads the results of
// all but sql and returns the batch positioned on sql's result. The caller
// must close it.
func (t *txn) send(ctx context.Context, sql string, args []any, then ...string) (pgx.BatchResults, error) {
	var batch pgx.Batch
	var reads []func(pgx.BatchResults) error
	if !t.begun {
		batch.Queue(beginSQL)
		reads = append(reads, execResult)
		batch.Queue(sqldb.StartUpdate, t.b.writers)
		reads = append(reads, func(br pgx.BatchResults) error {
			var locked, mode string
			var ignored int64
			return br.QueryRow().Scan(&locked, &mode, &ignored)
		})
		// The catalog version is read by a statement of its own, whose
		// snapshot is taken after the event-writer lock is held: PutJob and
		// PutDataset take that lock exclusively, so this transaction either
		// sees their new version (and the engine re-reads the catalog) or
		// commits before they read the rows they backfill from. A version
		// read in the locking statement itself could come from a snapshot
		// taken before a catalog change that the lock then waited for.
		batch.Queue(sqldb.ReadCatalogVersion)
		reads = append(reads, func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&t.version); err != nil {
				return err
			}
			t.haveVersion = true
			return nil
		})
		t.begun = true
	}
	for _, q := range t.queued {
		batch.Queue(q.sql, q.args...)
		reads = append(reads, q.read)
	}
	t.queued = nil
	batch.Queue(sql, args...)
	for _, s := range then {
		batch.Queue(s)
	}
	br := t.conn.SendBatch(ctx, &batch)
	for _, read := range reads {
		if err := read(br); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return br, nil
}

// pipe is the sqldb.DBTX of a txn: each statement goes out with the
// statements queued before it.
type pipe struct{ t *txn }

// Exec also sends and runs the transaction's trailer (COMMIT), if set.
func (p pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var then []string
	if p.t.trailer != "" {
		then = append(then, p.t.trailer)
	}
	br, err := p.t.send(ctx, sql, args, then...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	for range then {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := p.t.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := p.t.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br}
}

// batchRows closes the batch once its last result has been read.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
