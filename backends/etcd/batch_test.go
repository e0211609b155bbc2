package etcd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// TestBatchesFitMaxTxnOps: on a member with a small --max-txn-ops, many
// runners of a job with several inputs drain its chunks: batches of claims
// and completions stay under the limit (etcd would refuse them otherwise)
// and every chunk is claimed and completed once.
func TestBatchesFitMaxTxnOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{
		Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true, MaxTxnOps: 32,
	})
	require.NoError(t, err)
	defer srv.Close()
	cli, err := srv.Client()
	require.NoError(t, err)
	defer cli.Close()
	b, err := OpenClient(ctx, cli, Config{MaxTxnOps: int(srv.MaxTxnOps())})
	require.NoError(t, err)
	s := engine.New(b)
	defer s.Close()

	inputs := []string{"a", "b", "c", "d", "e"} // 14 keys per claim: one fits in a batch
	for _, d := range append(inputs, "out") {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: inputs, Output: "out"})
	require.NoError(t, err)
	const n = 120
	for i := range n {
		for _, d := range inputs {
			_, err := s.Publish(ctx, d, strconv.Itoa(i))
			require.NoError(t, err)
		}
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for r := range 16 {
		wg.Go(func() {
			for {
				c, err := s.FindNext(ctx, "j", fmt.Sprint("r", r))
				if err != nil {
					t.Errorf("findNext: %v", err)
					return
				}
				if c == nil {
					return
				}
				mu.Lock()
				claimed[c.DataID]++
				mu.Unlock()
				if err := s.Complete(ctx, c.Token); err != nil {
					t.Errorf("complete: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, claimed, n)
	for id, k := range claimed {
		require.Equal(t, 1, k, "chunk %s claimed once", id)
	}
}

// TestWindowedCandidateReads: dataids of mixed lengths published in random
// order, between claims, sometimes far behind or ahead of the head, and
// some claims released back: every findNext returns the first claimable
// chunk in shortlex order, whatever window the candidate reads use.
func TestWindowedCandidateReads(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	waiting := map[string]bool{}
	published := map[string]bool{}
	publish := func() {
		for {
			id := strconv.Itoa(rng.IntN([]int{10, 1000, 100000}[rng.IntN(3)]))
			if published[id] {
				continue
			}
			_, err := s.Publish(ctx, "src", id)
			require.NoError(t, err)
			published[id], waiting[id] = true, true
			return
		}
	}
	for range 300 {
		publish()
	}
	for step := range 600 {
		if rng.IntN(3) == 0 {
			publish()
		}
		want := ""
		for id := range waiting {
			if want == "" || backends.CompareDataID(id, want) < 0 {
				want = id
			}
		}
		c, err := s.FindNext(ctx, "j", "x")
		require.NoError(t, err)
		if want == "" {
			require.Nil(t, c)
			break
		}
		require.NotNil(t, c, "step %d", step)
		require.Equal(t, want, c.DataID, "step %d: findNext takes the first chunk in shortlex order", step)
		if rng.IntN(8) == 0 {
			require.NoError(t, s.Release(ctx, c.Token)) // back in the queue, behind the head
			continue
		}
		require.NoError(t, s.Complete(ctx, c.Token))
		delete(waiting, c.DataID)
	}
}

// TestCompactedSnapshotRetries: a transaction whose snapshot is compacted
// away while it reads runs again on a fresh snapshot instead of failing.
func TestCompactedSnapshotRetries(t *testing.T) {
	ctx := context.Background()
	be, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	defer be.Close()
	attempts := 0
	err = be.Update(ctx, func(tx backends.Tx) error {
		attempts++
		if _, err := tx.GetRows(ctx, []backends.RowKey{{Dataset: "a", DataID: "1", Role: backends.RoleOutput}}); err != nil {
			return err
		}
		if attempts == 1 {
			resp, err := testClient.Put(ctx, be.key("probe"), "x")
			require.NoError(t, err)
			_, err = testClient.Compact(ctx, resp.Header.Revision)
			require.NoError(t, err)
		}
		_, err := tx.GetRows(ctx, []backends.RowKey{{Dataset: "a", DataID: "2", Role: backends.RoleOutput}})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts, "the first attempt's snapshot was compacted away")
}
