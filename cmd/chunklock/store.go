package main

import (
	"context"
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
