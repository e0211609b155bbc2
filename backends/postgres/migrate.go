package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1].version == v {
			return nil, fmt.Errorf("two migrations have version %d", v)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrate applies the pending migrations, each in its own transaction,
// while holding a session advisory lock so that servers starting together
// take turns: the first applies, the others find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	all, err := migrations()
	if err != nil {
		return fmt.Errorf("postgres: reading embedded migrations: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return mapErr(err, "connecting to apply migrations")
	}
	defer conn.Release()
	key := lockKey("migrate", schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return mapErr(err, "waiting for the migration lock")
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
			// Closing the session is the other way to release its locks.
			_ = conn.Hijack().Close(uctx)
		}
	}()
	if schema != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return mapErr(err, "creating the schema")
		}
	}
	if _, err := conn.Exec(ctx, createMigrationsTable); err != nil {
		return mapErr(err, "creating the schema_migrations table")
	}
	applied, current, err := appliedMigrations(ctx, conn)
	if err != nil {
		return err
	}
	latest := all[len(all)-1].version
	if current > latest {
		return backends.InvalidArgument("postgres: the database schema is at version %d but this server knows migrations up to %d only; upgrade the server", current, latest)
	}
	// Every migration not applied yet is applied, in version order, also
	// one numbered below the newest applied: versions are taken by changes
	// made side by side, and one may land after another numbered above it.
	for _, m := range all {
		if applied[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return mapErr(err, "applying migration "+m.name)
		}
	}
	return nil
}

// appliedMigrations reads the versions schema_migrations records, and the
// newest of them.
func appliedMigrations(ctx context.Context, conn *pgxpool.Conn) (map[int]bool, int, error) {
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, 0, mapErr(err, "reading the schema version")
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, 0, mapErr(err, "reading the schema version")
	}
	applied, current := map[int]bool{}, 0
	for _, v := range vs {
		applied[v], current = true, max(current, v)
	}
	return applied, current, nil
}
