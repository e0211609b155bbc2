package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
)

// The catalog lifecycle (SPEC §11): deleting datasets. A catalog change
// waits for every transaction in flight and holds new ones back
// (lockCatalog), so the rows it counts and deletes are all the committed
// ones, and a publish that comes after finds the catalog changed.

// errKeepChunks rolls back a deletion that found chunks it may not delete.
var errKeepChunks = errors.New("postgres: the dataset has chunks")

func (b *Backend) DeleteDataset(ctx context.Context, id string, withChunks bool, version int64) (int, int64, error) {
	if err := b.usable(ctx); err != nil {
		return 0, 0, err
	}
	var chunks int
	err := b.changeCatalogTx(ctx, &version, func(_ *sqldb.Queries, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM status_rows WHERE dataset = $1 AND role = 'OUTPUT'`, id).Scan(&chunks); err != nil {
			return err
		}
		if chunks > 0 && !withChunks {
			return errKeepChunks
		}
		for _, q := range []string{
			`DELETE FROM status_rows WHERE dataset = $1`,
			`DELETE FROM credentials WHERE dataset = $1`,
			`DELETE FROM partition_values WHERE dataset = $1`,
			`DELETE FROM datasets WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errKeepChunks):
		return chunks, 0, nil
	case err != nil:
		return 0, 0, mapCatalogErr(err, "deleting dataset "+id)
	}
	return chunks, version, nil
}

// DeletePool deletes the pool's slot record: claims counted live keep no
// holders in it (LiveCounter), so the record is the definition alone.
func (b *Backend) DeletePool(ctx context.Context, id string, version int64) (int64, error) {
	if err := b.usable(ctx); err != nil {
		return 0, err
	}
	err := b.changeCatalogTx(ctx, &version, func(_ *sqldb.Queries, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM slots WHERE key = $1`, backends.PoolSlotsKey(id))
		return err
	})
	if err != nil {
		return 0, mapCatalogErr(err, "deleting pool "+id)
	}
	return version, nil
}

// DeleteJob refuses while the job has RUNNING claims (read under the
// catalog lock, after every transaction in flight committed), then deletes
// its rows, credentials and candidates and records on its output the id
// its OUTPUT rows stay keyed under.
func (b *Backend) DeleteJob(ctx context.Context, j backends.Job, version int64) (int64, error) {
	if err := b.usable(ctx); err != nil {
		return 0, err
	}
	var live error
	err := b.changeCatalogTx(ctx, &version, func(_ *sqldb.Queries, tx pgx.Tx) error {
		// Its claims are its OUTPUT rows in RUNNING, keyed under its row
		// job: the output's output_key when it took a deleted producer's
		// chunks over.
		rows, err := tx.Query(ctx, `SELECT dataid FROM status_rows
			WHERE job = coalesce(nullif((SELECT output_key FROM datasets WHERE id = $2), ''), $1)
			  AND dataset = $2 AND role = 'OUTPUT' AND status = 'RUNNING' ORDER BY sortkey`, j.ID, j.Output)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			var blockers []backends.Blocker
			for _, id := range ids {
				blockers = append(blockers, backends.Blocker{Dataset: j.Output, DataID: id, Job: j.ID, Kind: backends.BlockerOutputLocked, Status: backends.StatusRunning})
			}
			live = backends.LiveClaims(j.ID, j.Paused, blockers)
			return live
		}
		for _, q := range []string{
			`DELETE FROM status_rows WHERE job = $1 AND role = 'INPUT'`,
			`DELETE FROM credentials WHERE job = $1`,
			`DELETE FROM candidates WHERE job = $1`,
			`DELETE FROM jobs WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, j.ID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE datasets SET output_key = $2 WHERE id = $1 AND output_key = ''`, j.Output, j.ID)
		return err
	})
	switch {
	case live != nil && errors.Is(err, live):
		return 0, live
	case err != nil:
		return 0, mapCatalogErr(err, "deleting job "+j.ID)
	}
	return version, nil
}
