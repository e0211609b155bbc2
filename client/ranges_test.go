package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"
)

// TestRanges: the range methods send their arguments and decode the
// answer, skipped chunks included.
func TestRanges(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.url, client.WithToken(b.token))
	ctx := t.Context()
	b.pipeline(t, c)
	require.NoError(t, c.Publish(ctx, "in", []string{"1", "2", "3"}))
	r, err := c.HoldRange(ctx, "in", "2", "3", "audit")
	require.NoError(t, err)
	require.Equal(t, client.RangeResult{Changed: 2, Skipped: []client.RangeSkip{}}, r)
	r, err = c.ResubmitRange(ctx, "in", "1", "3", true)
	require.NoError(t, err)
	require.Equal(t, 3, r.Changed)
	r, err = c.HoldRange(ctx, "out", "1", "3", "")
	require.NoError(t, err)
	require.Equal(t, client.RangeResult{Skipped: []client.RangeSkip{}}, r, "out has no chunk")
	require.NoError(t, c.Publish(ctx, "in", []string{"1"}))
	_, err = b.store.Claim(ctx, "j", "1", "e")
	require.NoError(t, err)
	r, err = c.HoldRange(ctx, "out", "1", "3", "")
	require.NoError(t, err)
	require.Len(t, r.Skipped, 1)
	require.Equal(t, "1", r.Skipped[0].DataID)
	require.Equal(t, "LOCKED", r.Skipped[0].Code)
	require.Contains(t, r.Skipped[0].Reason, "RUNNING")
	_, err = c.PublishRange(ctx, "in", "1", "3")
	require.ErrorContains(t, err, "no partition definition")
}
