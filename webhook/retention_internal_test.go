package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// TestDelivered: the cursor that holds event retention back is the
// smallest of the webhooks' transitions records; a webhook never delivered
// holds nothing, and neither does a deadlines record.
func TestDelivered(t *testing.T) {
	ctx := context.Background()
	store := engine.New(memory.New())
	t.Cleanup(func() { _ = store.Close() })
	a, b, c := "http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "http://127.0.0.1:1/c"
	put := func(key string, st state) {
		t.Helper()
		val, err := json.Marshal(st)
		require.NoError(t, err)
		rec, err := store.Record(ctx, key)
		require.NoError(t, err)
		_, ok, err := store.SwapRecord(ctx, key, val, rec.Version)
		require.NoError(t, err)
		require.True(t, ok)
	}
	seq, hold, err := Delivered(ctx, store, []string{a, b, c})
	require.NoError(t, err)
	require.False(t, hold, "no webhook delivered yet")
	put(recordKey(a), state{Seq: 40})
	put(lateRecordKey(b), state{Marks: map[string]lateMark{}})
	seq, hold, err = Delivered(ctx, store, []string{a, b, c})
	require.NoError(t, err)
	require.True(t, hold)
	require.EqualValues(t, 40, seq)
	put(recordKey(c), state{Seq: 7})
	seq, hold, err = Delivered(ctx, store, []string{a, b, c})
	require.NoError(t, err)
	require.True(t, hold)
	require.EqualValues(t, 7, seq)
	seq, _, err = Delivered(ctx, store, []string{a})
	require.NoError(t, err)
	require.EqualValues(t, 40, seq)
	put(recordKey(a), state{Seq: 0})
	seq, hold, err = Delivered(ctx, store, []string{a, c})
	require.NoError(t, err)
	require.True(t, hold)
	require.Zero(t, seq, "a cursor at 0 holds every event")
}
