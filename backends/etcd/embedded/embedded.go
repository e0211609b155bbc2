// Package embedded runs an etcd member inside the chunklock process: the
// default store, so that a single binary needs no database. It is also how
// the tests build clusters of several members on loopback.
//
// Start takes an exclusive lock on the data directory first, so a second
// process pointed at the same directory fails at once with a clear message
// (etcd itself would wait forever on its database file lock). The server
// logs through zap at warn level to <dir>/etcd.log unless told otherwise.
//
// Unless told an address, a member listens where nothing can collide with
// it: clients on the unix socket <dir>/etcd.sock (a free port of 127.0.0.1
// when that path is too long for a socket), peers on a free port of
// 127.0.0.1. Several chunklocks, and etcds, thus run side by side on one
// machine without any setting.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// SocketName is the client socket's file name in the data directory.
const SocketName = "etcd.sock"

// maxSocketPath is the longest unix socket path every platform takes:
// sun_path holds 108 bytes on Linux and 104 on BSDs and macOS, with the
// terminating NUL.
const maxSocketPath = 103

// freePortTries bounds the attempts to start on free ports picked by
// Start: another process may take a picked port before etcd binds it.
const freePortTries = 3

// Config describes one member.
type Config struct {
	// Dir is the data directory (created when missing). Required.
	Dir string
	// Name is the member's name (default "chunklock").
	Name string
	// ClientAddr is the host:port clients connect to; port 0 picks a free
	// port. Empty (the default): the unix socket <Dir>/etcd.sock, or a free
	// port of 127.0.0.1 when that path is too long for a socket.
	ClientAddr string
	// PeerAddr is the host:port other members connect to; port 0 picks a
	// free port. Empty (the default): a free port of 127.0.0.1, which suits
	// a single member only.
	PeerAddr string
	// InitialCluster lists every member of a new cluster as
	// "name=http://host:port,..." (their peer URLs). Empty: this member alone.
	InitialCluster string
	// ClusterToken distinguishes clusters bootstrapped on the same network
	// (default "chunklock").
	ClusterToken string
	// StartTimeout bounds the wait for the member to serve (default 15
	// minutes: a member loads its whole index at start, 26 s for a million
	// chunks on an idle machine; the wait is logged every 15 s).
	StartTimeout time.Duration
	// LogLevel is debug, info, warn (default) or error.
	LogLevel string
	// LogOutput is "stderr", "stdout" or a file path (default <Dir>/etcd.log).
	LogOutput string
	// MaxTxnOps is etcd's --max-txn-ops (default 4096).
	MaxTxnOps uint
	// QuotaBackendBytes is etcd's --quota-backend-bytes (default 8 GiB):
	// past it the member refuses every write (space.go).
	QuotaBackendBytes int64
	// CompactionRetention is the periodic auto-compaction window (default
	// "1m"): history older than that is dropped, keeping the database small.
	// chunklock keeps no use for older history (its event log is its own
	// keys; a transaction whose snapshot is compacted away runs again), and
	// until a compaction every consumed chunk leaves a deleted key in its
	// job's candidate range that each findNext visits (BenchmarkFindNextQueue).
	CompactionRetention string
	// UnsafeNoFsync skips fsync (tests and benchmarks only: a crash loses data).
	UnsafeNoFsync bool
	// SpaceInterval is how often the member looks at its space against
	// its quota (space.go): defragments, disarms NOSPACE, warns (default
	// 1m; negative: never, but at start).
	SpaceInterval time.Duration
	// WarnEvery is how often the warning of a store near or at its quota
	// is logged again while it lasts (default 30m).
	WarnEvery time.Duration
	// DefragMinBytes is the least a defragmentation must give back to be
	// run (default 64 MiB).
	DefragMinBytes int64
	// Logger receives the member's own messages: defragmentations and
	// warnings about its space (default: discarded). etcd's log is
	// LogOutput.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "chunklock"
	}
	if c.PeerAddr == "" {
		c.PeerAddr = "127.0.0.1:0"
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "chunklock"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 15 * time.Minute
	}
	if c.LogLevel == "" {
		c.LogLevel = "warn"
	}
	if c.LogOutput == "" {
		c.LogOutput = filepath.Join(c.Dir, "etcd.log")
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = 4096
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = 8 << 30
	}
	if c.CompactionRetention == "" {
		c.CompactionRetention = "1m"
	}
	if c.SpaceInterval == 0 {
		c.SpaceInterval = time.Minute
	}
	if c.WarnEvery == 0 {
		c.WarnEvery = 30 * time.Minute
	}
	if c.DefragMinBytes == 0 {
		c.DefragMinBytes = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server is a running member.
type Server struct {
	cfg       Config
	mu        sync.Mutex // guards e
	e         *embed.Etcd
	lock      *os.File
	clientURL string
	peerURL   string

	reclaimMu sync.Mutex // one Reclaim at a time
	stopSpace chan struct{}
	stopOnce  sync.Once
	spaceDone chan struct{}
}

// Start starts a member and waits until it serves clients (for a new
// cluster of several members, until a leader is elected: start the others
// concurrently).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: no data directory given")
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: cannot create data directory: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, lock: lock}
	ok := false
	defer func() {
		if !ok {
			s.lock.Close()
		}
	}()
	e, err := s.startEtcd()
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, e, cfg); err != nil {
		return nil, err
	}
	s.e = e
	ok = true
	s.startSpaceWatch(ctx)
	return s, nil
}

