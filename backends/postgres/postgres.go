// Package postgres is chunklock's PostgreSQL storage backend: the
// backends.Backend and backends.Tx interfaces over a pgx/v5 connection pool.
//
// Layout:
//
//   - migrations/*.sql: the schema, embedded and applied at Open under a
//     session advisory lock (migrate.go), versioned in schema_migrations.
//   - queries/*.sql: every statement, compiled by sqlc into internal/sqldb
//     (regenerate with `go generate ./backends/postgres/`; sqlc lives in its
//     own module under tools/sqlc).
//   - tx.go: Update and the Tx methods. One READ COMMITTED transaction per
//     Update, its statements pipelined (BEGIN with the first statement,
//     chunk locks with the read after them, the buffered writes with
//     COMMIT); chunk locks are transaction-scoped advisory locks; the
//     findNext queue is a candidates table read with FOR UPDATE SKIP LOCKED;
//     an event's seq is its transaction's id and position, and readers only
//     return seqs below the oldest running transaction (watch.go), so seq
//     order never changes under a reader and commits take no global lock.
//   - catalog.go, lists.go, resources.go, watch.go: the other Backend methods.
//   - clock.go: the database clock the engine reads (Backend.Clock).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:generate go -C ../../tools/sqlc tool sqlc -f ../../backends/postgres/sqlc.yaml generate

// Config configures a PostgreSQL store.
type Config struct {
	// DSN is a PostgreSQL connection string (URL or key=value form).
	DSN string
	// Schema, when set, is created if missing and used for every table
	// (search_path), so that several stores can share one database (tests).
	// Empty: the connection's default search_path.
	Schema string
	// MaxConns bounds the connection pool; 0 means DefaultMaxConns.
	MaxConns int32
}

// DefaultMaxConns is the pool size when Config.MaxConns is 0.
const DefaultMaxConns = 16

// DefaultConfig returns a configuration for a local database named chunklock.
func DefaultConfig() Config {
	return Config{DSN: "postgres://127.0.0.1:5432/chunklock", MaxConns: DefaultMaxConns}
}

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate checks the configuration without connecting.
func (c Config) Validate() error {
	if c.DSN == "" {
		return backends.InvalidArgument("postgres: DSN is empty; give a connection string such as postgres://user@host:5432/chunklock")
	}
	if _, err := pgxpool.ParseConfig(c.DSN); err != nil {
		// The parse error may quote the DSN, password included: keep it out.
		return backends.InvalidArgument("postgres: DSN is not a valid PostgreSQL connection string (URL or key=value form)")
	}
	if c.Schema != "" && !schemaPattern.MatchString(c.Schema) {
		return backends.InvalidArgument("postgres: schema %q is invalid: want 1-63 characters of a-z 0-9 _, not starting with a digit", c.Schema)
	}
	if c.MaxConns < 0 {
		return backends.InvalidArgument("postgres: MaxConns must be 0 (default %d) or positive, got %d", DefaultMaxConns, c.MaxConns)
	}
	return nil
}

// eventsChannel is the LISTEN/NOTIFY channel on which committed events are
// announced (empty payload), at most every notifyInterval per server.
const eventsChannel = "chunklock_events"

// Backend is the PostgreSQL implementation of backends.Backend.
type Backend struct {
	// loadMarked: a load moved the holds mark already (marks.go).
	loadMarked atomic.Bool
	pool       *pgxpool.Pool
	connCfg    *pgx.ConnConfig // for the dedicated LISTEN connection
	q          *sqldb.Queries  // prepared, cached statements
	listQ      *sqldb.Queries  // list queries, planned for their actual filters
	schema     string
	salt       int64         // seeds the chunk and resource lock hashes of this schema
	writers    int64         // key of the event-writer lock (see eventWriters)
	wide       int64         // key of the lock of transactions locking many chunks (LockWide)
	notify     chan struct{} // kicks the notifier: this server committed events

	ctx    context.Context // cancelled by Close: stops background goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	hub    *hub

	clock *dbClock // see Clock

	// slots decodes slot records, copying one read back as last seen.
	slots backends.SlotCodec
	// slotRows holds the keys of slot records known to exist: rows of
	// table slots are never deleted, so a claim needs to create a record
	// (ensureSlotsSQL) at most once per key and server.
	slotRows sync.Map // string -> struct{}
}

