package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/open"
)

// embeddedAddrs holds serve's --etcd-client-addr and --etcd-peer-addr for
// the embedded store (empty: the embedded package's defaults).
var embeddedAddrs struct{ client, peer string }

// openStore opens the store of --store and --data-dir (see package
// backends/open for the URL forms). Tests replace it.
var openStore = func(ctx context.Context, storeURL, dataDir string) (backends.Store, error) {
	return open.Open(ctx, storeURL, open.Options{DataDir: dataDir,
		Embedded: embedded.Config{ClientAddr: embeddedAddrs.client, PeerAddr: embeddedAddrs.peer}})
}

// loopbackAddr refuses an embedded-store address off the loopback
// interface: the embedded etcd runs without authentication or TLS, so
// whoever reaches it could rewrite every status row past the API's tokens.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("embedded store address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("embedded store address %q is not a loopback address: the embedded etcd has no authentication or TLS, so it listens on 127.0.0.1 only; for a store shared between machines run an etcd cluster with TLS and auth (--store etcds://...) or PostgreSQL", addr)
}

// describeStore names the store for the start-up message, without
// credentials.
func describeStore(storeURL, dataDir string) string {
	if storeURL == "" {
		return "embedded etcd, data in " + dataDir
	}
	scheme, rest, _ := strings.Cut(storeURL, "://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "…@" + rest[at+1:]
	}
	return scheme + "://" + rest
}
