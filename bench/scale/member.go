package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// member is an etcd member of the benchmark's own, set as the embedded
// store sets its member (periodic compaction keeping a minute, --max-txn-ops
// 4096, fsync on) but with a quota of the benchmark's choosing, so that a
// fill reaches it in minutes. chunklock serve uses it as an etcd cluster
// of one member (--store etcd://...): the same store code as the embedded
// store's, reached over TCP instead of inside the process. It is named as
// the embedded store names its member, so that chunklock serve --data-dir
// can open its directory as an embedded store afterwards.
type member struct {
	e         *embed.Etcd
	clientURL string
	once      sync.Once
}

// memberMaxTxnOps is the embedded store's --max-txn-ops, which the
// server is told (max_txn_ops) as it would be for a cluster.
const memberMaxTxnOps = 4096

func startMember(ctx context.Context, dir string, quota int64) (*member, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		client, peer := freeURL(), freeURL()
		cfg := embed.NewConfig()
		cfg.Name, cfg.Dir, cfg.InitialClusterToken = "chunklock", dir, "chunklock"
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = "chunklock=" + peer.String()
		cfg.LogLevel, cfg.LogOutputs = "warn", []string{filepath.Join(dir, "etcd.log")}
		cfg.MaxTxnOps, cfg.QuotaBackendBytes = memberMaxTxnOps, quota
		cfg.AutoCompactionMode, cfg.AutoCompactionRetention = embed.CompactorModePeriodic, "1m"
		e, err := embed.StartEtcd(cfg)
		if errors.Is(err, syscall.EADDRINUSE) && try < 3 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("starting an etcd member: %w", err)
		}
		select {
		case <-e.Server.ReadyNotify():
			return &member{e: e, clientURL: client.String()}, nil
		case err := <-e.Err():
			e.Close()
			return nil, fmt.Errorf("etcd member: %w", err)
		case <-time.After(time.Minute):
			e.Close()
			return nil, errors.New("etcd member not ready after a minute")
		case <-ctx.Done():
			e.Close()
			return nil, ctx.Err()
		}
	}
}

// storeURL is the --store of a server on the member.
func (m *member) storeURL() string {
	return fmt.Sprintf("etcd://%s%s?max_txn_ops=%d", m.clientURL[len("http://"):], etcdPrefix, memberMaxTxnOps)
}

func (m *member) close() { m.once.Do(m.e.Close) }

// freeURL is an http URL on a port of 127.0.0.1 free a moment ago.
func freeURL() url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	}
	defer ln.Close()
	return url.URL{Scheme: "http", Host: ln.Addr().String()}
}