// What the backend implements (backends/backend.go): a changed signature
// must fail the build, not turn a capability off.
var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.Tx             = (*txn)(nil)
	_ backends.LiveCounter    = (*txn)(nil)
	_ backends.LivePrefetcher = (*txn)(nil)
	_ backends.SlotPrefetcher = (*txn)(nil)
	_ backends.ReadyLister    = (*txn)(nil)
	_ backends.WideLocker     = (*txn)(nil)
)

// Open connects to PostgreSQL, applies pending migrations, measures the
// database's clock and returns the Backend (engine.New makes it a Store).
// Close it to release the pool.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, backends.InvalidArgument("postgres: DSN is not a valid PostgreSQL connection string")
	}
	pcfg.MaxConns = cfg.MaxConns
	if pcfg.MaxConns == 0 {
		pcfg.MaxConns = DefaultMaxConns
	}
	if cfg.Schema != "" {
		pcfg.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, mapErr(err, "connecting")
	}
	bctx, cancel := context.WithCancel(context.Background())
	b := &Backend{
		pool:    pool,
		connCfg: pcfg.ConnConfig.Copy(),
		q:       sqldb.New(pool),
		listQ:   sqldb.New(execModeDB{pool}),
		schema:  cfg.Schema,
		salt:    lockKey("chunks", cfg.Schema),
		writers: lockKey("event-writers", cfg.Schema),
		wide:    lockKey("wide-transactions", cfg.Schema),
		notify:  make(chan struct{}, 1),
		ctx:     bctx,
		cancel:  cancel,
	}
	if cfg.Schema == "" {
		b.salt = 0
	}
	if err := pool.Ping(ctx); err != nil {
		b.Close()
		return nil, mapErr(err, "connecting")
	}
	if err := migrate(ctx, pool, cfg.Schema); err != nil {
		b.Close()
		return nil, err
	}
	if b.clock, err = newDBClock(ctx, b); err != nil {
		b.Close()
		return nil, err
	}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		b.notifier()
	}()
	go func() {
		defer b.wg.Done()
		b.compactCounts()
	}()
	return b, nil
}

// Clock is the database's clock: the local clock corrected by an offset
// measured against the database at Open and every 30 seconds, so that
// every server sharing the database agrees on leases.
func (b *Backend) Clock() backends.Clock { return b.clock }

// lockKey derives a stable 64-bit advisory lock key for a purpose within a
// schema: every server using the same schema computes the same key.
func lockKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("chunklock/" + purpose + "/" + schema))
	return int64(h.Sum64())
}

// usable refuses work on a closed backend or a finished context.
func (b *Backend) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return backends.Unavailable(err, "request cancelled or timed out before reaching PostgreSQL")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backends.Unavailable(nil, "the PostgreSQL store is closed")
	}
	return nil
}

// Ping checks that the database answers.
func (b *Backend) Ping(ctx context.Context) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	return mapErr(b.pool.Ping(ctx), "pinging the database")
}

// Close stops the background goroutines, closes every event watch and the
// connection pool. It is safe to call more than once.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	b.pool.Close()
	return nil
}

// String describes the backend for logs (never the DSN: it may hold a password).
func (b *Backend) String() string {
	if b.schema != "" {
		return "postgres (schema " + b.schema + ")"
	}
	return "postgres"
}

// execModeDB runs queries without a prepared statement, so PostgreSQL plans
// them for the actual parameters. The list queries use it: their optional
// filters ("$1 IS NULL OR col = $1") deserve a plan per call, not a generic one.
type execModeDB struct{ *pgxpool.Pool }

func (d execModeDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return d.Pool.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func (d execModeDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return d.Pool.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

// mapErr turns a driver error into what the engine expects: *backends.Error
// values pass through, failures to reach the database become UNAVAILABLE,
// anything else stays an internal error (scrubbed by the API layer). No SQL
// text ever goes into a *backends.Error message.
func mapErr(err error, doing string) error {
	if err == nil {
		return nil
	}
	var be *backends.Error
	if errors.As(err, &be) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return backends.Unavailable(err, "request cancelled or timed out while %s", doing)
	}
	if unreachable(err) {
		return backends.Unavailable(err, "PostgreSQL is unavailable while %s; retry later", doing)
	}
	return fmt.Errorf("postgres: %s: %w", doing, err)
}

// unreachable tells whether err means the database could not be reached or
// the connection was lost, rather than a failed statement.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", // admin_shutdown
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now
			pgErr.Code == "53300", // too_many_connections
			pgErr.Code == "57014": // query_canceled (statement timeout)
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// rollbackTimeout bounds the rollback of a failed transaction.
const rollbackTimeout = 5 * time.Second
