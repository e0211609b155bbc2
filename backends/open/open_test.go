package open

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

func TestParseEtcdURL(t *testing.T) {
	cfg, err := ParseEtcdURL("etcd://10.0.0.1:2379,10.0.0.2:2379")
	require.NoError(t, err)
	require.Equal(t, []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}, cfg.Endpoints)
	require.Equal(t, "/chunklock/", cfg.Prefix)
	require.Nil(t, cfg.TLS)
	require.Empty(t, cfg.Username)

	cfg, err = ParseEtcdURL("etcd://ops%40x:p%3Ass%2Fw@h1:2379/team/a/?dial_timeout=2s&request_timeout=3s&max_txn_ops=1024&max_request_bytes=4194304")
	require.NoError(t, err)
	require.Equal(t, "ops@x", cfg.Username)
	require.Equal(t, "p:ss/w", cfg.Password)
	require.Equal(t, "/team/a/", cfg.Prefix)
	require.Equal(t, 2*time.Second, cfg.DialTimeout)
	require.Equal(t, 3*time.Second, cfg.RequestTimeout)
	require.Equal(t, 1024, cfg.MaxTxnOps)
	require.Equal(t, 4<<20, cfg.MaxRequestBytes)

	cfg, err = ParseEtcdURL("etcds://[::1]:2379/")
	require.NoError(t, err)
	require.Equal(t, []string{"https://[::1]:2379"}, cfg.Endpoints)
	require.NotNil(t, cfg.TLS)
	require.Equal(t, "/chunklock/", cfg.Prefix)

	cfg, err = ParseEtcdURL("etcd://h:1?insecure_skip_verify=true")
	require.NoError(t, err)
	require.True(t, cfg.TLS.InsecureSkipVerify)
	require.Equal(t, []string{"https://h:1"}, cfg.Endpoints)

	for _, bad := range []string{
		"etcd://",
		"etcd://hostwithoutport",
		"etcd://h:1,",
		"etcd://h:1?color=blue",
		"etcd://h:1?dial_timeout=soon",
		"etcd://h:1?cert=/x.pem",
		"etcd://h:1?cacert=/does/not/exist.pem",
		"etcd://:secret@h:1",
		"mysql://h:1",
	} {
		_, err := ParseEtcdURL(bad)
		require.ErrorIs(t, err, backends.ErrInvalidArgument, bad)
	}
	_, err = ParseEtcdURL("etcd://u:topsecret@h?x=1")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "topsecret", "messages never show the password")
}

func TestParseEtcdURLCACert(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a certificate"), 0o600))
	_, err := ParseEtcdURL("etcd://h:1?cacert=" + bad)
	require.ErrorContains(t, err, "holds no PEM certificate")
}

func TestParsePostgresURL(t *testing.T) {
	dsn, schema, err := ParsePostgresURL("postgres://u:p@db:5432/chunklock?sslmode=require&schema=team_a")
	require.NoError(t, err)
	require.Equal(t, "team_a", schema)
	require.Equal(t, "postgres://u:p@db:5432/chunklock?sslmode=require", dsn)
	dsn, schema, err = ParsePostgresURL("postgresql://db/x")
	require.NoError(t, err)
	require.Empty(t, schema)
	require.Equal(t, "postgresql://db/x", dsn)
}

func TestUnknownScheme(t *testing.T) {
	ctx := context.Background()
	_, err := Open(ctx, "mysql://h/db", Options{})
	require.ErrorIs(t, err, backends.ErrInvalidArgument)
	require.ErrorContains(t, err, "etcd://")
	_, err = Open(ctx, "just-a-path", Options{})
	require.ErrorIs(t, err, backends.ErrInvalidArgument)
}

func embeddedOpts(dir string) Options {
	return Options{DataDir: dir, Embedded: embedded.Config{ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true}}
}

