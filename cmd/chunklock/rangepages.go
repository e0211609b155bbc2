package main

import (
	"context"
	"fmt"

	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// rangePages splits [from, to] into the ranges of the calls to make, of
// at most client.MaxRangeDataIDs dataids each: over a dataset with a
// partition definition its expected dataids, counted here with the same
// arithmetic as the server's; without one, the chunks it has (listed
// first when there may be more than one call's worth).
func rangePages(ctx context.Context, c *client.Client, dataset, from, to string, slice []partition.Slice) ([][2]string, error) {
	def, err := c.DatasetPartitions(ctx, dataset)
	if err != nil {
		return nil, err
	}
	if slice != nil && def != nil {
		sliced, some, err := def.Sliced(slice)
		switch {
		case err != nil:
			return nil, err
		case !some:
			return [][2]string{{from, to}}, nil // the server says what it makes of it
		}
		def = &sliced
	}
	var pages [][2]string
	switch {
	case def != nil && def.Kind == partition.Dynamic:
		pages, err = valuePages(ctx, c, dataset, from, to)
	case def != nil:
		pages, err = defPages(*def, from, to, client.MaxRangeDataIDs)
	default:
		pages, err = existingPages(ctx, c, dataset, from, to)
	}
	if err == nil && len(pages) == 0 {
		// Nothing expected: one call still, for the server's own checks.
		pages = [][2]string{{from, to}}
	}
	return pages, err
}

// valuePages lists the values of a DYNAMIC dataset in [from, to] and
// splits them into pages (splitPages).
func valuePages(ctx context.Context, c *client.Client, dataset, from, to string) ([][2]string, error) {
	ps, err := c.Partitions(ctx, client.PartitionFilter{Dataset: dataset, From: from, To: to})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.DataID
	}
	return splitPages(ids, from, to, client.MaxRangeDataIDs), nil
}

// existingPages lists the dataids of dataset's chunks in [from, to] and
// splits them into pages (splitPages).
func existingPages(ctx context.Context, c *client.Client, dataset, from, to string) ([][2]string, error) {
	rows, err := c.Chunks(ctx, client.ChunkFilter{Dataset: dataset, Role: "OUTPUT", From: from, To: to})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range rows {
		if n := len(ids); n == 0 || ids[n-1] != r.DataID {
			ids = append(ids, r.DataID)
		}
	}
	return splitPages(ids, from, to, client.MaxRangeDataIDs), nil
}

// splitPages splits the sorted dataids ids of [from, to] into ranges of
// at most size of them; the first range starts at from and the last ends
// at to, so that one page covers the whole of [from, to].
func splitPages(ids []string, from, to string, size int) [][2]string {
	var pages [][2]string
	for start := 0; start < len(ids); start += size {
		end := min(start+size, len(ids)) - 1
		pages = append(pages, [2]string{ids[start], ids[end]})
	}
	if len(pages) > 0 {
		pages[0][0], pages[len(pages)-1][1] = from, to
	}
	return pages
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
