package postgres

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// TestCatalogChangesReachOtherServers: each server keeps the catalog in
// memory and checks its version inside every operation's transaction, so a
// change made through one server governs the very next operation on
// another: a paused job claims nothing, a new input is checked, a new
// dataset can be published, a removed producer's tokens are stale.
func TestCatalogChangesReachOtherServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := freshSchema(t)
	clock := backends.NewFakeClock(time.Time{})
	one, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, clock)
	require.NoError(t, err)
	defer one.Close()
	two, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, clock)
	require.NoError(t, err)
	defer two.Close()

	for _, d := range []string{"src", "out"} {
		_, err := one.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	job := backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	for _, id := range []string{"1", "2", "3", "4"} {
		_, err := one.Publish(ctx, "src", id)
		require.NoError(t, err)
	}
	// Server two reads the catalog and keeps it.
	c, err := two.FindNext(ctx, "j", "two")
	require.NoError(t, err)
	require.Equal(t, "1", c.DataID)
	require.NoError(t, two.Complete(ctx, c.Token))

	// Paused through server one: server two claims nothing from now on.
	job.Paused = true
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	c, err = two.FindNext(ctx, "j", "two")
	require.NoError(t, err)
	require.Nil(t, c, "a job paused on another server claims nothing")
	_, err = two.Claim(ctx, "j", "2", "two")
	require.Equal(t, backends.CodeLocked, backends.CodeOf(err), "claim of a paused job: %v", err)
	var be *backends.Error
	require.ErrorAs(t, err, &be)
	require.Equal(t, backends.BlockerPaused, be.Blockers[0].Kind)

	// Unpaused, with a second input: server two checks the new input.
	_, err = one.UpsertDataset(ctx, backends.Dataset{ID: "side"})
	require.NoError(t, err)
	job.Paused, job.Inputs = false, []string{"side", "src"}
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	_, err = two.Claim(ctx, "j", "3", "two")
	require.Equal(t, backends.CodeLocked, backends.CodeOf(err), "side/3 is not READY: %v", err)
	_, err = two.Publish(ctx, "side", "3") // a dataset server two has not seen yet
	require.NoError(t, err)
	c, err = two.FindNext(ctx, "j", "two")
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Equal(t, "3", c.DataID)
	require.Equal(t, []string{"side", "src"}, c.Inputs)
	rows, err := two.Chunk(ctx, "side", "3")
	require.NoError(t, err)
	require.Len(t, rows.Rows, 2, "the claim took an INPUT row on the new input")
}

// TestFindNextBatchedDuplicates: many runners drain a queue in which every
// chunk has two candidates; batched findNext claims each chunk once, with
// fences that differ from claim to claim.
func TestFindNextBatchedDuplicates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	s := engine.New(b, engine.WithClock(backends.NewFakeClock(time.Time{})))
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.NoError(t, err)
	const n = 60
	for i := range n {
		_, err := s.Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		for i := range n {
			if err := tx.AddCandidate(ctx, backends.Candidate{Job: "j", DataID: strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	var mu sync.Mutex
	claimed := map[string]int{}
	fences := map[int64]bool{}
	var wg sync.WaitGroup
	for r := range 16 {
		wg.Go(func() {
			for {
				c, err := s.FindNext(ctx, "j", "r"+strconv.Itoa(r))
				if err != nil {
					t.Errorf("findNext: %v", err)
					return
				}
				if c == nil {
					return
				}
				mu.Lock()
				claimed[c.DataID]++
				if fences[c.Fence] {
					t.Errorf("fence %d handed out twice", c.Fence)
				}
				fences[c.Fence] = true
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
		require.Equal(t, 1, k, "chunk %s claimed %d times", id, k)
	}
}
