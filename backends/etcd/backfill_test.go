package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// backfillFixture is a backend whose candidate batches can be made to fail,
// with chunks 1..n READY on src and a store on top.
func backfillFixture(t *testing.T, n int) (*Backend, backends.Store) {
	t.Helper()
	ctx := context.Background()
	cfg := freshConfig()
	cfg.MaxTxnOps = 16 // several candidate batches
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { s.Close() })
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	for i := 1; i <= n; i++ {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}
	return b, s
}

// failBackfillAfter makes the backfill's batches fail after ok of them.
func failBackfillAfter(b *Backend, ok int) {
	b.hookBackfillFlush = func() error {
		if ok == 0 {
			return errors.New("injected: candidate batch lost")
		}
		ok--
		return nil
	}
}

// claimAll claims every chunk findNext offers to job and returns the
// dataids in order.
func claimAll(t *testing.T, s backends.Store, job string) []string {
	t.Helper()
	var got []string
	for {
		c, err := s.FindNext(context.Background(), job, "x")
		require.NoError(t, err)
		if c == nil {
			return got
		}
		got = append(got, c.DataID)
	}
}

func seq(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// TestBackfillResumedByNextUpsert: a backfill that failed half way is
// finished by the next upsert of the job, even though the job is stored
// with the same inputs and the engine asks for no backfill.
func TestBackfillResumedByNextUpsert(t *testing.T) {
	ctx := context.Background()
	const n = 40
	b, s := backfillFixture(t, n)
	failBackfillAfter(b, 1)
	job := backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}
	_, err := s.UpsertJob(ctx, job)
	require.Error(t, err)
	_, err = s.Job(ctx, "j")
	require.NoError(t, err, "the job itself was stored")

	b.hookBackfillFlush = nil
	_, err = s.UpsertJob(ctx, job)
	require.NoError(t, err)
	require.Equal(t, seq(n), claimAll(t, s, "j"))
	requireNoPendingBackfill(t, b)
}

// TestBackfillResumedBySweep: a backfill left pending (its server failed)
// is finished by any backend's sweep once the marker is old enough.
func TestBackfillResumedBySweep(t *testing.T) {
	ctx := context.Background()
	const n = 40
	b, s := backfillFixture(t, n)
	failBackfillAfter(b, 0)
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.Error(t, err)
	b.hookBackfillFlush = nil

	// A fresh marker may belong to a backfill still running elsewhere.
	require.NoError(t, b.sweepBackfills(ctx, time.Now().Add(-time.Minute)))
	c, err := s.FindNext(ctx, "j", "x")
	require.NoError(t, err)
	require.Nil(t, c)

	other, err := OpenClient(ctx, testClient, b.cfg)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.sweepBackfills(ctx, time.Now().Add(time.Minute)))
	require.Equal(t, seq(n), claimAll(t, s, "j"))
	requireNoPendingBackfill(t, b)
}

func requireNoPendingBackfill(t *testing.T, b *Backend) {
	t.Helper()
	r, err := testClient.Get(context.Background(), b.key("backfill")+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	require.Zero(t, r.Count, "backfill markers left")
}
