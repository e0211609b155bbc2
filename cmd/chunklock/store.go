package main

import (
	"context"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/open"
)

// openStore opens the store of --store and --data-dir (see package
// backends/open for the URL forms). Tests replace it.
var openStore = func(ctx context.Context, storeURL, dataDir string) (backends.Store, error) {
	return open.Open(ctx, storeURL, open.Options{DataDir: dataDir})
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
