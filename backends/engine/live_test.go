package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/stretchr/testify/require"
)

// batching lets the engine serve several live-claim operations, and
// several findNext calls, in one memory transaction, counts the
// transactions, and can hold them at a gate.
type batching struct {
	*versioned
	updates atomic.Int64
	gate    chan struct{} // when not nil, every Update waits for it to close
}

// Limits serve up to 8 operations, and 8 chunks of a range, per
// transaction.
func (b *batching) Limits() backends.Limits { return backends.Limits{MaxBatch: 8} }

func (b *batching) Update(ctx context.Context, fn func(backends.Tx) error) error {
	b.updates.Add(1)
	if b.gate != nil {
		<-b.gate
	}
	return b.versioned.Update(ctx, fn)
}

var _ backends.Backend = (*batching)(nil)

// leaders is how many batches the engine keeps in flight at once, per
// findNext job and for the live-claim operations: the tests hold that many
// at the gate so that the next calls queue behind them.
const leaders = 1

// TestBatchedConformance runs the conformance suite, concurrency included,
// on an engine that combines live-claim operations.
func TestBatchedConformance(t *testing.T) {
	newBackend := func(*testing.T) backends.Backend {
		return &batching{versioned: &versioned{Backend: memory.New()}}
	}
	backendtest.Run(t, newBackend)
	backendtest.RunConcurrency(t, newBackend)
}

// newBatchingStore returns a batching store with job j reading src and
// writing out.
func newBatchingStore(t *testing.T) (*batching, backends.Store) {
	ctx := context.Background()
	b := &batching{versioned: &versioned{Backend: memory.New()}}
	s := engine.New(b, engine.WithClock(backends.NewFakeClock(time.Time{})))
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.NoError(t, err)
	return b, s
}

// TestLiveBatches: completions queued while transactions are held are
// served several per transaction; each takes effect once, with its own
// actor; of two completions of one token queued together, one gets
// STALE_CLAIM (they never share a transaction, where both would see the
// claim live).
func TestLiveBatches(t *testing.T) {
	ctx := context.Background()
	b, s := newBatchingStore(t)
	const n = 40
	var tokens []string
	for i := range n {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
		c, err := s.FindNext(ctx, "j", "x")
		require.NoError(t, err)
		tokens = append(tokens, c.Token)
	}

	b.gate = make(chan struct{})
	before := b.updates.Load()
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	complete := func(i int, token string) {
		wg.Go(func() { errs[i] = s.Complete(backends.WithActor(ctx, fmt.Sprint("runner-", i)), token) })
		time.Sleep(5 * time.Millisecond) // queue in this order
	}
	const L = leaders
	for i := range L { // the leaders, held at the gate
		complete(i, tokens[i])
	}
	require.Eventually(t, func() bool { return b.updates.Load() == before+L }, time.Minute, time.Millisecond,
		"the leaders wait at the gate, so the next completions queue")
	complete(n, tokens[L]) // tokens[L] twice, one after the other in the queue
	for i := L; i < n; i++ {
		complete(i, tokens[i])
	}
	close(b.gate)
	wg.Wait()
	used := b.updates.Load() - before
	require.Less(t, used, int64(n), "%d completions took %d transactions", n+1, used)

	for i, err := range errs {
		require.NoError(t, err, "completion %d: the second completion of tokens[L] repeats the first and answers as it did", i)
	}
	page, err := s.Chunks(ctx, backends.ChunkFilter{Dataset: "out", First: backends.MaxPageSize})
	require.NoError(t, err)
	require.Len(t, page.Rows, n)
	for _, r := range page.Rows {
		require.Equal(t, backends.StatusReady, r.Status)
	}
	evs, err := s.Events(ctx, backends.EventFilter{Dataset: "out", First: backends.MaxPageSize})
	require.NoError(t, err)
	actors := map[string]string{}
	for _, e := range evs.Events {
		if e.To == backends.StatusReady {
			_, dup := actors[e.DataID]
			require.False(t, dup, "chunk %s completed twice", e.DataID)
			actors[e.DataID] = e.Actor
		}
	}
	require.Len(t, actors, n)
	for i := range n {
		if i != L {
			require.Equal(t, fmt.Sprint("runner-", i), actors[fmt.Sprint(i)], "events carry each caller's actor")
		}
	}
}

// TestLiveBatchCancelled: an operation whose caller gives up while it waits
// in the queue never runs.
func TestLiveBatchCancelled(t *testing.T) {
	ctx := context.Background()
	b, s := newBatchingStore(t)
	var tokens []string
	const L = leaders
	for i := range L + 1 {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
		c, err := s.FindNext(ctx, "j", "x")
		require.NoError(t, err)
		tokens = append(tokens, c.Token)
	}
	b.gate = make(chan struct{})
	before := b.updates.Load()
	var wg sync.WaitGroup
	for i := range L { // the leaders, held at the gate
		wg.Go(func() { require.NoError(t, s.Complete(ctx, tokens[i])) })
	}
	require.Eventually(t, func() bool { return b.updates.Load() == before+L }, time.Minute, time.Millisecond,
		"the leaders wait at the gate, so the next completion queues")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Complete(cctx, tokens[L]) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	err := <-done
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "nothing changed")
	close(b.gate)
	wg.Wait()
	c, err := s.Chunk(ctx, "out", fmt.Sprint(L))
	require.NoError(t, err)
	require.Equal(t, backends.StatusRunning, c.Output.Status, "the cancelled completion never ran")
	require.NoError(t, s.Complete(ctx, tokens[L]))
}

// TestNextBatches: findNext calls queued while transactions are held are
// served several per transaction: every chunk is claimed once, the lowest
// dataids first, each claim with its caller's executor and actor; the
// caller left over gets nil.
func TestNextBatches(t *testing.T) {
	ctx := context.Background()
	b, s := newBatchingStore(t)
	const n = 40
	for i := range n {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}
	b.gate = make(chan struct{})
	before := b.updates.Load()
	claims := make([]*backends.Claim, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n + 1 {
		wg.Go(func() {
			claims[i], errs[i] = s.FindNext(backends.WithActor(ctx, fmt.Sprint("runner-", i)), "j", fmt.Sprint("exec-", i))
		})
		if i == leaders-1 {
			require.Eventually(t, func() bool { return b.updates.Load() == before+leaders }, time.Minute, time.Millisecond,
				"the leaders wait at the gate, so the next calls queue")
		}
		time.Sleep(5 * time.Millisecond) // queue before the gate opens
	}
	close(b.gate)
	wg.Wait()
	used := b.updates.Load() - before
	require.Less(t, used, int64(n), "%d findNext calls took %d transactions", n+1, used)

	got := map[string]int{}
	none := 0
	for i, c := range claims {
		require.NoError(t, errs[i])
		if c == nil {
			none++
			continue
		}
		require.Equal(t, fmt.Sprint("exec-", i), c.Executor)
		_, dup := got[c.DataID]
		require.False(t, dup, "chunk %s claimed twice", c.DataID)
		got[c.DataID] = i
	}
	require.Equal(t, 1, none, "one caller finds nothing left")
	require.Len(t, got, n)
	evs, err := s.Events(ctx, backends.EventFilter{Dataset: "out", First: backends.MaxPageSize})
	require.NoError(t, err)
	for _, e := range evs.Events {
		require.Equal(t, fmt.Sprint("runner-", got[e.DataID]), e.Actor, "events carry each caller's actor")
	}
}
