package etcd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/partition"
)

// customerDatasets declares datasets date × customer with n customers
// each, and publishes every customer's first day.
func customerDatasets(t *testing.T, s backends.Store, n int, ids ...string) {
	t.Helper()
	ctx := context.Background()
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("customer-%05d", i)
	}
	for _, id := range ids {
		def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
			{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2025-01-01"}},
			{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
		}}
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/x/{dataid}", Partitions: &def})
		require.NoError(t, err)
		_, err = s.AddPartitions(ctx, id, values, "customer", "2025-01-01")
		require.NoError(t, err)
		res, err := s.PublishRange(ctx, id, "2025-01-01", "2025-01-01")
		require.NoError(t, err)
		require.Equal(t, n, res.Changed)
	}
}

// wantReady is the counts by customer of n customers READY once each,
// customer-00001 twice.
func wantReady(n int) map[string]map[backends.Status]int {
	want := map[string]map[backends.Status]int{}
	for i := range n {
		want[fmt.Sprintf("customer-%05d", i)] = map[backends.Status]int{backends.StatusReady: 1}
	}
	want["customer-00001"][backends.StatusReady] = 2
	return want
}

func (b *Backend) keysUnder(t *testing.T, prefix string) map[string]int {
	t.Helper()
	resp, err := b.get(context.Background(), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = len(kv.Value)
	}
	return out
}

// TestValueCountsAtSize: four datasets of ten thousand customers each
// (their counts by value about 420 KB apiece) keep their counts by value
// in buckets, each fold rewriting those of the values it changes, so the
// mover goes on (one key per dataset made every fold of the four larger
// than etcd takes, and the mover stopped for good); a deleteDataset drops
// the counts, and the base is written again in as many transactions as it
// takes; every count stays exact.
func TestValueCountsAtSize(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	ids := []string{"orders", "clean", "mart", "mart2"}
	const n = 10000
	customerDatasets(t, s, n, ids...)
	moveAll(t, b)
	for _, id := range ids {
		buckets := b.keysUnder(t, b.valuesPrefix(id))
		require.Len(t, buckets, valueBuckets, "the counts of %s by customer in every bucket", id)
		for k, size := range buckets {
			require.Less(t, size, 16<<10, "bucket %s of %s", k, id)
		}
	}
	for _, id := range ids {
		_, err := s.Publish(ctx, id, "2025-01-05|customer-00001")
		require.NoError(t, err)
	}
	moveAll(t, b)
	require.Empty(t, b.keysUnder(t, b.key("evq")+"/"), "every event moved")
	for _, id := range ids {
		got, err := b.CountValueStatuses(ctx, id, "", 1)
		require.NoError(t, err)
		require.Equal(t, wantReady(n), got, id)
	}

	// A deleteDataset drops the counts: the next round counts the rows and
	// writes the base again, its 4 x 420 KB by value in several
	// transactions.
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "scratch", Location: "/s/{dataid}"})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "scratch", "1")
	require.NoError(t, err)
	moveAll(t, b)
	require.NoError(t, s.DeleteDataset(ctx, "scratch", true))
	_, err = s.Publish(ctx, "orders", "2025-01-02|customer-00002")
	require.NoError(t, err)
	moveAll(t, b)
	moveAll(t, b)
	require.Empty(t, b.keysUnder(t, b.key("evq")+"/"), "every event moved")
	vb := b.counts.Load().vb
	require.NotEmpty(t, vb)
	for k := range b.keysUnder(t, b.key("cnt", "vb")+"/") {
		require.True(t, strings.HasPrefix(k, vb+"/"), "%s: only the base's keys by value stay", k)
	}
	want := wantReady(n)
	want["customer-00002"][backends.StatusReady]++
	got, err := b.CountValueStatuses(ctx, "orders", "", 1)
	require.NoError(t, err)
	require.Equal(t, want, got)
	page, err := s.ValueCounts(ctx, backends.ValueCountFilter{Dataset: "mart", Dimension: "customer", First: 1})
	require.NoError(t, err)
	require.Len(t, page.Counts, 1)
}

// TestValueCountsFoldTooLarge: on a store whose transactions take little
// (64 KB), a transaction changing more counts by value than one fold may
// write drops the counts, the base is counted again in transactions that
// fit, and the counts stay exact.
func TestValueCountsFoldTooLarge(t *testing.T) {
	ctx := context.Background()
	cfg := freshConfig()
	cfg.MaxRequestBytes = 64 << 10
	b, err := OpenClient(t.Context(), testClient, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	const n = 3000
	customerDatasets(t, s, n, "orders", "clean")
	_, err = b.ensureCounts(ctx)
	require.NoError(t, err)
	drops := 0
	for range 20 {
		err := b.moveEvents(ctx)
		if err == nil {
			break
		}
		require.ErrorIs(t, err, errFoldConflict)
		drops++
	}
	require.Empty(t, b.keysUnder(t, b.key("evq")+"/"), "every event moved")
	for _, id := range []string{"orders", "clean"} {
		_, err := s.Publish(ctx, id, "2025-01-05|customer-00001")
		require.NoError(t, err)
	}
	moveAll(t, b)
	for _, id := range []string{"orders", "clean"} {
		got, err := b.CountValueStatuses(ctx, id, "", 1)
		require.NoError(t, err)
		require.Equal(t, wantReady(n), got, id)
	}
	t.Logf("rounds that dropped or conflicted: %d", drops)
}
