package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestWatchEventsRacingClose: a watch that starts while the backend closes
// is either refused or waited for by Close; Close never returns while a
// watch goroutine is being started.
func TestWatchEventsRacingClose(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	inside := make(chan struct{})
	closed := make(chan struct{})
	b.hookGoBackground = func() {
		close(inside)
		// Give Close every chance to finish while the watch is being
		// registered; it must wait for the registration instead.
		select {
		case <-closed:
			t.Error("Close returned while a watch goroutine was being started")
		case <-time.After(300 * time.Millisecond):
		}
	}
	go func() {
		<-inside
		_ = b.Close()
		close(closed)
	}()
	ch, err := b.WatchEvents(ctx, backends.EventFilter{})
	require.NoError(t, err, "the watch passed the closed check before Close began")
	<-closed
	select {
	case _, ok := <-ch:
		require.False(t, ok, "no events exist under this prefix")
	default:
		t.Fatal("Close returned before the watch goroutine ended")
	}
	_, err = b.WatchEvents(ctx, backends.EventFilter{})
	require.ErrorIs(t, err, backends.ErrUnavailable)
}
