package embedded

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	require.ErrorContains(t, err, "another etcd or chunklock may be running there")
	var ae *AddrError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, AddrError{Role: "client", Addr: l.Addr().String(), Err: ae.Err}, *ae)
	_, err = Start(ctx, Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: l.Addr().String(), StartTimeout: 20 * time.Second})
	require.ErrorContains(t, err, "peer address "+l.Addr().String()+" is not available")
}

func TestNoDir(t *testing.T) {
	_, err := Start(context.Background(), Config{})
	require.ErrorContains(t, err, "no data directory")
}

// startDefault starts a member in dir with no address given.
func startDefault(t *testing.T, dir string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Config{Dir: dir, UnsafeNoFsync: true, StartTimeout: 20 * time.Second})
	require.NoError(t, err)
	return s
}

// putGet writes and reads a key through a client of s.
func putGet(t *testing.T, s *Server) {
	t.Helper()
	cli, err := s.Client()
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, "k", s.Dir())
	require.NoError(t, err)
	r, err := cli.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, r.Kvs, 1)
	require.Equal(t, s.Dir(), string(r.Kvs[0].Value), "each member has its own data")
}

// TestDefaultAddressesSideBySide: members given no address serve clients
// on a socket in their own data directory and peers on a free port, so
// two of them run at once; closing removes the socket.
func TestDefaultAddressesSideBySide(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	servers := make([]*Server, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { servers[i] = startDefault(t, dir) })
	}
	wg.Wait()
	for i, s := range servers {
		require.NotNil(t, s)
		sock := filepath.Join(dirs[i], SocketName)
		require.Equal(t, "unix://"+sock, s.ClientURL())
		require.True(t, strings.HasPrefix(s.PeerURL(), "http://127.0.0.1:"), s.PeerURL())
		require.NotEqual(t, "http://127.0.0.1:0", s.PeerURL(), "the peer URL names the port picked")
		fi, err := os.Stat(sock)
		require.NoError(t, err)
		require.Equal(t, os.ModeSocket, fi.Mode().Type())
		putGet(t, s)
	}
	require.NotEqual(t, servers[0].PeerURL(), servers[1].PeerURL())
	for i, s := range servers {
		require.NoError(t, s.Close())
		_, err := os.Stat(filepath.Join(dirs[i], SocketName))
		require.True(t, errors.Is(err, os.ErrNotExist), "the socket is removed on close: %v", err)
	}

	// A socket left behind by a process that died is replaced.
	require.NoError(t, os.WriteFile(filepath.Join(dirs[0], SocketName), nil, 0o600))
	s := startDefault(t, dirs[0])
	defer s.Close()
	putGet(t, s)
}

// TestLongDirUsesLoopbackPort: a data directory whose socket path would be
// too long for a unix socket gets a free port of 127.0.0.1 instead.
func TestLongDirUsesLoopbackPort(t *testing.T) {
	dir := t.TempDir()
	for len(filepath.Join(dir, SocketName)) <= maxSocketPath {
		dir = filepath.Join(dir, strings.Repeat("d", 20))
	}
	s := startDefault(t, dir)
	defer s.Close()
	require.True(t, strings.HasPrefix(s.ClientURL(), "http://127.0.0.1:"), s.ClientURL())
	require.NotEqual(t, "http://127.0.0.1:0", s.ClientURL())
	putGet(t, s)
}
