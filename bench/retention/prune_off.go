//go:build !retention

package main

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// runPruner without -tags retention prunes nothing: the store of a commit
// before retention.
func runPruner(ctx context.Context, _ backends.Store, _, _ time.Duration) int64 {
	<-ctx.Done()
	return 0
}

func arm(time.Duration) string { return "no-retention" }