// waitReady waits for the member e to serve, logging the wait every 15 s
// (a large store takes a while: the member reads its whole index), and
// stops it when it fails, when cfg.StartTimeout passes or ctx ends.
func waitReady(ctx context.Context, e *embed.Etcd, cfg Config) error {
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	began := time.Now()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			cfg.Logger.Info("embedded store: still starting (a member reads its whole index at start)",
				"waited", time.Since(began).Round(time.Second), "timeout", cfg.StartTimeout, "dir", cfg.Dir)
			continue
		case <-e.Server.ReadyNotify():
			return nil
		case err := <-e.Err():
			e.Close()
			return fmt.Errorf("embedded etcd: failed while starting (see %s): %w", cfg.LogOutput, err)
		case <-timer.C:
			e.Server.HardStop()
			e.Close()
			return fmt.Errorf("embedded etcd: not ready after %s (for a cluster, are the other members started? see %s)", cfg.StartTimeout, cfg.LogOutput)
		case <-ctx.Done():
			e.Server.HardStop()
			e.Close()
			return fmt.Errorf("embedded etcd: start cancelled: %w", ctx.Err())
		}
	}
}

// startSpaceWatch reclaims space once (a member restarted with a larger
// quota is disarmed at once), warns when the space deserves it, and
// starts watchSpace.
func (s *Server) startSpaceWatch(ctx context.Context) {
	r, err := s.Reclaim(ctx)
	if err != nil {
		s.cfg.Logger.Warn("embedded store: reclaiming space at start failed", "err", err)
	} else {
		logReclaimed(s.cfg.Logger, r)
		if w := r.After.Warning(); w != "" {
			s.cfg.Logger.Warn(w, "size", r.After.Size, "in_use", r.After.InUse, "quota", r.After.Quota)
		}
	}
	s.stopSpace, s.spaceDone = make(chan struct{}), make(chan struct{})
	if s.cfg.SpaceInterval < 0 {
		close(s.spaceDone)
		return
	}
	go func() {
		defer close(s.spaceDone)
		s.watchSpace(s.stopSpace)
	}()
}

// etcd is the running server; nil once closed.
func (s *Server) etcd() *embed.Etcd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e
}

// startEtcd starts the server on the configured addresses, picking free
// ports anew when another process took a picked one first.
func (s *Server) startEtcd() (*embed.Etcd, error) {
	for try := 1; ; try++ {
		a, err := s.cfg.addresses()
		if err != nil {
			return nil, err
		}
		e, err := embed.StartEtcd(s.etcdConfig(a))
		switch {
		case err == nil:
			s.clientURL, s.peerURL = a.client.String(), a.peer.String()
			return e, nil
		case errors.Is(err, syscall.EADDRINUSE) && a.picked && try < freePortTries:
			continue
		case errors.Is(err, syscall.EADDRINUSE):
			return nil, fmt.Errorf("embedded etcd: an address is already in use (clients %s, peers %s): choose other addresses: %w", a.client.String(), a.peer.String(), err)
		}
		return nil, fmt.Errorf("embedded etcd: cannot start (see %s): %w", s.cfg.LogOutput, err)
	}
}

// etcdConfig is the configuration of the etcd server on addresses a.
func (s *Server) etcdConfig(a addresses) *embed.Config {
	cfg := s.cfg
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{a.client}, []url.URL{a.client}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{a.peer}, []url.URL{a.peer}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + a.peer.String()
	}
	ec.InitialClusterToken = cfg.ClusterToken
	ec.Logger = "zap"
	ec.LogLevel = cfg.LogLevel
	ec.LogOutputs = []string{cfg.LogOutput}
	ec.MaxTxnOps = cfg.MaxTxnOps
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = cfg.CompactionRetention
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	ec.EnableGRPCGateway = false
	ec.Metrics = "basic"
	return ec
}

// addresses are the URLs a member listens on.
type addresses struct {
	client, peer url.URL
	// picked: Start chose a port, which another process may take before
	// etcd binds it.
	picked bool
}

