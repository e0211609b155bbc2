package etcd

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/partition"
)

// outIndexOf lists the OUTPUT rows under prefix as out/ keys would name
// them, and the out/ keys there are.
func outIndexOf(t testing.TB, prefix string) (want, have []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := testClient.Get(ctx, prefix+"rows/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	for _, kv := range rows.Kvs {
		k, ok := parseCursor(strings.TrimPrefix(string(kv.Key), prefix+"rows/"))
		require.True(t, ok, "row key %s", kv.Key)
		if k.Role == backends.RoleOutput {
			want = append(want, prefix+"out/"+k.Dataset+"/"+k.Job+"/"+backends.SortKey(k.DataID))
		}
	}
	outs, err := testClient.Get(ctx, prefix+"out/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	for _, kv := range outs.Kvs {
		have = append(have, string(kv.Key))
	}
	slices.Sort(want)
	return want, have
}

// TestOutputIndex: after publishes, claims completed, failed and released,
// holds, a range and a dataset's deletion, out/ holds one key per OUTPUT
// row and no other, and CountOutputs counts them by range.
func TestOutputIndex(t *testing.T) {
	ctx := t.Context()
	cfg := freshConfig()
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.True(t, b.outIndexed.Load(), "a new store is indexed at once")
	s := engine.New(b)
	days := partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-31"}
	for _, ds := range []string{"raw", "out", "gone"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: ds, URL: "s3://x/" + ds, Location: "{dataid}", Partitions: &days})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "mk", Output: "out", Inputs: []string{"raw"}})
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "raw", "2026-01-01", "2026-01-10")
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "gone", "2026-01-01", "2026-01-05")
	require.NoError(t, err)
	_, err = s.Hold(ctx, "raw", "2026-01-20", "later")
	require.NoError(t, err)
	claim := func(id string) *backends.Claim {
		c, err := s.Claim(ctx, "mk", id, "test")
		require.NoError(t, err)
		return c
	}
	require.NoError(t, s.Complete(ctx, claim("2026-01-01").Token))
	require.NoError(t, s.Fail(ctx, claim("2026-01-02").Token, "broken"))
	require.NoError(t, s.Release(ctx, claim("2026-01-03").Token))
	_ = claim("2026-01-04") // RUNNING
	err = s.DeleteDataset(ctx, "gone", true)
	require.NoError(t, err)

	want, have := outIndexOf(t, cfg.Prefix)
	require.Equal(t, want, have)
	require.Len(t, have, 10+1+3) // raw's ten and a hold; out's three with rows (the released one has none)
	for _, c := range []struct {
		ds, job, from, to string
		n                 int64
	}{{"raw", "", "", "2026-12-31", 11}, {"raw", "", "2026-01-03", "2026-01-20", 9}, {"raw", "", "2026-01-11", "2026-01-19", 0},
		{"out", "mk", "2026-01-01", "2026-01-04", 3}, {"out", "mk", "2026-01-03", "2026-01-03", 0}, {"raw", "mk", "", "2026-12-31", 0}} {
		n, ok, err := b.CountOutputs(ctx, c.ds, c.job, c.from, c.to)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, c.n, n, "%+v", c)
	}
}

// TestOutputIndexBuiltAtOpen: a store whose rows were written without the
// index (its out/ keys and mark deleted here) answers no count until the
// background indexing at its next open has written every key.
func TestOutputIndexBuiltAtOpen(t *testing.T) {
	ctx := t.Context()
	cfg := freshConfig()
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	ints := partition.Def{Kind: partition.Integer}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "seq", URL: "s3://x/seq", Location: "{dataid}", Partitions: &ints})
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "seq", "0", "1199")
	require.NoError(t, err)
	require.NoError(t, b.Close())
	_, err = testClient.Delete(ctx, cfg.Prefix+"out/", clientv3.WithPrefix())
	require.NoError(t, err)
	_, err = testClient.Delete(ctx, cfg.Prefix+"marks/outputs-indexed")
	require.NoError(t, err)

	b, err = OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Eventually(t, b.outIndexed.Load, 30*time.Second, 10*time.Millisecond)
	want, have := outIndexOf(t, cfg.Prefix)
	require.Len(t, want, 1200)
	require.Equal(t, want, have)
	n, ok, err := b.CountOutputs(ctx, "seq", "", "100", "999")
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 900, n)
}

// TestOutputIndexStaleKey: an out/ key left without its row (as a replica
// of an earlier version releasing a claim would leave it) makes the index
// count more than the kept counts: it is not used, and the oldest missing
// dataid is still found, by reading the rows.
func TestOutputIndexStaleKey(t *testing.T) {
	ctx := t.Context()
	cfg := freshConfig()
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	clock := backends.NewFakeClock(time.Date(2040, 1, 1, 0, 30, 0, 0, time.UTC))
	s := engine.New(b, engine.WithClock(clock))
	def := partition.Def{Kind: partition.Hourly, Start: "2039-10-01T00"}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "feed", URL: "s3://x/feed", Location: "{dataid}", Partitions: &def})
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "feed", "2039-10-01T00", "2039-11-14T23")
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "feed", "2039-11-15T01", "2039-12-31T23")
	require.NoError(t, err)
	_, err = testClient.Put(ctx, b.outKey(backends.RowKey{Dataset: "feed", DataID: "2039-11-15T00", Role: backends.RoleOutput}), "")
	require.NoError(t, err)
	c, err := s.PartitionCounts(ctx, "feed")
	require.NoError(t, err)
	require.Equal(t, []any{1, "2039-11-15T00"}, []any{c.Missing, c.OldestMissing})
}
