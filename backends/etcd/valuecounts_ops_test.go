package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestValueCountsFoldTooManyKeys: on a cluster of a small --max-txn-ops
// (48), a completeMany over the claims of eight 4-dimensional datasets
// changes counts by value in many buckets: its events are still moved,
// and every one after them.
func TestValueCountsFoldTooManyKeys(t *testing.T) {
	ctx := context.Background()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true, MaxTxnOps: 48})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	cli, err := srv.Client()
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	cfg := Config{Prefix: "/foldkeys/", MaxTxnOps: 48}
	b, err := OpenClient(ctx, cli, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	vals := func(p string) []string {
		out := make([]string, 40)
		for i := range out {
			out[i] = fmt.Sprintf("%s%02d", p, i)
		}
		return out
	}
	const nds, per = 8, 12
	var tokens []string
	for d := range nds {
		id := fmt.Sprintf("ds%d", d)
		def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
			{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2025-01-01"}},
			{Name: "a", Def: partition.Def{Kind: partition.Static, Values: vals("a")}},
			{Name: "b", Def: partition.Def{Kind: partition.Static, Values: vals("b")}},
			{Name: "c", Def: partition.Def{Kind: partition.Static, Values: vals("c")}},
		}}
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/x/{dataid}", Partitions: &def})
		require.NoError(t, err)
		_, err = s.UpsertJob(ctx, backends.Job{ID: "j" + id, Output: id})
		require.NoError(t, err)
		for i := range per {
			k := d*per + i
			dataid := fmt.Sprintf("2025-01-01|a%02d|b%02d|c%02d", k%40, (k*7+3)%40, (k*13+5)%40)
			c, err := s.Claim(ctx, "j"+id, dataid, "x")
			require.NoError(t, err, dataid)
			tokens = append(tokens, c.Token)
		}
	}
	moveAll(t, b)
	res, err := s.CompleteMany(ctx, tokens)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	// Every later event waits behind it.
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/s/{dataid}"})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	resp, err := b.get(ctx, b.key("evq")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	for _, kv := range resp.Kvs {
		evs, err := decodePending(kv.Key, kv.Value, kv.ModRevision)
		require.NoError(t, err)
		ch := map[string]jobCounts{}
		addEvents(ch, evs)
		t.Logf("evq entry: %d events, %d datasets, %d count keys", len(evs), len(ch), len(b.countParts(ch)))
	}
	// The backend's own mover runs beside these rounds, and the two may
	// conflict on the same folds a few rounds in a row on a loaded
	// machine: each round that conflicts leaves them to the other.
	var other error
	require.Eventually(t, func() bool {
		if err := b.moveEvents(ctx); err != nil && !errors.Is(err, errFoldConflict) && other == nil {
			other = err
		}
		if other != nil {
			return true
		}
		resp, err := b.get(ctx, b.key("evq")+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	}, 60*time.Second, 20*time.Millisecond, "every event moved")
	require.NoError(t, other)
	require.Empty(t, b.keysUnder(t, b.key("evq")+"/"))
}

// TestFoldTooManyKeys: a fold whose one entry changes more count keys than
// a transaction may compare is too large (it would be refused at every
// round, and the event mover would stop behind it), and foldAndDrop then
// drops the counts to be counted again.
func TestFoldTooManyKeys(t *testing.T) {
	ctx := context.Background()
	cfg := freshConfig()
	cfg.MaxTxnOps = 16
	b, err := OpenClient(t.Context(), testClient, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	kb, err := b.ensureCounts(ctx)
	require.NoError(t, err)
	changes := map[string]jobCounts{}
	for d := range 20 {
		c := jobCounts{}
		c.add("j", backends.StatusReady, 1)
		changes[fmt.Sprintf("ds%02d", d)] = c
	}
	require.ErrorIs(t, b.fold(ctx, kb, nil, changes), errFoldTooLarge)
	require.ErrorIs(t, b.foldAndDrop(ctx, kb, []*mvccpb.KeyValue{{Key: []byte(b.key("evq", "none")), ModRevision: 1}}, []map[string]jobCounts{changes}), errFoldConflict)
	require.Empty(t, b.keysUnder(t, b.key("cnt")+"/"), "the counts dropped, to be counted again")
}

// TestFoldOfAnEarlierBase: a mover folds the changes it read under the
// base it knew, and only into that base: once the counts were dropped and
// counted again (by another mover of the same process, whose new base may
// already hold those changes), its fold conflicts. (It was guarded by the
// base the process knew last: a mover that had read its evq entries under
// the first base folded them into the second, and under load a block of
// customers was counted twice.)
func TestFoldOfAnEarlierBase(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(t.Context(), testClient, freshConfig())
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	first, err := b.ensureCounts(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, b.dropCounts(ctx, first), errFoldConflict)
	second, err := b.ensureCounts(ctx)
	require.NoError(t, err)
	require.NotEqual(t, first.at, second.at)
	c := jobCounts{}
	c.add("j", backends.StatusReady, 1)
	require.ErrorIs(t, b.fold(ctx, first, nil, map[string]jobCounts{"ds": c}), errFoldConflict)
	require.Empty(t, b.keysUnder(t, b.countsKey("ds")), "nothing folded into the second base")
	require.NoError(t, b.fold(ctx, second, nil, map[string]jobCounts{"ds": c}))
	require.Len(t, b.keysUnder(t, b.countsKey("ds")), 1)
}
