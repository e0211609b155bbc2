package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// beforeChanges runs hook once, just before a ListChanges: a change
// committed between an operation's catalog read and its reading of the
// changes.
type beforeChanges struct {
	*memory.Backend
	hook func()
}

func (h *beforeChanges) ListChanges(ctx context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	if fn := h.hook; fn != nil {
		h.hook = nil
		fn()
	}
	return h.Backend.ListChanges(ctx, f)
}

// TestCountsAfterARacingNarrowing: the missing count of a date × region
// dataset is kept while its rows conform to its definition, which the
// engine learns from the dataset's changes, reading only those after the
// ones it read last. A narrowing of the regions that commits while one
// replica reads the changes for the definition before it must not leave
// that replica trusting rows of the region removed: its later counts
// agree with a fresh replica's.
func TestCountsAfterARacingNarrowing(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mb := memory.New()
	h := &beforeChanges{Backend: mb}
	a := engine.New(h, engine.WithClock(clock))
	other := engine.New(mb, engine.WithClock(clock))
	defer a.Close()
	defer other.Close()
	def := func(regions ...string) *partition.Def {
		return &partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
			{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2025-12-22"}},
			{Name: "region", Def: partition.Def{Kind: partition.Static, Values: regions}}}}
	}
	_, err := a.UpsertDataset(ctx, backends.Dataset{ID: "feeds", Location: "x/{dataid}", Partitions: def("eu", "us", "apac")})
	require.NoError(t, err)
	_, err = a.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "feeds", From: "2025-12-22", To: "2025-12-31",
		Slice: []partition.Slice{{Dimension: "region", Values: []string{"apac"}}}})
	require.NoError(t, err)
	clock.Advance(time.Second)
	h.hook = func() {
		_, err := other.UpsertDataset(ctx, backends.Dataset{ID: "feeds", Location: "x/{dataid}", Partitions: def("eu", "us")})
		require.NoError(t, err)
	}
	c, err := a.PartitionCounts(ctx, "feeds") // counted under eu, us, apac; the narrowing lands as it reads the changes
	require.NoError(t, err)
	require.Equal(t, 20, c.Missing, "eu and us missing for 10 days, apac READY")
	for range 3 {
		clock.Advance(time.Second)
		c, err = a.PartitionCounts(ctx, "feeds")
		require.NoError(t, err)
		require.Equal(t, 20, c.Missing, "eu and us missing for 10 days, under the narrowed definition")
	}
	fresh := engine.New(mb, engine.WithClock(clock))
	defer fresh.Close()
	c, err = fresh.PartitionCounts(ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 20, c.Missing)
}
