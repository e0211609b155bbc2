package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/open"
)

// openStore opens the store of --store (see package backends/open for the
// URL forms) with opts: the data directory and addresses of an embedded
// one, the operator's env allowlist. Tests replace it.
var openStore = func(ctx context.Context, storeURL string, opts open.Options) (backends.Store, error) {
	return open.Open(ctx, storeURL, opts)
}

// existingStore refuses to open an embedded store that is not there (a
// command acting on the server's store would otherwise make an empty one
// in the current directory, and then find nothing in it).
func existingStore(storeURL, dataDir string) error {
	if storeURL != "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the embedded store in %s: %w", dataDir, err)
		}
		return fmt.Errorf("no embedded store in %s (no member/ in it): give the server's --data-dir, or its --store URL", dataDir)
	}
	return nil
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
// credentials; for the embedded store, with where its etcd listens.
func describeStore(storeURL, dataDir string, store backends.Store) string {
	if storeURL == "" {
		d := "embedded etcd, data in " + dataDir
		if srv := open.Embedded(store); srv != nil {
			d += fmt.Sprintf(" (etcd clients on %s, peers on %s)", srv.ClientURL(), srv.PeerURL())
		}
		return d
	}
	scheme, rest, _ := strings.Cut(storeURL, "://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "…@" + rest[at+1:]
	}
	return scheme + "://" + rest
}
