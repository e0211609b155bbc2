package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// ChunkCounts is how many chunks of a dataset are in each status.
type ChunkCounts struct {
	Total    int `json:"total"`
	Running  int `json:"running"`
	Ready    int `json:"ready"`
	Failed   int `json:"failed"`
	Resubmit int `json:"resubmit"`
	Hold     int `json:"hold"`
}

// DatasetCounts is what the server counts of one dataset: its chunks by
// status and the newest READY one (nil when none is).
type DatasetCounts struct {
	ID          string      `json:"id"`
	Chunks      ChunkCounts `json:"chunkCounts"`
	LatestReady *string     `json:"latestReady"`
}

// Counts asks the server for the counts of each dataset of ids, in that
// order, one request a dataset: none of them reads the dataset's rows
// through the API, however many chunks it has. ErrNoCounts when the server
// is older than Dataset.chunkCounts. A dataset's missing and late chunks
// are PartitionSummaries'.
func (c *Client) Counts(ctx context.Context, ids []string) ([]DatasetCounts, error) {
	const q = `query($id: String!) { dataset(id: $id) { id chunkCounts { total running ready failed resubmit hold } latestReady } }`
	out := make([]DatasetCounts, 0, len(ids))
	for _, id := range ids {
		var r struct {
			Dataset DatasetCounts `json:"dataset"`
		}
		if err := c.Do(ctx, q, map[string]any{"id": id}, &r); err != nil {
			if CodeOf(err) == "GRAPHQL_VALIDATION_FAILED" && strings.Contains(err.Error(), "Cannot query field") {
				return nil, ErrNoCounts
			}
			return nil, err
		}
		if r.Dataset.ID == "" {
			return nil, &Error{Code: backends.CodeNotFound, Message: fmt.Sprintf("dataset %q not found", id)}
		}
		out = append(out, r.Dataset)
	}
	return out, nil
}

// ErrNoCounts: the server does not count chunks (older than
// Dataset.chunkCounts); read the rows instead.
var ErrNoCounts = errNoCounts{}

type errNoCounts struct{}

func (errNoCounts) Error() string { return "the server does not count chunks (Dataset.chunkCounts)" }
