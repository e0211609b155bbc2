package embedded

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func start(t *testing.T, dir string) (*Server, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Start(ctx, Config{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true, StartTimeout: 20 * time.Second})
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, err := start(t, dir)
	require.NoError(t, err)
	cli, err := s.Client()
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cli.Put(ctx, "k", "v")
	require.NoError(t, err)
	require.True(t, s.IsLeader())
	cli.Close()
	require.NoError(t, s.Close())
	_, err = os.Stat(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err, "the log goes to the data directory")

	s, err = start(t, dir)
	require.NoError(t, err)
	defer s.Close()
	cli, err = s.Client()
	require.NoError(t, err)
	defer cli.Close()
	r, err := cli.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, r.Kvs, 1)
	require.Equal(t, "v", string(r.Kvs[0].Value))
}

func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := start(t, dir)
	require.NoError(t, err)
	_, err = start(t, dir)
	require.ErrorContains(t, err, "is in use by another chunklock")
	require.NoError(t, s.Close())

	// Another program (a plain etcd) holding the database file: etcd's own
	// lock would make the start wait forever; Start refuses at once.
	db, err := os.OpenFile(filepath.Join(dir, "member", "snap", "db"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, tryLock(db))
	_, err = start(t, dir)
	require.ErrorContains(t, err, "is open in another process")
	db.Close()
	s, err = start(t, dir)
	require.NoError(t, err, "the directory is usable once released")
	require.NoError(t, s.Close())
}

func TestPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Start(ctx, Config{Dir: t.TempDir(), ClientAddr: l.Addr().String(), PeerAddr: "127.0.0.1:0", StartTimeout: 20 * time.Second})
	require.ErrorContains(t, err, "client address "+l.Addr().String()+" is not available")
	_, err = Start(ctx, Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: l.Addr().String(), StartTimeout: 20 * time.Second})
	require.ErrorContains(t, err, "peer address "+l.Addr().String()+" is not available")
}

func TestNoDir(t *testing.T) {
	_, err := Start(context.Background(), Config{})
	require.ErrorContains(t, err, "no data directory")
}
