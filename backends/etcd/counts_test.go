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
	"github.com/chunklock/chunklock/backends/partition"
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
	b.counts.Store(nil)
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
	b.counts.Store(nil)
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

// TestValueCountsFoldAndRebase: counts by value are folded beside the
// totals and read the same pending or folded; a base written by an
// earlier version (no counts by value) is dropped at the next mover round
// and counted again, with the values.
func TestValueCountsFoldAndRebase(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "n", Def: partition.Def{Kind: partition.Integer, Start: "1", End: "20"}},
		{Name: "region", Def: partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}},
	}}
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/src/{dataid}", Partitions: &def})
	require.NoError(t, err)
	_, err = b.ensureCounts(ctx)
	require.NoError(t, err)
	for i := 1; i <= 10; i++ {
		_, err := s.Publish(ctx, "src", fmt.Sprintf("%d|eu", i))
		require.NoError(t, err)
	}
	for i := 1; i <= 3; i++ {
		_, err := s.Hold(ctx, "src", fmt.Sprintf("%d|us", i), "frozen")
		require.NoError(t, err)
	}
	want := map[string]map[backends.Status]int{"eu": {backends.StatusReady: 10}, "us": {backends.StatusHold: 3}}
	counts := func(what string) {
		t.Helper()
		got, err := b.CountValueStatuses(ctx, "src", "", 1)
		require.NoError(t, err)
		require.Equal(t, want, got, what)
	}
	counts("pending")
	moveAll(t, b)
	counts("folded")
	resp, err := b.get(ctx, b.valuesPrefix("src"), clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, len(byBucket(jobCounts{valueKey("", 1, "eu"): nil, valueKey("", 1, "us"): nil})),
		"the changes by value folded into cnt/v/src/, a key for each bucket of eu and us")

	// An earlier version's base: no V, no counts by value.
	resp, err = b.get(ctx, b.key("cnt", "at"))
	require.NoError(t, err)
	var base countBase
	require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &base))
	base.V = 0
	old, _ := json.Marshal(base)
	_, err = b.cli.Delete(ctx, b.key("cnt")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	_, err = b.cli.Put(ctx, b.key("cnt", "at"), string(old))
	require.NoError(t, err)
	b.counts.Store(nil)
	counts("the rows read while the base is an earlier version's")
	_, err = s.Publish(ctx, "src", "11|eu")
	require.NoError(t, err)
	want["eu"][backends.StatusReady]++
	moveAll(t, b) // drops the old base, then counts again
	moveAll(t, b)
	resp, err = b.get(ctx, b.key("cnt", "at"))
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &base))
	require.Equal(t, valuesBase, base.V, "counted again, with the values")
	counts("after the recount")
	tot, err := s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "src", Total: 14, Ready: 11, Hold: 3}, tot)
}

// TestCountsAfterALoad: a store copy loads rows without events and events
// through transactions without rows; a base the mover counts between two
// loads must not count the loaded events' changes on top of the rows
// (the load's end drops the counts, to be counted again from the rows).
func TestCountsAfterALoad(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/src/{dataid}"})
	require.NoError(t, err)
	at := epoch
	var rows, events []backends.DumpItem
	for i := range 4 {
		id := fmt.Sprint(i)
		rows = append(rows, backends.DumpItem{Row: &backends.StatusRow{
			RowKey: backends.RowKey{Dataset: "src", DataID: id, Role: backends.RoleOutput},
			Status: backends.StatusReady, UpdatedAt: at, PrevStatus: backends.StatusNone}})
		events = append(events, backends.DumpItem{Event: &backends.Event{Time: at, Actor: "copy", Dataset: "src", DataID: id,
			Role: backends.RoleOutput, From: backends.StatusNone, To: backends.StatusReady}})
	}
	require.NoError(t, b.Load(ctx, backends.DumpRows, rows))
	_, err = b.ensureCounts(ctx) // the mover's round between the two loads
	require.NoError(t, err)
	require.NoError(t, b.Load(ctx, backends.DumpEvents, events))
	moveAll(t, b) // the loaded events' entries moved, their changes folded into that base
	require.NoError(t, b.FinishLoad(ctx))
	got, err := s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "src", Total: 4, Ready: 4}, got)
}
