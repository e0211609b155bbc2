package etcd

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// One embedded member serves every test of the package; each test works
// under a fresh key prefix.
var (
	testServer *embedded.Server
	testClient *clientv3.Client
	prefixSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "chunklock-etcd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testServer, err = embedded.Start(ctx, embedded.Config{
		Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testServer.Close()
	testClient, err = testServer.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testClient.Close()
	return m.Run()
}

// freshConfig returns a configuration under a prefix no other test uses.
func freshConfig() Config {
	return Config{
		Prefix:    fmt.Sprintf("/test-%d-%d/", os.Getpid(), prefixSeq.Add(1)),
		MaxTxnOps: testServer.MaxTxnOps(),
	}
}

// newStore opens a store on the shared server under a fresh prefix, its
// engine reading clock; it is closed when the test ends.
func newStore(t testing.TB, clock backends.Clock) backends.Store {
	t.Helper()
	b, err := OpenClient(context.Background(), testClient, freshConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(b, engine.WithClock(clock))
	t.Cleanup(func() { s.Close() })
	return s
}
