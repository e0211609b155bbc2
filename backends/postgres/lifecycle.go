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
