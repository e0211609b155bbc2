package open

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// spaceOpts is an embedded store with a small quota, whose space is looked
// at only when the test asks (Reclaim) and at start.
func spaceOpts(dir string, quota int64) Options {
	o := embeddedOpts(dir)
	o.Embedded.QuotaBackendBytes = quota
	o.Embedded.SpaceInterval = -1
	o.Embedded.DefragMinBytes = 1 << 20
	return o
}

// fill writes 1 MiB values under a prefix of its own until etcd refuses a
// write for lack of space, and returns their keys.
func fill(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	ctx := context.Background()
	v := strings.Repeat("x", 1<<20)
	var keys []string
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("/filler/%04d", i)
		if _, err := cli.Put(ctx, k, v); err != nil {
			require.ErrorContains(t, err, "space exceeded")
			return keys
		}
		keys = append(keys, k)
	}
	t.Fatal("the store never ran out of space")
	return nil
}

// TestEmbeddedOutOfSpace fills an embedded store past its quota: writes
// answer UNAVAILABLE naming the serve flag that raises the quota (not
// INTERNAL), reads go on, and the space says NOSPACE with a warning. Once
// the filler is deleted and compacted, Reclaim defragments (the file
// shrinks) and disarms NOSPACE, and writes are accepted again. Filled
// again, the store restarted with a larger quota accepts writes at once.
func TestEmbeddedOutOfSpace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const quota = 48 << 20
	s, err := Open(ctx, "", spaceOpts(dir, quota))
	require.NoError(t, err)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	srv := Embedded(s)
	require.NotNil(t, srv)
	require.Equal(t, int64(quota), srv.Space().Quota)
	require.Empty(t, srv.Space().Warning())

	cli, err := srv.Client()
	require.NoError(t, err)
	defer cli.Close()
	// Spare keys, deleted one at a time below while the compaction's pages
	// are waited for: bbolt frees the pages a transaction released only
	// when a later write transaction begins, and a store at NOSPACE takes
	// no other write.
	var spares []string
	for i := range 20 {
		k := fmt.Sprintf("spare/%02d", i)
		_, err := cli.Put(ctx, k, "x")
		require.NoError(t, err)
		spares = append(spares, k)
	}
	keys := fill(t, cli)

	_, err = s.Publish(ctx, "src", "1")
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "--etcd-quota-backend-bytes")
	require.ErrorContains(t, err, "move the store to PostgreSQL")
	var be *backends.Error
	require.ErrorAs(t, err, &be)
	require.Equal(t, etcd.NoSpaceMessage, be.Message, "the client sees the message, not etcd's error")
	_, err = s.Datasets(ctx)
	require.NoError(t, err, "reads go on")
	sp := srv.Space()
	require.True(t, sp.NoSpace)
	require.Contains(t, sp.Warning(), "out of space")

	// Reclaim gives back what the writes left free and disarms while that
	// brings the file below the quota; filled again each time, the store
	// ends full of live data, and stays NOSPACE.
	for i := 0; ; i++ {
		r, err := srv.Reclaim(ctx)
		require.NoError(t, err)
		if !r.Disarmed {
			require.Less(t, r.After.Quota-r.After.Size, int64(quota/20), "%+v", r)
			break
		}
		require.Less(t, i, 10, "Reclaim disarms a full store: %+v", r)
		keys = append(keys, fill(t, cli)...)
	}
	require.True(t, srv.Space().NoSpace)
	_, err = s.Publish(ctx, "src", "1")
	require.ErrorIs(t, err, backends.ErrUnavailable)
	// The filler deleted and compacted away, its pages are free in a
	// file as large as before: Reclaim gives them back and disarms.
	var rev int64
	for _, k := range keys {
		d, err := cli.Delete(ctx, k)
		require.NoError(t, err, "deletes are accepted at NOSPACE")
		rev = d.Header.Revision
	}
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	require.NoError(t, err)
	// The member commits its compaction in the background: wait for the
	// pages to show free.
	// (Each fill writes the same keys again: count each once.)
	distinct := map[string]bool{}
	for _, k := range keys {
		distinct[k] = true
	}
	var before embedded.Space
	want := int64(len(distinct)-2) << 20
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if before = srv.Space(); before.Size-before.InUse > want || time.Now().After(deadline) {
			break
		}
		if len(spares) > 0 {
			_, err := cli.Delete(ctx, spares[0])
			require.NoError(t, err, "deletes are accepted at NOSPACE")
			spares = spares[1:]
		}
	}
	require.Greater(t, before.Size-before.InUse, want, "compaction freed the pages: %+v, %d filler keys", before, len(distinct))
	r, err := srv.Reclaim(ctx)
	require.NoError(t, err)
	require.True(t, r.Defragmented)
	require.True(t, r.Disarmed)
	require.Less(t, r.After.Size, before.Size/4, "defragmentation shrank the file")
	require.False(t, srv.Space().NoSpace)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err, "writes are accepted again")

	// Full again; restarted with the same quota, it opens and reads go on,
	// also as a store of an earlier version, without the mark of since
	// when holds are checked (which it cannot write then).
	fill(t, cli)
	_, err = s.Publish(ctx, "src", "2")
	require.ErrorIs(t, err, backends.ErrUnavailable)
	_, err = cli.Delete(ctx, "/chunklock/marks/holds-checked")
	require.NoError(t, err)
	cli.Close()
	require.NoError(t, s.Close())
	s, err = Open(ctx, "", spaceOpts(dir, quota))
	require.NoError(t, err, "a full store opens")
	// (NOSPACE as a rule; a reclaim at start may find room enough to
	// disarm, and the mark is then written.)
	_, err = s.Datasets(ctx)
	require.NoError(t, err, "reads go on")
	require.NoError(t, s.Close())
	// Restarted with a larger quota, the store disarms at start.
	s, err = Open(ctx, "", spaceOpts(dir, 4*quota))
	require.NoError(t, err)
	defer s.Close()
	require.False(t, Embedded(s).Space().NoSpace)
	_, err = s.Publish(ctx, "src", "2")
	require.NoError(t, err)
}

// TestSpaceWarning: the warning starts at embedded.WarnFraction of the
// quota and names what to do.
func TestSpaceWarning(t *testing.T) {
	q := int64(100 << 20)
	require.Empty(t, embedded.Space{Size: q*8/10 - 1, Quota: q}.Warning())
	w := embedded.Space{Size: q * 8 / 10, Quota: q}.Warning()
	require.Contains(t, w, "80%")
	require.Contains(t, w, "--etcd-quota-backend-bytes")
	require.Contains(t, embedded.Space{Size: q / 2, Quota: q, NoSpace: true}.Warning(), "NOSPACE")
	require.Empty(t, embedded.Space{}.Warning())
}
