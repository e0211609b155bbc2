package client

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

// MaxPartitionValues is the most values one AddPartitions or
// RemovePartitions call takes; the server refuses more (INVALID_ARGUMENT).
const MaxPartitionValues = backends.MaxPartitionValues

// AddPartitions adds dataids to the set of a dataset with DYNAMIC
// partitions (SPEC §10): Changed counts the values added; one already in
// the set (or listed twice) is skipped with code ALREADY_EXISTS. dimension
// is "" for a one-dimensional dataset.
func (c *Client) AddPartitions(ctx context.Context, dataset string, dataids []string, dimension string) (RangeResult, error) {
	return c.AddPartitionsFrom(ctx, dataset, dataids, dimension, "")
}

// AddPartitionsFrom is AddPartitions to a DYNAMIC dimension beside a time
// dimension whose values are expected from from, a dataid of the time
// dimension (a backfill; "" from now).
func (c *Client) AddPartitionsFrom(ctx context.Context, dataset string, dataids []string, dimension, from string) (RangeResult, error) {
	var out struct{ AddPartitions RangeResult }
	err := c.Do(ctx, `mutation($ds: String!, $ids: [String!]!, $dim: String, $from: String) { addPartitions(dataset: $ds, dataids: $ids, dimension: $dim, from: $from) { `+rangeFields+` } }`,
		map[string]any{"ds": dataset, "ids": dataids, "dim": optional(dimension), "from": optional(from)}, &out)
	return out.AddPartitions, err
}

// RemovePartitions removes dataids from the set of a dataset with DYNAMIC
// partitions; their chunks stay. A value not in the set is skipped with
// code NOT_FOUND.
func (c *Client) RemovePartitions(ctx context.Context, dataset string, dataids []string, dimension string) (RangeResult, error) {
	var out struct{ RemovePartitions RangeResult }
	err := c.Do(ctx, `mutation($ds: String!, $ids: [String!]!, $dim: String) { removePartitions(dataset: $ds, dataids: $ids, dimension: $dim) { `+rangeFields+` } }`,
		map[string]any{"ds": dataset, "ids": dataids, "dim": optional(dimension)}, &out)
	return out.RemovePartitions, err
}

// optional is s, or nil (a GraphQL null) when empty.
func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}
