// Package teststores opens chunklock stores of every kind for the tests of
// the packages built on them (server, webhook): the memory store, etcd (one
// embedded member per test binary, a key prefix per store) and PostgreSQL
// (CHUNKLOCK_TEST_POSTGRES, a schema per store, dropped after the test).
package teststores

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/postgres"
)

// Kind opens n Store handles sharing one database, as n server replicas
// would.
type Kind struct {
	Name string
	Open func(t testing.TB, clock backends.Clock, n int) []backends.Store
}

// Kinds is every backend, memory first; name prefixes the etcd key prefixes
// and PostgreSQL schemas the stores use.
func Kinds(name string) []Kind {
	return []Kind{
		{"memory", func(t testing.TB, clock backends.Clock, n int) []backends.Store {
			b := memory.New()
			stores := make([]backends.Store, n)
			for i := range stores {
				stores[i] = engine.New(b, engine.WithClock(clock))
			}
			t.Cleanup(func() { _ = b.Close() })
			return stores
		}},
		{"etcd", func(t testing.TB, clock backends.Clock, n int) []backends.Store {
			srv := Etcd(t)
			prefix := EtcdPrefix(name)
			stores := make([]backends.Store, n)
			for i := range stores {
				cli, err := srv.Client()
				require.NoError(t, err)
				b, err := etcd.OpenClient(t.Context(), cli, etcd.Config{Prefix: prefix, MaxTxnOps: srv.MaxTxnOps()})
				require.NoError(t, err)
				s := engine.New(b, engine.WithClock(clock))
				t.Cleanup(func() {
					_ = s.Close()
					_ = cli.Close()
				})
				stores[i] = s
			}
			return stores
		}},
		{"postgres", func(t testing.TB, clock backends.Clock, n int) []backends.Store {
			dsn := PostgresDSN(t)
			schema := FreshSchema(t, name)
			stores := make([]backends.Store, n)
			for i := range stores {
				b, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema})
				require.NoError(t, err)
				s := engine.New(b, engine.WithClock(clock))
				t.Cleanup(func() { _ = s.Close() })
				stores[i] = s
			}
			return stores
		}},
	}
}

// Memory returns a store kept in memory whose engine reads clock (nil: the
// system clock).
func Memory(clock backends.Clock) backends.Store {
	return engine.New(memory.New(), engine.WithClock(clock))
}

// One embedded etcd member serves every etcd store of a test binary.
var (
	etcdOnce   sync.Once
	etcdServer *embedded.Server
	etcdErr    error
	etcdPrefix atomic.Int64
)

// Etcd returns the test binary's embedded etcd member, started on first use.
func Etcd(t testing.TB) *embedded.Server {
	t.Helper()
	etcdOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chunklock-test-etcd-")
		if err != nil {
			etcdErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		etcdServer, etcdErr = embedded.Start(ctx, embedded.Config{
			Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true, LogLevel: "error",
		})
	})
	require.NoError(t, etcdErr, "starting the embedded etcd member")
	return etcdServer
}

// EtcdPrefix returns a key prefix no other store of this test binary uses.
func EtcdPrefix(name string) string {
	return fmt.Sprintf("/%s-test-%d/", name, etcdPrefix.Add(1))
}

// Main runs the tests, then stops the embedded etcd member if one started.
func Main(m *testing.M) {
	code := m.Run()
	if etcdServer != nil {
		dir := etcdServer.Dir()
		_ = etcdServer.Close()
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

const defaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var pg struct {
	once sync.Once
	dsn  string
	set  bool
	pool *pgxpool.Pool
	err  error
}

// PostgresDSN returns the test database's DSN: CHUNKLOCK_TEST_POSTGRES, or
// the local default. Unset and not answering: skip; set and not
// answering: fail.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() {
		pg.dsn = os.Getenv("CHUNKLOCK_TEST_POSTGRES")
		pg.set = pg.dsn != ""
		if !pg.set {
			pg.dsn = defaultDSN
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pg.pool, pg.err = pgxpool.New(ctx, pg.dsn)
		if pg.err == nil {
			pg.err = pg.pool.Ping(ctx)
		}
	})
	if pg.err != nil {
		if pg.set {
			t.Fatalf("CHUNKLOCK_TEST_POSTGRES is set but PostgreSQL does not answer: %v", pg.err)
		}
		t.Skipf("PostgreSQL does not answer at %s (%v); set CHUNKLOCK_TEST_POSTGRES to run the PostgreSQL cases", defaultDSN, pg.err)
	}
	return pg.dsn
}

// FreshSchema returns a schema name of its own, dropped after the test.
func FreshSchema(t testing.TB, name string) string {
	PostgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "chunklock_" + name + "_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pg.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}
