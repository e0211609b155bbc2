package etcd

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestStalePurgeKeepsNewReads: a purge of a deleted job's reads that read
// them before the job was declared again under its id, and deletes after
// the new job claimed the same input chunk (the same row key), leaves the
// new job's read.
func TestStalePurgeKeepsNewReads(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	for _, id := range []string{"src", "a"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}"})
		require.NoError(t, err)
	}
	job := backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"}
	_, err := s.UpsertJob(ctx, job)
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	c, err := s.FindNext(ctx, "ja", "e")
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, c.Token))
	reads := func() []keyRev {
		resp, err := b.get(ctx, b.key("rows", "src")+"/", clientv3.WithPrefix())
		require.NoError(t, err)
		var out []keyRev
		for _, kv := range resp.Kvs {
			if strings.Contains(string(kv.Key), "/INPUT/ja") {
				out = append(out, keyRev{string(kv.Key), kv.ModRevision})
			}
		}
		return out
	}
	stale := reads() // what a purge scanned before the job came back
	require.Len(t, stale, 1)
	require.NoError(t, s.DeleteJob(ctx, "ja"))
	_, err = s.UpsertJob(ctx, job)
	require.NoError(t, err)
	_, err = s.Resubmit(ctx, "a", "1", false)
	require.NoError(t, err)
	c, err = s.FindNext(ctx, "ja", "e")
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Len(t, reads(), 1, "the new claim reads src/1")
	require.NoError(t, b.purgeRows(ctx, stale))
	require.Len(t, reads(), 1, "the stale purge left the new job's read")
}
