package client

import (
	"context"
	"fmt"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Partition is one expected dataid of a dataset with a partition
// definition; Status is "NONE" when the chunk is missing.
type Partition struct {
	Dataset     string     `json:"dataset"`
	DataID      string     `json:"dataid"`
	Status      string     `json:"status"`
	WindowStart *time.Time `json:"windowStart"`
	WindowEnd   *time.Time `json:"windowEnd"`
	DueAt       *time.Time `json:"dueAt"`
	Late        bool       `json:"late"`
}

// PartitionFilter selects partitions of one dataset. Empty fields do not
// filter; Status "NONE" selects the missing ones.
type PartitionFilter struct {
	Dataset  string
	From, To string
	Status   string
	Late     *bool
	// Limit bounds how many partitions are returned (0: all).
	Limit int
	// Slice keeps, of a dataset with dimensions, the tuples whose values
	// of the sliced dimensions are listed.
	Slice []partition.Slice
}

// Partitions returns the partitions matching f, reading every page.
func (c *Client) Partitions(ctx context.Context, f PartitionFilter) ([]Partition, error) {
	vars := map[string]any{"dataset": f.Dataset, "first": 1000}
	for k, v := range map[string]string{"status": f.Status, "from": f.From, "to": f.To} {
		if v != "" {
			vars[k] = v
		}
	}
	if f.Late != nil {
		vars["late"] = *f.Late
	}
	if f.Slice != nil {
		vars["slice"] = f.Slice
	}
	const q = `query($dataset: String!, $from: String, $to: String, $status: Status, $late: Boolean, $first: Int, $after: String, $slice: [DimensionSliceInput!]) {
		partitions(dataset: $dataset, from: $from, to: $to, status: $status, late: $late, first: $first, after: $after, slice: $slice) {
			edges { node { dataset dataid status windowStart windowEnd dueAt late } } pageInfo { hasNextPage endCursor } } }`
	var ps []Partition
	for {
		var out struct {
			Partitions struct {
				Edges []struct {
					Node Partition `json:"node"`
				} `json:"edges"`
				PageInfo pageInfo `json:"pageInfo"`
			} `json:"partitions"`
		}
		if err := c.Do(ctx, q, vars, &out); err != nil {
			return nil, err
		}
		for _, e := range out.Partitions.Edges {
			ps = append(ps, e.Node)
			if f.Limit > 0 && len(ps) >= f.Limit {
				return ps, nil
			}
		}
		if !out.Partitions.PageInfo.HasNextPage {
			return ps, nil
		}
		vars["after"] = out.Partitions.PageInfo.EndCursor
	}
}

// PartitionSummary counts a dataset's missing and late chunks.
type PartitionSummary struct {
	At            time.Time `json:"at"`
	Missing       int       `json:"missing"`
	Late          int       `json:"late"`
	OldestMissing string    `json:"oldestMissing"`
	OldestLate    string    `json:"oldestLate"`
	Truncated     bool      `json:"truncated"`
}

// PartitionSummaries returns the summary of every dataset with a partition
// definition, by dataset id; given ids, of those datasets only (one
// request each, so that no other dataset is counted).
func (c *Client) PartitionSummaries(ctx context.Context, ids ...string) (map[string]PartitionSummary, error) {
	if len(ids) > 0 {
		return c.partitionSummariesOf(ctx, ids)
	}
	const q = `{ datasets { id partitionSummary { at missing late oldestMissing oldestLate truncated } } }`
	var out struct {
		Datasets []struct {
			ID      string            `json:"id"`
			Summary *PartitionSummary `json:"partitionSummary"`
		} `json:"datasets"`
	}
	if err := c.Do(ctx, q, nil, &out); err != nil {
		return nil, err
	}
	m := map[string]PartitionSummary{}
	for _, d := range out.Datasets {
		if d.Summary != nil {
			m[d.ID] = *d.Summary
		}
	}
	return m, nil
}

func (c *Client) partitionSummariesOf(ctx context.Context, ids []string) (map[string]PartitionSummary, error) {
	const q = `query($id: String!) { dataset(id: $id) { partitionSummary { at missing late oldestMissing oldestLate truncated } } }`
	m := map[string]PartitionSummary{}
	for _, id := range ids {
		var out struct {
			Dataset struct {
				Summary *PartitionSummary `json:"partitionSummary"`
			} `json:"dataset"`
		}
		if err := c.Do(ctx, q, map[string]any{"id": id}, &out); err != nil {
			return nil, err
		}
		if out.Dataset.Summary != nil {
			m[id] = *out.Dataset.Summary
		}
	}
	return m, nil
}

// ValueSummary is the missing and late chunks of one value of a dimension
// (ValueSummary in the API).
type ValueSummary struct {
	Value         string  `json:"value"`
	ExpectedFrom  *string `json:"expectedFrom"`
	Missing       int     `json:"missing"`
	Late          int     `json:"late"`
	OldestMissing *string `json:"oldestMissing"`
	OldestLate    *string `json:"oldestLate"`
}

// ValueSummaryPage is a page of ValueSummary (ValueSummaryPage in the
// API): Behind is nil when the server did not count it.
type ValueSummaryPage struct {
	At          time.Time      `json:"at"`
	Dimension   string         `json:"dimension"`
	Values      int            `json:"values"`
	Behind      *int           `json:"behind"`
	Summaries   []ValueSummary `json:"summaries"`
	HasNextPage bool           `json:"hasNextPage"`
}

// ValueSummaries reads a page of the missing and late chunks of a dataset
// with dimensions by value of one STATIC or DYNAMIC dimension (SPEC §10),
// the values after after (""), first of them (1 to 100), only those behind
// when behind is true.
func (c *Client) ValueSummaries(ctx context.Context, dataset, dimension string, behind bool, first int, after string) (ValueSummaryPage, error) {
	const q = `query($id: String!, $dim: String!, $behind: Boolean, $first: Int, $after: String) { dataset(id: $id) {
		valueSummaries(dimension: $dim, behind: $behind, first: $first, after: $after) {
			at dimension values behind hasNextPage summaries { value expectedFrom missing late oldestMissing oldestLate } } } }`
	var out struct {
		Dataset *struct {
			Page ValueSummaryPage `json:"valueSummaries"`
		} `json:"dataset"`
	}
	if err := c.Do(ctx, q, map[string]any{"id": dataset, "dim": dimension, "behind": behind, "first": first, "after": optional(after)}, &out); err != nil {
		return ValueSummaryPage{}, err
	}
	if out.Dataset == nil {
		return ValueSummaryPage{}, &Error{Code: backends.CodeNotFound, Message: fmt.Sprintf("dataset %q not found", dataset)}
	}
	return out.Dataset.Page, nil
}
