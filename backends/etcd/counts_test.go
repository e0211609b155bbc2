package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestCountsFoldAndRecount: the mover folds each transaction's count
// changes into cnt/c/ as it drops its evq/ entry, and counts read the same
// before and after; a store made before counts (no cnt/ keys) is counted
// from its rows, first by the reader, then into the base by the mover, and
// counts go on from there.
func TestCountsFoldAndRecount(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/src/{dataid}"})
	require.NoError(t, err)
	_, err = b.ensureCounts(ctx) // as the mover does at its first round
	require.NoError(t, err)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := s.Publish(ctx, "src", fmt.Sprint(i))
			require.NoError(t, err)
		}
	}
	counts := func(what string, want backends.ChunkCount) {
		t.Helper()
		got, err := s.ChunkCounts(ctx, "src")
		require.NoError(t, err)
		require.Equal(t, want, got, what)
	}
	keys := func(prefix string) int {
		resp, err := b.get(ctx, b.key(prefix)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err)
		return int(resp.Count)
	}
	publish(0, 30)
	for i := range 5 {
		_, err := s.Hold(ctx, "src", fmt.Sprint(i), "frozen")
		require.NoError(t, err)
	}
	want := backends.ChunkCount{Dataset: "src", Total: 30, Ready: 25, Hold: 5}
	counts("pending or folded", want)
	moveAll(t, b)
	require.Zero(t, keys("evq"), "every transaction's events moved")
	require.Equal(t, 1, keys("cnt/c"), "src's changes folded")
	counts("folded", want)

	_, err = b.cli.Delete(ctx, b.key("cnt")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	b.countsRev.Store(0)
	counts("a store made before counts: its rows counted", want)
	publish(30, 40)
	moveAll(t, b)
	resp, err := b.get(ctx, b.key("cnt", "at"))
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the base written")
	want.Total, want.Ready = 40, 35
	counts("after the base, folded", want)
}

// TestCountsAfterDatasetDeleted: a dataset deleted with its chunks and
// declared again counts only its new chunks, once the base and the folded
// changes had counted the old ones.
func TestCountsAfterDatasetDeleted(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	for _, id := range []string{"loose", "kept"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}"})
		require.NoError(t, err)
	}
	publish := func(d string, ids ...string) {
		for _, i := range ids {
			_, err := s.Publish(ctx, d, i)
			require.NoError(t, err)
		}
	}
	publish("loose", "1")
	publish("kept", "1")
	_, err := b.ensureCounts(ctx)
	require.NoError(t, err)
	publish("loose", "2")
	moveAll(t, b) // loose/2 folded into cnt/c/loose, loose/1 in the base
	require.NoError(t, s.DeleteDataset(ctx, "loose", true))
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "loose", Location: "/loose/{dataid}"})
	require.NoError(t, err)
	publish("loose", "1")
	for _, moved := range []bool{false, true} {
		got, err := s.ChunkCounts(ctx, "loose")
		require.NoError(t, err)
		require.Equal(t, backends.ChunkCount{Dataset: "loose", Total: 1, Ready: 1}, got, "moved %v", moved)
		got, err = s.ChunkCounts(ctx, "kept")
		require.NoError(t, err)
		require.Equal(t, backends.ChunkCount{Dataset: "kept", Total: 1, Ready: 1}, got, "moved %v", moved)
		moveAll(t, b) // the base this process knew is gone: a round conflicts, the next counts again
	}
}

// TestCountsBaseCountedBeforeADeletion: a mover that counted the rows for
// the base before a dataset was deleted with its chunks writes no base (the
// deleted rows went without events: that base would count them for ever);
// the next round counts again after the deletion.
func TestCountsBaseCountedBeforeADeletion(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	for _, id := range []string{"empty", "loose"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}"})
		require.NoError(t, err)
	}
	for _, i := range []string{"1", "2"} {
		_, err := s.Publish(ctx, "loose", i)
		require.NoError(t, err)
	}
	moveAll(t, b)
	// No base (a store made before counts, or one whose last deletion
	// dropped it): a mover reads the rows at rev, then loose is deleted.
	_, err := b.cli.Delete(ctx, b.key("cnt")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	b.countsRev.Store(0)
	resp, err := b.get(ctx, b.key("cnt", "at"))
	require.NoError(t, err)
	rev := resp.Header.Revision
	require.NoError(t, s.DeleteDataset(ctx, "loose", true))
	require.NoError(t, b.writeBase(ctx, rev), "refused quietly: the next round counts again")
	resp, err = b.get(ctx, b.key("cnt", "at"))
	require.NoError(t, err)
	if len(resp.Kvs) == 1 { // the store's own mover may have counted since, after the deletion
		var base countBase
		require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &base))
		require.Empty(t, base.Counts["loose"], "no base counted before the deletion: %s", resp.Kvs[0].Value)
	}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "loose", Location: "/loose/{dataid}"})
	require.NoError(t, err)
	moveAll(t, b)
	got, err := s.ChunkCounts(ctx, "loose")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "loose"}, got, "declared again, it counts no chunk")
}

// moveAll runs the event mover's rounds until one succeeds: the store's own
// mover runs beside the test on the same Backend, and a round folding what
// the other folded first conflicts (errFoldConflict) and is run again.
func moveAll(t *testing.T, b *Backend) {
	t.Helper()
	for range 10 {
		err := b.moveEvents(context.Background())
		if err == nil {
			return
		}
		require.ErrorIs(t, err, errFoldConflict)
	}
	t.Fatal("the event mover conflicted 10 rounds in a row")
}
