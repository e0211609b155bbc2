package bench

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
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

// slowEndings delays each completeMany, so that claims go on beside it.
type slowEndings struct {
	StoreDriver
	delay   time.Duration
	claims  atomic.Int64 // claimNext calls
	during  atomic.Int64 // claimNext calls made while a completeMany was in flight
	ending  atomic.Bool
	largest atomic.Int64 // the longest token list of one completeMany
}

func (d *slowEndings) ClaimNext(ctx context.Context, job, executor string, max int) ([]string, error) {
	d.claims.Add(1)
	if d.ending.Load() {
		d.during.Add(1)
	}
	return d.StoreDriver.ClaimNext(ctx, job, executor, max)
}

func (d *slowEndings) CompleteMany(ctx context.Context, tokens []string) error {
	if !d.ending.CompareAndSwap(false, true) {
		panic("two completeMany calls in flight")
	}
	defer d.ending.Store(false)
	if n := int64(len(tokens)); n > d.largest.Load() {
		d.largest.Store(n)
	}
	time.Sleep(d.delay)
	return d.StoreDriver.CompleteMany(ctx, tokens)
}

func TestRunPoolDrainsEveryChunkOnceWithEndingsBesideClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := teststores.Memory(nil)
	p, err := Setup(ctx, s, "t", 3000, &bytes.Buffer{})
	require.NoError(t, err)
	d := &slowEndings{StoreDriver: StoreDriver{s}, delay: 20 * time.Millisecond}
	res, err := RunPool(ctx, d, p, 16, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 3000, res.Cycles, "each chunk counted once, when its completion succeeded")
	require.Zero(t, res.Errors)
	require.Positive(t, d.during.Load(), "claims go on while an ending is on its way")
	require.Greater(t, d.largest.Load(), int64(16), "what was claimed meanwhile goes with the next ending")
	require.LessOrEqual(t, d.largest.Load(), int64(backends.MaxManyTokens))
	next, err := s.FindNext(ctx, p.Job, "x")
	require.NoError(t, err)
	require.Nil(t, next, "the pipeline is drained")
	rows, err := s.Claims(ctx, p.Job)
	require.NoError(t, err)
	require.Empty(t, rows, "no claim is left running")
}
