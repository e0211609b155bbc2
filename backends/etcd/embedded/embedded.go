// Package embedded runs an etcd member inside the chunklock process: the
// default store, so that a single binary needs no database. It is also how
// the tests build clusters of several members on loopback.
//
// Start takes an exclusive lock on the data directory first, so a second
// process pointed at the same directory fails at once with a clear message
// (etcd itself would wait forever on its database file lock). The server
// logs through zap at warn level to <dir>/etcd.log unless told otherwise.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Default addresses: not etcd's own 2379/2380, so that chunklock's embedded
// store does not clash with an etcd installed on the same machine.
const (
	DefaultClientAddr = "127.0.0.1:23790"
	DefaultPeerAddr   = "127.0.0.1:23800"
)

// Config describes one member.
type Config struct {
	// Dir is the data directory (created when missing). Required.
	Dir string
	// Name is the member's name (default "chunklock").
	Name string
	// ClientAddr is the host:port clients connect to (default
	// 127.0.0.1:23790); port 0 picks a free port.
	ClientAddr string
	// PeerAddr is the host:port other members connect to (default
	// 127.0.0.1:23800); port 0 picks a free port (single member only).
	PeerAddr string
	// InitialCluster lists every member of a new cluster as
	// "name=http://host:port,..." (their peer URLs). Empty: this member alone.
	InitialCluster string
	// ClusterToken distinguishes clusters bootstrapped on the same network
	// (default "chunklock").
	ClusterToken string
	// StartTimeout bounds the wait for the member to serve (default 60s).
	StartTimeout time.Duration
	// LogLevel is debug, info, warn (default) or error.
	LogLevel string
	// LogOutput is "stderr", "stdout" or a file path (default <Dir>/etcd.log).
	LogOutput string
	// MaxTxnOps is etcd's --max-txn-ops (default 4096).
	MaxTxnOps uint
	// QuotaBackendBytes is etcd's --quota-backend-bytes (default 8 GiB).
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
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "chunklock"
	}
	if c.ClientAddr == "" {
		c.ClientAddr = DefaultClientAddr
	}
	if c.PeerAddr == "" {
		c.PeerAddr = DefaultPeerAddr
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "chunklock"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
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
	return c
}

// Server is a running member.
type Server struct {
	cfg       Config
	e         *embed.Etcd
	lock      *os.File
	clientURL string
	peerURL   string
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
	clientAddr, err := resolveAddr(cfg.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client address: %w", err)
	}
	peerAddr, err := resolveAddr(cfg.PeerAddr)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer address: %w", err)
	}
	for _, a := range []struct{ what, addr string }{{"client", clientAddr}, {"peer", peerAddr}} {
		if err := checkFree(a.addr); err != nil {
			return nil, fmt.Errorf("embedded etcd: %s address %s is not available (%v); another etcd or chunklock may be running there: choose another address", a.what, a.addr, err)
		}
	}
	s.clientURL, s.peerURL = "http://"+clientAddr, "http://"+peerAddr
	cu, _ := url.Parse(s.clientURL)
	pu, _ := url.Parse(s.peerURL)

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + s.peerURL
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

	e, err := embed.StartEtcd(ec)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("embedded etcd: an address is already in use (client %s, peer %s): choose other addresses: %w", clientAddr, peerAddr, err)
		}
		return nil, fmt.Errorf("embedded etcd: cannot start (see %s): %w", cfg.LogOutput, err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: failed while starting (see %s): %w", cfg.LogOutput, err)
	case <-timer.C:
		e.Server.HardStop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd: not ready after %s (for a cluster, are the other members started? see %s)", cfg.StartTimeout, cfg.LogOutput)
	case <-ctx.Done():
		e.Server.HardStop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd: start cancelled: %w", ctx.Err())
	}
	s.e = e
	ok = true
	return s, nil
}

// resolveAddr picks a free port for port 0.
func resolveAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		if _, err := strconv.Atoi(port); err != nil {
			return "", fmt.Errorf("port %q is not a number", port)
		}
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

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

// ClientURL is the URL clients connect to.
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
func (s *Server) Etcd() *embed.Etcd { return s.e }

// IsLeader tells whether this member leads the cluster now.
func (s *Server) IsLeader() bool { return s.e != nil && s.e.Server.Leader() == s.e.Server.MemberID() }

// Client connects a client to this member alone, logging nothing.
func (s *Server) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// Close stops the member (a leader hands leadership over first) and
// releases the data directory.
func (s *Server) Close() error {
	if s.e == nil {
		return nil
	}
	s.e.Close()
	s.e = nil
	return s.lock.Close()
}
