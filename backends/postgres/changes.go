package postgres

import (
	"context"
	"strconv"

	"github.com/chunklock/chunklock/backends"
	"github.com/jackc/pgx/v5"
)

// Catalog changes (backends/changes.go), in the table catalog_changes
// (migration 0014); a change's cursor is its id.

const insertChangeSQL = `INSERT INTO catalog_changes (actor, at, kind, object, op, dataset, job, before)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json)`

const listChangesSQL = `SELECT id, actor, at, kind, object, op, dataset, job, before FROM catalog_changes
WHERE ($1 = '' OR dataset = $1) AND ($2 = '' OR job = $2) AND ($3 = '' OR actor = $3) AND id < $4
ORDER BY id DESC LIMIT $5`

// changeArgs returns the arguments of insertChangeSQL for the change ctx
// carries, with before for a credential's; nil when there is none.
func changeArgs(ctx context.Context, before []byte) []any {
	c := backends.ChangeFrom(ctx)
	if c == nil || c.Op == "" {
		return nil
	}
	if before == nil {
		before = c.Before
	}
	var doc any
	if len(before) > 0 {
		doc = string(before)
	}
	return []any{c.Actor, c.Time, c.Kind, c.ID, c.Op, c.Dataset, c.Job, doc}
}

// recordChange writes the change ctx carries, if any, in tx.
func recordChange(ctx context.Context, tx pgx.Tx, before []byte) error {
	args := changeArgs(ctx, before)
	if args == nil {
		return nil
	}
	_, err := tx.Exec(ctx, insertChangeSQL, args...)
	return err
}

func (b *Backend) ListChanges(ctx context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	if err := b.usable(ctx); err != nil {
		return backends.ChangePage{}, err
	}
	after := int64(1<<63 - 1)
	if f.After != "" {
		n, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil || n < 1 {
			return backends.ChangePage{}, backends.InvalidArgument("after: not a cursor of a catalog change")
		}
		after = n
	}
	rows, err := b.pool.Query(ctx, listChangesSQL, f.Dataset, f.Job, f.Actor, after, f.First+1)
	if err != nil {
		return backends.ChangePage{}, mapErr(err, "reading catalog changes")
	}
	defer rows.Close()
	var page backends.ChangePage
	for rows.Next() {
		var c backends.CatalogChange
		var id int64
		if err := rows.Scan(&id, &c.Actor, &c.Time, &c.Kind, &c.ID, &c.Op, &c.Dataset, &c.Job, &c.Before); err != nil {
			return backends.ChangePage{}, mapErr(err, "reading catalog changes")
		}
		if len(page.Changes) == f.First {
			page.HasNextPage = true
			break
		}
		c.Cursor = strconv.FormatInt(id, 10)
		c.Time = c.Time.UTC()
		page.Changes = append(page.Changes, c)
	}
	return page, mapErr(rows.Err(), "reading catalog changes")
}
