package postgres

import (
	"context"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
)

// Ordered reads of a dataset's chunks that the engine takes as hints
// (Tx.LatestReady, backends.ReadyLister): each one index scan of the
// dataset's OUTPUT rows, after the transaction's buffered writes.
// And the lock a transaction locking many chunks takes first
// (backends.WideLocker).

// LatestReady finds the newest READY chunk of dataset between from and
// to in one backward index scan (Tx.LatestReady), after the
// buffered writes.
func (t *txn) LatestReady(ctx context.Context, dataset, job, from, to string) (string, bool, error) {
	if err := t.flush(ctx); err != nil {
		return "", false, err
	}
	bottom := ""
	if from != "" {
		bottom = backends.SortKey(from)
	}
	ids, err := t.q.LatestReady(ctx, sqldb.LatestReadyParams{Dataset: dataset, Top: backends.SortKey(to), Bottom: bottom, Job: job})
	if err != nil {
		return "", false, mapErr(err, "finding the newest READY chunk")
	}
	if len(ids) == 0 {
		return "", false, nil
	}
	return ids[0], true, nil
}

// ReadyBetween lists the READY chunks of dataset from from to to in one
// index scan (backends.ReadyLister), after the buffered writes.
func (t *txn) ReadyBetween(ctx context.Context, dataset, job, from, to string) ([]string, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	ids, err := t.q.ReadyBetween(ctx, sqldb.ReadyBetweenParams{Job: job, Dataset: dataset,
		Bottom: backends.SortKey(from), Top: backends.SortKey(to)})
	return ids, mapErr(err, "listing READY chunks")
}

// LockWide queues, ahead of the chunk locks that follow, the lock that one
// transaction locking many chunks at a time holds (backends.WideLocker):
// PostgreSQL keeps advisory locks in a shared table sized by
// max_locks_per_transaction × max_connections, which two claims of a year
// of hours each would fill (every transaction of the server then fails
// with "out of shared memory").
func (t *txn) LockWide(context.Context) error {
	t.enqueue(sqldb.LockWide, []any{t.b.wide}, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return mapErr(err, "waiting for the transactions that lock many chunks")
	})
	return nil
}
