package server

import (
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/graph"
)

// runsPerPoint is how many dataids a partitionRuns field may look at for
// one point of complexity. The embedded store spends about 3.6 µs of CPU
// on each, more on a busy machine (PostgreSQL less: BENCHMARKS.md,
// "Dashboard at scale"), so the default limit of 1000 points lets a
// request read about 20,000 dataids, in well under 100 ms.
const runsPerPoint = 20

// slicedRunsPerPoint is runsPerPoint for a slice, whose dataids are read
// one key each rather than as a run of rows.
const slicedRunsPerPoint = 5

// dashboardComplexity adds the costs of the dashboard's reads.
func dashboardComplexity(c *graph.ComplexityRoot) {
	c.Query.PartitionRuns = func(child int, _ string, _, _ *string, _ *partition.Kind, limit *int, slice []graph.DimensionSliceInput) int {
		n, per := backends.DefaultRunsLimit, runsPerPoint
		if slice != nil {
			n, per = backends.DefaultSlicedRunsLimit, slicedRunsPerPoint
		}
		if limit != nil && *limit > 0 {
			n = min(*limit, backends.MaxRunsLimit)
		}
		return 1 + child + (n+per-1)/per
	}
}