// TestEmbeddedAndEtcdURL opens the embedded store, writes, closes it (which
// stops the server and frees the directory), reopens it, then reaches the
// same server through an etcd:// URL under another prefix. The operator's
// env allowlist (Options.EnvAllow) reaches the engine Open makes.
func TestEmbeddedAndEtcdURL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "", embeddedOpts(dir))
	require.NoError(t, err)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "2026-01-01")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = Open(ctx, "", embeddedOpts(dir))
	require.NoError(t, err)
	defer s.Close()
	ch, err := s.Chunk(ctx, "src", "2026-01-01")
	require.NoError(t, err)
	require.Equal(t, backends.StatusReady, ch.Output.Status)

	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	require.Error(t, err, "the open store holds the data directory")
	require.Nil(t, srv)

	// The embedded server is an etcd like any other.
	addr := clientAddrOf(t, s)
	e, err := Open(ctx, "etcd://"+addr+"/other", Options{})
	require.NoError(t, err)
	defer e.Close()
	ds, err := e.Datasets(ctx)
	require.NoError(t, err)
	require.Empty(t, ds, "another prefix is another installation")
	_, err = e.UpsertDataset(ctx, backends.Dataset{ID: "elsewhere"})
	require.NoError(t, err)
	ds, err = s.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "src", ds[0].ID)

	// The operator's env allowlist reaches the engine Open makes: a store
	// opened with it (a server started with --env-allow) accepts what
	// another refuses.
	job := backends.Job{ID: "j", Inputs: []string{"src"}, Output: "src-out", Env: []backends.EnvVar{{Name: "TAR_OPTIONS", Value: "-v"}}}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src-out"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, job)
	require.ErrorIs(t, err, backends.ErrInvalidArgument)
	allow, err := envname.ParseAllow([]string{"TAR_OPTIONS"})
	require.NoError(t, err)
	allowing, err := Open(ctx, "etcd://"+addr, Options{EnvAllow: allow})
	require.NoError(t, err)
	defer allowing.Close()
	_, err = allowing.UpsertJob(ctx, job)
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, job)
	require.ErrorIs(t, err, backends.ErrInvalidArgument, "the store opened without the allowlist still refuses it")
}

// clientAddrOf finds the client address of the embedded server behind s.
func clientAddrOf(t *testing.T, s backends.Store) string {
	srv := Embedded(s)
	require.NotNil(t, srv, "no embedded server behind the store")
	return strings.TrimPrefix(srv.ClientURL(), "http://")
}

// unknownHost is a host name that does not exist and whose look-up fails
// on this machine without asking a name server: its first label is longer
// than DNS allows (63 bytes), so the resolver answers "no such host" by
// itself. (A name under .invalid would be sent to the configured name
// server, off this machine.)
var unknownHost = "nosuchhost-" + strings.Repeat("x", 60) + ".invalid"

// TestUnknownHostFailsLocally checks the premise of the tests below: the
// look-up of unknownHost fails as not found without dialing a name server.
func TestUnknownHostFailsLocally(t *testing.T) {
	dialed := ""
	r := &net.Resolver{PreferGo: true, Dial: func(_ context.Context, network, addr string) (net.Conn, error) {
		dialed = network + " " + addr
		return nil, fmt.Errorf("no name server in this test")
	}}
	_, err := r.LookupHost(t.Context(), unknownHost)
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.True(t, dnsErr.IsNotFound, "%v", err)
	require.Empty(t, dialed, "the look-up asked a name server")
}

// TestUnknownHost: a store URL naming a host that does not exist is a
// configuration error naming the host, not UNAVAILABLE.
func TestUnknownHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, u := range []string{
		"postgres://chunklock:secret@" + unknownHost + ":5432/db?sslmode=disable",
		"postgresql://" + unknownHost + "/db?schema=a",
		"etcd://" + unknownHost + ":2379/prefix",
		"etcd://127.0.0.1:2379," + unknownHost + ":2379",
		"etcds://" + unknownHost + ":2379",
	} {
		s, err := Open(ctx, u, Options{})
		require.Nil(t, s, u)
		require.ErrorIs(t, err, backends.ErrInvalidArgument, u)
		require.NotErrorIs(t, err, backends.ErrUnavailable, u)
		require.ErrorContains(t, err, fmt.Sprintf("host %q does not exist", unknownHost), u)
		require.NotContains(t, err.Error(), "secret", u)
	}
}

// TestEtcdTimeoutNamesAddress: an etcd endpoint that accepts connections but
// never answers is UNAVAILABLE, and the message says which address was
// tried.
func TestEtcdTimeoutNamesAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close() // never accepts: the kernel queues the connection, nobody speaks
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = Open(ctx, "etcd://"+l.Addr().String()+"?dial_timeout=300ms&request_timeout=300ms", Options{})
	require.ErrorIs(t, err, backends.ErrUnavailable)
	require.ErrorContains(t, err, "cannot reach etcd at http://"+l.Addr().String()+" (dial_timeout 300ms, request_timeout 300ms")
}

func TestPostgresURL(t *testing.T) {
	dsn := os.Getenv("CHUNKLOCK_TEST_POSTGRES")
	set := dsn != ""
	if !set {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if set {
			t.Fatalf("CHUNKLOCK_TEST_POSTGRES is set but PostgreSQL does not answer: %v", err)
		}
		t.Skipf("PostgreSQL does not answer at %s (%v); set CHUNKLOCK_TEST_POSTGRES to run this test", dsn, err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("open_test_%d", time.Now().UnixNano())
	defer conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	s, err := Open(ctx, dsn+sep+"schema="+schema, Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&n))
	require.Positive(t, n, "the tables went into the schema named in the URL")
}
