package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func setupChain(t *testing.T, s backends.Store) {
	ctx := context.Background()
	for _, d := range []string{"a", "b", "c"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/x/{dataid}"})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "ja", Inputs: []string{"a"}, Output: "b"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "jb", Inputs: []string{"b"}, Output: "c"})
	require.NoError(t, err)
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(epoch)
	s := newStore(t, clock)
	setupChain(t, s)
	for _, d := range []string{"3", "1", "10", "2"} {
		_, err := s.Publish(ctx, "a", d)
		require.NoError(t, err)
	}
	var order []string
	for {
		c, err := s.FindNext(ctx, "ja", "x")
		require.NoError(t, err)
		if c == nil {
			break
		}
		order = append(order, c.DataID)
		require.NoError(t, s.Complete(ctx, c.Token))
	}
	require.Equal(t, []string{"1", "2", "3", "10"}, order)
	c, err := s.FindNext(ctx, "jb", "x")
	require.NoError(t, err)
	require.Equal(t, "1", c.DataID)
	require.NoError(t, s.Fail(ctx, c.Token, "boom"))
	require.ErrorIs(t, s.Complete(ctx, c.Token), backends.ErrStaleClaim)
	c2, err := s.FindNext(ctx, "jb", "x")
	require.NoError(t, err)
	require.Equal(t, "1", c2.DataID)
	require.Equal(t, 2, c2.Attempt)
	require.Greater(t, c2.Fence, c.Fence)

	claims, err := s.Claims(ctx, "jb")
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, c2.Token, claims[0].Token)

	clock.Advance(61 * time.Second)
	n, err := s.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ch, err := s.Chunk(ctx, "c", "1")
	require.NoError(t, err)
	require.Equal(t, backends.StatusFailed, ch.Output.Status)
	claims, err = s.Claims(ctx, "")
	require.NoError(t, err)
	require.Empty(t, claims)

	_, err = s.Resubmit(ctx, "a", "1", true)
	require.NoError(t, err)
	ch, err = s.Chunk(ctx, "b", "1")
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, ch.Output.Status)
}

func TestListRowsOrderAndPaging(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, backends.NewFakeClock(epoch))
	// "a-b" sorts before "a/" as a key but after "a" as an id.
	for _, d := range []string{"a", "a-b", "a.c"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	var want []string
	for _, d := range []string{"a", "a-b", "a.c"} {
		for _, id := range []string{"1", "2", "10", "9"} {
			_, err := s.Publish(ctx, d, id)
			require.NoError(t, err)
		}
		for _, id := range []string{"1", "2", "9", "10"} {
			want = append(want, d+"/"+id)
		}
	}
	var got []string
	f := backends.ChunkFilter{First: 5}
	for {
		p, err := s.Chunks(ctx, f)
		require.NoError(t, err)
		for _, r := range p.Rows {
			got = append(got, r.Dataset+"/"+r.DataID)
		}
		if !p.HasNextPage {
			break
		}
		f.After = p.Cursors[len(p.Cursors)-1]
	}
	require.Equal(t, want, got)

	p, err := s.Chunks(ctx, backends.ChunkFilter{Dataset: "a-b", From: "2", To: "9"})
	require.NoError(t, err)
	require.Len(t, p.Rows, 2)
	require.Equal(t, "2", p.Rows[0].DataID)
	require.Equal(t, "9", p.Rows[1].DataID)

	_, err = s.Chunks(ctx, backends.ChunkFilter{After: "garbage"})
	require.ErrorIs(t, err, backends.ErrInvalidArgument)
}

func TestEventsSeqAndWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, clock := freshConfig(), backends.NewFakeClock(epoch)
	s := openCfg(t, cfg, clock)
	// A second store on the same prefix stands for another server.
	other := openCfg(t, cfg, clock)
	setupChain(t, s)

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watch, err := other.WatchEvents(wctx, backends.EventFilter{Dataset: "a"})
	require.NoError(t, err)

	for i := 1; i <= 20; i++ {
		_, err := s.Publish(ctx, "a", fmt.Sprint(i))
		require.NoError(t, err)
	}
	var seen []backends.Event
	for len(seen) < 20 {
		select {
		case e, ok := <-watch:
			require.True(t, ok, "watch closed early")
			seen = append(seen, e)
		case <-ctx.Done():
			t.Fatalf("only %d of 20 events arrived", len(seen))
		}
	}
	for i, e := range seen {
		require.Equal(t, fmt.Sprint(i+1), e.DataID)
		require.Equal(t, backends.StatusReady, e.To)
		if i > 0 {
			require.Greater(t, e.Seq, seen[i-1].Seq)
		}
	}
	// Paging gives the same sequence, whether or not the mover ran yet.
	var listed []backends.Event
	f := backends.EventFilter{Dataset: "a", First: 7}
	for {
		p, err := other.Events(ctx, f)
		require.NoError(t, err)
		listed = append(listed, p.Events...)
		if !p.HasNextPage {
			break
		}
		f.After = p.Events[len(p.Events)-1].Seq
	}
	require.Equal(t, seen, listed)
	// By chunk (the evc/ index once moved).
	require.Eventually(t, func() bool {
		p, err := s.Events(ctx, backends.EventFilter{Dataset: "a", DataID: "7"})
		return err == nil && len(p.Events) == 1 && p.Events[0].Seq == seen[6].Seq
	}, 10*time.Second, 50*time.Millisecond)
	// A watch that starts after a cursor replays only what follows it.
	w2, err := s.WatchEvents(wctx, backends.EventFilter{After: seen[17].Seq})
	require.NoError(t, err)
	for _, want := range seen[18:] {
		select {
		case e := <-w2:
			require.Equal(t, want, e)
		case <-ctx.Done():
			t.Fatal("replay did not arrive")
		}
	}
	wcancel()
	for range w2 { // closes when the context ends
	}
}

