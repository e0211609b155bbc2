package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/stretchr/testify/require"
)

func TestRunDrainsEveryChunkOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := teststores.Memory(nil)
	p, err := Setup(ctx, s, "t", 500, &bytes.Buffer{})
	require.NoError(t, err)
	res, err := Run(ctx, StoreDriver{s}, p, 8, 0, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 500, res.Cycles)
	require.Equal(t, 500, res.FindNext.N)
	require.LessOrEqual(t, res.FindNext.P50, res.FindNext.P99)
	require.Zero(t, res.Errors)
	next, err := s.FindNext(ctx, p.Job, "x")
	require.NoError(t, err)
	require.Nil(t, next, "the pipeline is drained")
}

func TestRateCounts(t *testing.T) {
	t.Parallel()
	r, err := rate(context.Background(), 4, 50*time.Millisecond, func(context.Context, int) error { return nil })
	require.NoError(t, err)
	require.Greater(t, r, 0.0)
}
