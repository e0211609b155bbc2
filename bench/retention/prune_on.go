//go:build retention

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// runPruner sweeps the event log every `every`, as a server's pruner does
// (server/retention.go), until ctx ends, and returns how many events it
// pruned.
func runPruner(ctx context.Context, store backends.Store, retain, every time.Duration) int64 {
	var total int64
	var after int64
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return total
		case <-t.C:
		}
		p := backends.PrunePolicy{Events: retain, After: after}
		for range 32 {
			res, err := store.PruneEvents(ctx, p)
			total += int64(res.Pruned)
			if err != nil {
				if ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "retention: pruning:", err)
				}
				break
			}
			if p.After = res.Next; p.After == 0 {
				break
			}
		}
		after = p.After
	}
}

func arm(retain time.Duration) string { return "retention=" + retain.String() }
