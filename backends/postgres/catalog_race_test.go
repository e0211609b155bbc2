package postgres

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// A chunk published on one server while another creates a job reading its
// dataset must be offered to the new job by findNext: either the publish
// sees the new catalog (and queues the chunk for the job), or it commits
// before the job's backfill reads the READY rows.
func TestPublishRacingNewConsumer(t *testing.T) {
	ctx := context.Background()
	for i := range 30 {
		dsn, schema := testDSN(t), freshSchema(t)
		a, err := openStore(ctx, Config{DSN: dsn, Schema: schema}, nil)
		require.NoError(t, err)
		b, err := openStore(ctx, Config{DSN: dsn, Schema: schema}, nil)
		require.NoError(t, err)
		for _, d := range []string{"src", "out"} {
			_, err := a.UpsertDataset(ctx, backends.Dataset{ID: d})
			require.NoError(t, err)
		}
		_, err = a.Publish(ctx, "src", "0") // a now caches the catalog without the job
		require.NoError(t, err)
		var wg sync.WaitGroup
		var pubErr, jobErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, pubErr = a.Publish(ctx, "src", "1") }()
		go func() {
			defer wg.Done()
			_, jobErr = b.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
		}()
		wg.Wait()
		require.NoError(t, pubErr)
		require.NoError(t, jobErr)
		var got []string
		for {
			c, err := a.FindNext(ctx, "j", "x")
			require.NoError(t, err)
			if c == nil {
				break
			}
			got = append(got, c.DataID)
		}
		require.Equal(t, []string{"0", "1"}, got, "round "+strconv.Itoa(i)+": findNext must offer every READY chunk to the new job")
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
}
