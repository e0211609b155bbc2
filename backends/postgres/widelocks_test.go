package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestWideClaimsAtOnce: claims of a job reading a year of hours back
// (8,761 chunks each, a lock on each) made at once all succeed. The server
// keeps advisory locks in one table sized by max_locks_per_transaction ×
// max_connections: two such claims holding their locks together fill it
// ("out of shared memory", for every transaction of the server), so they
// take their locks one at a time.
func TestWideClaimsAtOnce(t *testing.T) {
	ctx := context.Background()
	schema := freshSchema(t)
	s, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, nil)
	require.NoError(t, err)
	defer s.Close()
	const k = 8760
	next, err := backendtest.SeedLookbackBench(ctx, s, k, k+1, bulkRows(schema))
	require.NoError(t, err)
	hourly := partition.Def{Kind: partition.Hourly, Start: "2020-01-01T00"}
	var hours []string
	for h := next; len(hours) < 3; h, _ = hourly.Next(h) {
		_, err := s.Publish(ctx, "src", h)
		require.NoError(t, err)
		hours = append(hours, h)
	}
	errs := make([]error, len(hours))
	var wg sync.WaitGroup
	for i, h := range hours {
		wg.Go(func() {
			c, err := s.Claim(ctx, "look", h, "e")
			if err == nil && len(c.Reads) != k+1 {
				t.Errorf("claim look/%s reads %d hours, want %d", h, len(c.Reads), k+1)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "claim look/%s", hours[i])
	}
}
