package main

import (
	"context"

	"github.com/chunklock/chunklock/client"
)

// rangePages splits [from, to] into the ranges of the calls to make: one
// call without a partition definition (the server refuses a range of
// more than client.MaxRangeDataIDs existing chunks).
func rangePages(ctx context.Context, c *client.Client, dataset, from, to string) ([][2]string, error) {
	return [][2]string{{from, to}}, nil
}
