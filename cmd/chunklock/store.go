package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/postgres"
)

// openStore opens the store a --store URL names:
//
//	""                         the embedded store in dataDir
//	postgres://... postgresql://...  PostgreSQL
//	memory:                    in memory, gone at exit (trying things out)
//
// It also returns a description of the store for the start-up message,
// without credentials.
func openStore(ctx context.Context, rawURL, dataDir string) (backends.Store, string, error) {
	switch {
	case rawURL == "":
		// The embedded etcd store is not in this build yet.
		return memory.Open(nil), "in memory (the embedded store is not available in this build: nothing survives a restart; --data-dir " + dataDir + " is unused)", nil
	case rawURL == "memory:" || rawURL == "memory":
		return memory.Open(nil), "in memory (nothing survives a restart)", nil
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		s, err := postgres.Open(ctx, postgres.Config{DSN: rawURL})
		if err != nil {
			return nil, "", err
		}
		return s, "PostgreSQL at " + redact(rawURL), nil
	}
	return nil, "", fmt.Errorf("store %q: unknown kind; want empty (embedded), postgres://... or memory:", redact(rawURL))
}

// redact drops the password of a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