// addresses resolves the configured addresses: the client socket when no
// client address is given, free ports for port 0.
func (c Config) addresses() (addresses, error) {
	var a addresses
	clientAddr := c.ClientAddr
	if clientAddr == "" {
		if sock, ok := socketPath(c.Dir); ok {
			a.client = url.URL{Scheme: "unix", Path: sock}
		} else {
			clientAddr = "127.0.0.1:0"
		}
	}
	if clientAddr != "" {
		addr, picked, err := tcpAddr("client", clientAddr)
		if err != nil {
			return a, err
		}
		a.client, a.picked = url.URL{Scheme: "http", Host: addr}, picked
	}
	addr, picked, err := tcpAddr("peer", c.PeerAddr)
	if err != nil {
		return a, err
	}
	a.peer, a.picked = url.URL{Scheme: "http", Host: addr}, a.picked || picked
	return a, nil
}

// socketPath is the absolute path of the client socket in dir; false when
// it is too long for a unix socket (or the platform has none).
func socketPath(dir string) (string, bool) {
	if runtime.GOOS == "windows" {
		return "", false
	}
	p, err := filepath.Abs(filepath.Join(dir, SocketName))
	if err != nil || len(p) > maxSocketPath {
		return "", false
	}
	return p, true
}

// tcpAddr checks a host:port address: port 0 becomes a free port (picked
// true); any other address must be free.
func tcpAddr(role, addr string) (string, bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("embedded etcd: %s address %q: %w", role, addr, err)
	}
	if port == "0" {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", false, fmt.Errorf("embedded etcd: %s address %s: %w", role, addr, err)
		}
		defer l.Close()
		return l.Addr().String(), true, nil
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", false, fmt.Errorf("embedded etcd: %s address %q: port %q is not a number", role, addr, port)
	}
	if err := checkFree(addr); err != nil {
		return "", false, &AddrError{Role: role, Addr: addr, Err: err}
	}
	return addr, false, nil
}

// AddrError reports an address asked for that cannot be listened on,
// mostly because another process listens there.
type AddrError struct {
	Role string // "client" or "peer"
	Addr string
	Err  error
}

func (e *AddrError) Error() string {
	hint := ""
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		hint = "; another etcd or chunklock may be running there: choose another address, or give none to listen where nothing collides"
	}
	return fmt.Sprintf("embedded etcd: %s address %s is not available (%v)%s", e.Role, e.Addr, e.Err, hint)
}

func (e *AddrError) Unwrap() error { return e.Err }

// checkFree fails fast, with the address in the message, when something
// listens on addr already.
func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return l.Close()
}

// lockDir takes an exclusive, non-blocking lock on <dir>/chunklock.lock and
// checks that etcd's database file is not open in another process.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "chunklock.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: cannot open lock file: %w", err)
	}
	if err := tryLock(f); err != nil {
		owner, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(owner))
		if who != "" {
			who = " (process " + who + ")"
		}
		return nil, fmt.Errorf("embedded etcd: data directory %s is in use by another chunklock%s; stop it or choose another data directory", dir, who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	db := filepath.Join(dir, "member", "snap", "db")
	if d, err := os.OpenFile(db, os.O_RDWR, 0); err == nil {
		err := tryLock(d)
		d.Close() // closing drops the probe's lock
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("embedded etcd: database %s is open in another process (an etcd server?); stop it or choose another data directory", db)
		}
	}
	return f, nil
}

// ClientURL is the URL clients connect to: unix:///path/etcd.sock or
// http://host:port.
func (s *Server) ClientURL() string { return s.clientURL }

// PeerURL is the URL other members connect to.
func (s *Server) PeerURL() string { return s.peerURL }

// Endpoints lists the client URL, for clientv3.Config.
func (s *Server) Endpoints() []string { return []string{s.clientURL} }

// Name is the member's name.
func (s *Server) Name() string { return s.cfg.Name }

// Dir is the data directory.
func (s *Server) Dir() string { return s.cfg.Dir }

// MaxTxnOps is the member's --max-txn-ops.
func (s *Server) MaxTxnOps() int { return int(s.cfg.MaxTxnOps) }

// Etcd exposes the embedded server (tests).
func (s *Server) Etcd() *embed.Etcd { return s.etcd() }

// IsLeader tells whether this member leads the cluster now.
func (s *Server) IsLeader() bool {
	e := s.etcd()
	return e != nil && e.Server.Leader() == e.Server.MemberID()
}

// Client connects a client to this member alone, logging nothing.
func (s *Server) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// Close stops the member (a leader hands leadership over first) and
// releases the data directory.
func (s *Server) Close() error {
	if s.etcd() == nil {
		return nil
	}
	s.stopOnce.Do(func() { close(s.stopSpace) })
	<-s.spaceDone
	s.reclaimMu.Lock() // a Reclaim of another goroutine ends first
	defer s.reclaimMu.Unlock()
	s.mu.Lock()
	e := s.e
	s.e = nil
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	e.Close()
	return s.lock.Close()
}
