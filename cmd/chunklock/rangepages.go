package main

import (
	"context"
	"fmt"

	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// rangePages splits [from, to] into the ranges of the calls to make. Over
// a dataset with a partition definition, each holds at most
// client.MaxRangeDataIDs expected dataids, counted here with the same
// arithmetic as the server's; without one, a single call (the server
// refuses a range of more than client.MaxRangeDataIDs existing chunks).
func rangePages(ctx context.Context, c *client.Client, dataset, from, to string) ([][2]string, error) {
	def, err := c.DatasetPartitions(ctx, dataset)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return [][2]string{{from, to}}, nil
	}
	pages, err := defPages(*def, from, to, client.MaxRangeDataIDs)
	if err == nil && len(pages) == 0 {
		// Nothing expected: one call still, for the server's own checks.
		pages = [][2]string{{from, to}}
	}
	return pages, err
}

// maxPages bounds how many calls one command makes (a billion dataids).
const maxPages = 100000

// defPages splits the expected dataids of def in [from, to] into ranges
// of at most size dataids each; none when none is expected.
func defPages(def partition.Def, from, to string, size int) ([][2]string, error) {
	seq, err := def.Range(from, to)
	if err != nil {
		return nil, fmt.Errorf("--from %s --to %s over %s partitions: %w", from, to, def.Kind, err)
	}
	var pages [][2]string
	n := 0
	for id := range seq {
		if n%size == 0 {
			if len(pages) == maxPages {
				return nil, fmt.Errorf("the range holds more than %d dataids; give a shorter one", maxPages*size)
			}
			pages = append(pages, [2]string{id, id})
		}
		pages[len(pages)-1][1] = id
		n++
	}
	return pages, nil
}
