package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestSlowSubscriberGivesUpItsWatch: a subscriber that stops reading while
// many events are committed does not keep an etcd watch open (whose client
// buffers without bound); once it reads again it gets every event, in
// order and without gaps, and then new ones as they come.
func TestSlowSubscriberGivesUpItsWatch(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	s := engine.New(b)
	defer s.Close()
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	leaks := goleak.IgnoreCurrent()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.WatchEvents(wctx, backends.EventFilter{Dataset: "src"})
	require.NoError(t, err)
	const n = 400 // far more than the channel holds
	for i := 1; i <= n; i++ {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return b.watches.Load() == 0 }, 30*time.Second, 20*time.Millisecond,
		"the stalled subscriber still holds an etcd watch")

	next := func() backends.Event {
		t.Helper()
		select {
		case e, ok := <-ch:
			require.True(t, ok, "watch closed early")
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event arrived")
			return backends.Event{}
		}
	}
	var prev int64
	for i := 1; i <= n; i++ {
		e := next()
		require.Equal(t, fmt.Sprint(i), e.DataID)
		require.Greater(t, e.Seq, prev)
		prev = e.Seq
	}
	// Reading again, it follows new commits.
	for i := n + 1; i <= n+20; i++ {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
		e := next()
		require.Equal(t, fmt.Sprint(i), e.DataID)
		require.Greater(t, e.Seq, prev)
		prev = e.Seq
	}
	cancel()
	for range ch { // closes once the watch goroutine ends
	}
	goleak.VerifyNone(t, leaks)
}
