package backendtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends/partition"
)

var latestReadTests = []testCase{
	{"LatestReadyAmongReads", (*suite).testLatestReadyAmongReads},
}

// testLatestReadyAmongReads: the newest READY chunk of a dataset that many
// jobs read is found whatever number of INPUT rows lie beside its OUTPUT
// rows (four rows a dataid here, more than a window of reads takes).
func (s *suite) testLatestReadyAmongReads(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2025-12-01", End: "2025-12-31"})
	var days []string
	for i := 1; i <= 31; i++ {
		days = append(days, fmt.Sprintf("2025-12-%02d", i))
	}
	b.publish("d", days...)
	for _, c := range []string{"c1", "c2", "c3"} {
		b.datasets(c)
		b.job("j"+c, c, "d")
		for _, d := range days {
			b.run("j"+c, d)
		}
	}
	ids, err := b.s.LatestReady(b.ctx, []string{"d", "c1"})
	require.NoError(t, err)
	require.Equal(t, []string{"2025-12-31", "2025-12-31"}, ids)
}
