package storecopy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// TestCanonical: what backends store differently but means the same
// (a time's zone and nanoseconds, an empty list or none, the numbers a
// store gives) checksums alike; anything else does not.
func TestCanonical(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	a := backends.DumpItem{Row: &backends.StatusRow{RowKey: backends.RowKey{Dataset: "d", DataID: "1"}, UpdatedAt: at, Reads: []backends.Read{}}}
	b := backends.DumpItem{Row: &backends.StatusRow{RowKey: backends.RowKey{Dataset: "d", DataID: "1"}, UpdatedAt: at.Truncate(time.Microsecond).In(time.FixedZone("x", 3600))}}
	ca, err := canonical(a)
	require.NoError(t, err)
	cb, err := canonical(b)
	require.NoError(t, err)
	require.Equal(t, string(ca), string(cb))
	require.NotNil(t, a.Row.Reads, "the item itself is left as it was")
	b.Row.Attempt = 1
	cb, err = canonical(b)
	require.NoError(t, err)
	require.NotEqual(t, string(ca), string(cb))

	e1, _ := canonical(backends.DumpItem{Event: &backends.Event{Seq: 5, Dataset: "d"}})
	e2, _ := canonical(backends.DumpItem{Event: &backends.Event{Seq: 9, Dataset: "d"}})
	require.Equal(t, string(e1), string(e2), "the target numbers events anew")
}

// tamper loads through to, changing what change changes.
type tamper struct {
	*memory.Backend
	change func(kind backends.DumpKind, items []backends.DumpItem) []backends.DumpItem
}

func (t tamper) Load(ctx context.Context, kind backends.DumpKind, items []backends.DumpItem) error {
	return t.Backend.Load(ctx, kind, t.change(kind, items))
}

// TestVerifyFindsDifferences: a target that stores an item changed, or
// drops one, fails the copy naming the kind.
func TestVerifyFindsDifferences(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	s := engine.New(src)
	for _, id := range []string{"a", "b"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id})
		require.NoError(t, err)
		_, err = s.Publish(ctx, id, "1")
		require.NoError(t, err)
	}
	same := func(_ backends.DumpKind, items []backends.DumpItem) []backends.DumpItem { return items }
	_, err := Copy(ctx, src, tamper{memory.New(), same}, Options{})
	require.NoError(t, err)

	changed := func(kind backends.DumpKind, items []backends.DumpItem) []backends.DumpItem {
		if kind != backends.DumpRows {
			return items
		}
		r := *items[0].Row
		r.Reason = "changed"
		return append([]backends.DumpItem{{Row: &r}}, items[1:]...)
	}
	_, err = Copy(ctx, src, tamper{memory.New(), changed}, Options{})
	require.ErrorContains(t, err, "verifying rows: the checksums differ")

	dropped := func(kind backends.DumpKind, items []backends.DumpItem) []backends.DumpItem {
		if kind != backends.DumpEvents {
			return items
		}
		return items[1:]
	}
	_, err = Copy(ctx, src, tamper{memory.New(), dropped}, Options{})
	require.ErrorContains(t, err, "events")
}
