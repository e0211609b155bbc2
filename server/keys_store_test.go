package server_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/postgres"
	"github.com/chunklock/chunklock/internal/teststores"
)

// TestStoreCopyRevealsNoSecret (guarantee 6): after credentials are set, a
// full copy of the store — pg_dump of the test's PostgreSQL schema, every
// key and value under the test's etcd prefix — holds none of the secrets
// (as is, in base64 or hex, nor inside any base64 or hex run once decoded)
// and none of the job keys, with the age and the Vault keyring. The same
// search does find the dataset URL and every stored ciphertext in the copy,
// so it would find a secret stored in their place.
func TestStoreCopyRevealsNoSecret(t *testing.T) {
	forEachKeyring(t, func(t *testing.T, e keyringEnv) {
		for _, c := range []struct {
			name string
			open func(t *testing.T) (backends.Store, func() string)
		}{{"postgres", pgDumped}, {"etcd", etcdDumped}} {
			t.Run(c.name, func(t *testing.T) {
				store, dump := c.open(t)
				s := e.stack(t, store)
				keyA, keyB := s.define()
				sec := s.setSecrets()
				s.publish("a", "1")
				requireSecrets(t, sec["ja"], s.findNext(runnerA, "ja", "e", keyA))

				copy := dump()
				require.Equal(t, "as is", revealed(copy, "postgres://wh:5432/sales"), "the copy lacks dataset b's URL")
				for _, job := range []string{"ja", "jb"} {
					creds, err := store.Credentials(t.Context(), job)
					require.NoError(t, err)
					require.Len(t, creds, 2)
					for _, cred := range creds {
						require.NotEmpty(t, revealed(copy, string(cred.Ciphertext)), "the copy lacks the ciphertext of %s for %s", job, cred.Dataset)
					}
				}
				requireNoSecret(t, "the store's copy", copy, append(sec.all(), keyA, keyB)...)
			})
		}
	})
}

// pgDumped opens a PostgreSQL store in a schema of its own and returns a
// function that dumps that schema with pg_dump.
func pgDumped(t *testing.T) (backends.Store, func() string) {
	dsn := testDSN(t)
	pgDump, err := exec.LookPath("pg_dump")
	if err != nil {
		if os.Getenv("CHUNKLOCK_TEST_POSTGRES") != "" {
			t.Fatalf("CHUNKLOCK_TEST_POSTGRES is set but pg_dump is not installed: %v", err)
		}
		t.Skipf("pg_dump is not installed (%v); install the PostgreSQL client to run this case", err)
	}
	schema := freshSchema(t)
	b, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	store := engine.New(b, engine.WithClock(backends.NewFakeClock(t0)))
	t.Cleanup(func() { _ = store.Close() })
	return store, func() string {
		out, err := exec.Command(pgDump, "--dbname="+dsn, "--schema="+schema, "--no-owner").Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("pg_dump: %v: %s", err, exit.Stderr)
		}
		require.NoError(t, err)
		require.Contains(t, string(out), "COPY "+schema+".credentials")
		return string(out)
	}
}

// etcdDumped opens an etcd store under a prefix of its own and returns a
// function that reads every key and value under that prefix.
func etcdDumped(t *testing.T) (backends.Store, func() string) {
	srv := testEtcd(t)
	prefix := teststores.EtcdPrefix("server")
	cli, err := srv.Client()
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	b, err := etcd.OpenClient(t.Context(), cli, etcd.Config{Prefix: prefix, MaxTxnOps: srv.MaxTxnOps()})
	require.NoError(t, err)
	store := engine.New(b, engine.WithClock(backends.NewFakeClock(t0)))
	t.Cleanup(func() { _ = store.Close() })
	return store, func() string {
		resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix())
		require.NoError(t, err)
		var b strings.Builder
		for _, kv := range resp.Kvs {
			fmt.Fprintf(&b, "%s = %s\n", kv.Key, kv.Value)
		}
		require.Contains(t, b.String(), prefix+"creds/ja/")
		return b.String()
	}
}