func openCfg(t *testing.T, cfg Config, clock backends.Clock) backends.Store {
	t.Helper()
	b, err := OpenClient(context.Background(), testClient, cfg)
	require.NoError(t, err)
	s := engine.New(b, engine.WithClock(clock))
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRacingClaimsExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, backends.NewFakeClock(epoch))
	setupChain(t, s)
	const chunks, workers = 60, 12
	for i := 1; i <= chunks; i++ {
		_, err := s.Publish(ctx, "a", fmt.Sprint(i))
		require.NoError(t, err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := s.FindNext(ctx, "ja", fmt.Sprint("w", w))
				if err != nil {
					errs <- err
					return
				}
				if c == nil {
					return
				}
				mu.Lock()
				got[c.DataID]++
				mu.Unlock()
				if err := s.Complete(ctx, c.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, got, chunks)
	for id, n := range got {
		require.Equal(t, 1, n, "chunk %s claimed %d times", id, n)
	}
}

func TestResolveUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	defer b.Close()
	lease, err := b.leaseID(ctx)
	require.NoError(t, err)
	cause := errors.New("connection lost")

	// The commit happened: its marker says so.
	done := b.key("txn", "done")
	_, err = testClient.Put(ctx, done, "c")
	require.NoError(t, err)
	ok, err := b.resolve(ctx, done, lease, cause)
	require.NoError(t, err)
	require.True(t, ok)

	// The commit did not happen: resolution fences it off for good.
	lost := b.key("txn", "lost")
	ok, err = b.resolve(ctx, lost, lease, cause)
	require.NoError(t, err)
	require.False(t, ok)
	r, err := testClient.Get(ctx, lost)
	require.NoError(t, err)
	require.Equal(t, "a", string(r.Kvs[0].Value))
	ok, err = b.resolve(ctx, lost, lease, cause)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestResourceLocks(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(epoch)
	s := newStore(t, clock)
	r1, err := s.LockResource(ctx, "c1", "s3://lake/x", backends.LockRead, time.Minute)
	require.NoError(t, err)
	r2, err := s.LockResource(ctx, "c2", "s3://lake/x", backends.LockRead, time.Minute)
	require.NoError(t, err)
	require.Less(t, r1.ID, r2.ID)
	_, err = s.LockResource(ctx, "c3", "s3://lake/x", backends.LockWrite, time.Minute)
	var be *backends.Error
	require.ErrorAs(t, err, &be)
	require.Equal(t, backends.CodeLocked, be.Code)
	require.Len(t, be.Holders, 2)
	require.ErrorIs(t, s.UnlockResource(ctx, r1.ID, "c2"), backends.ErrForbidden)
	require.NoError(t, s.UnlockResource(ctx, r1.ID, "c1"))
	require.ErrorIs(t, s.UnlockResource(ctx, r1.ID, "c1"), backends.ErrNotFound)
	ls, err := s.ResourceLocks(ctx, backends.ResourceLockFilter{})
	require.NoError(t, err)
	require.Equal(t, []backends.ResourceLock{r2}, ls)
	clock.Advance(2 * time.Minute)
	w, err := s.LockResource(ctx, "c3", "s3://lake/x", backends.LockWrite, 0)
	require.NoError(t, err)
	ls, err = s.ResourceLocks(ctx, backends.ResourceLockFilter{Resource: "s3://lake/x"})
	require.NoError(t, err)
	require.Equal(t, []backends.ResourceLock{w}, ls)
}

func TestUnreachableIsUnavailable(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Endpoints = freeAddrs(t, 1) // nothing listens there
	cfg.DialTimeout = 200 * time.Millisecond
	cfg.RequestTimeout = 300 * time.Millisecond
	_, err := Open(ctx, cfg)
	require.ErrorIs(t, err, backends.ErrUnavailable)
}

// TestCommitMarkersExpire: commit markers live on short leases that are
// not kept alive, and a lease serves new commits only for a while, so
// markers never pile up.
func TestCommitMarkersExpire(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	s := engine.New(b)
	defer s.Close()
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	r, err := testClient.Get(ctx, b.key("txn")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, r.Kvs, 1)
	first := clientv3.LeaseID(r.Kvs[0].Lease)
	require.NotZero(t, first)
	ttl, err := testClient.TimeToLive(ctx, first)
	require.NoError(t, err)
	require.Positive(t, ttl.TTL)
	require.LessOrEqual(t, ttl.GrantedTTL, int64(80), "RequestTimeout 10s + ResolveTimeout 30s, doubled")

	b.leaseMu.Lock()
	b.leaseAt = b.leaseAt.Add(-time.Hour) // the lease's turn is over
	b.leaseMu.Unlock()
	_, err = s.Publish(ctx, "src", "2")
	require.NoError(t, err)
	r, err = testClient.Get(ctx, b.key("txn")+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, r.Kvs, 2)
	leases := map[int64]bool{}
	for _, kv := range r.Kvs {
		leases[kv.Lease] = true
	}
	require.Len(t, leases, 2, "the second commit took a new lease")
}
