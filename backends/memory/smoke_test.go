package memory

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := Open(clock)
	for _, d := range []string{"a", "b", "c"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/x/{dataid}"})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "ja", Inputs: []string{"a"}, Output: "b"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "jb", Inputs: []string{"b"}, Output: "c"})
	require.NoError(t, err)
	for _, d := range []string{"3", "1", "10", "2"} {
		_, err := s.Publish(ctx, "a", d)
		require.NoError(t, err)
	}
	var order []string
	for {
		c, err := s.FindNext(ctx, "ja", "x")
		require.NoError(t, err)
		if c == nil {
			break
		}
		order = append(order, c.DataID)
		require.NoError(t, s.Complete(ctx, c.Token))
	}
	require.Equal(t, []string{"1", "2", "3", "10"}, order)
	c, err := s.FindNext(ctx, "jb", "x")
	require.NoError(t, err)
	require.Equal(t, "1", c.DataID)
	require.NoError(t, s.Fail(ctx, c.Token, "boom"))
	require.ErrorIs(t, s.Complete(ctx, c.Token), backends.ErrStaleClaim)
	c2, err := s.FindNext(ctx, "jb", "x")
	require.NoError(t, err)
	require.Equal(t, "1", c2.DataID)
	require.Equal(t, 2, c2.Attempt)
	require.Greater(t, c2.Fence, c.Fence)
	clock.Advance(61 * time.Second)
	n, err := s.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ch, err := s.Chunk(ctx, "c", "1")
	require.NoError(t, err)
	require.Equal(t, backends.StatusFailed, ch.Output.Status)
	_, err = s.Resubmit(ctx, "a", "1", true)
	require.NoError(t, err)
	ch, err = s.Chunk(ctx, "b", "1")
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, ch.Output.Status)
	g, err := s.LockGraph(ctx, backends.GraphFilter{DataID: "1"})
	require.NoError(t, err)
	require.NotEmpty(t, g.Edges)
}
