package etcd

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
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
	s, err := OpenClient(ctx, cli, Config{MaxTxnOps: int(srv.MaxTxnOps())})
	require.NoError(t, err)
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
