package runner

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveMemory serves a fresh in-memory store, open, with datasets in and
// out, job j from in to out and chunk 1 of in published.
func serveMemory(t *testing.T) *client.Client {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = teststores.Memory(nil), age.New()
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL)
	require.NoError(t, err)
	ctx := t.Context()
	for _, d := range []string{"in", "out"} {
		require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/" + d + "/{dataid}"}))
	}
	_, err = c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out"})
	require.NoError(t, err)
	require.NoError(t, c.Publish(ctx, "in", []string{"1"}))
	return c
}

// TestWaiterFollowsEvents: the idle waiter wakes on an event from the
// subscription, and resumes from the last event it saw.
func TestWaiterFollowsEvents(t *testing.T) {
	t.Parallel()
	api := serveMemory(t)
	ctx := t.Context()
	past, err := api.AllEvents(ctx, client.EventFilter{})
	require.NoError(t, err)
	var logs lockedBuffer
	r := &loop{cfg: Config{Client: api, Logf: func(format string, args ...any) { fmt.Fprintf(&logs, format+"\n", args...) }},
		filters: []client.EventFilter{{Job: "j"}, {Dataset: "in"}}}
	r.cfg.defaults()
	w := &waiter{r: r, idleWait: time.Minute, wake: make(chan struct{}, 1), cursor: past[len(past)-1].Cursor}
	defer w.close()

	require.True(t, w.wait(ctx), "subscribing asks for work at once")
	require.NotNil(t, w.sub, logs.String())
	require.NoError(t, api.Publish(ctx, "in", []string{"2"}))
	select {
	case <-w.wake:
	case <-time.After(20 * time.Second):
		t.Fatalf("no event woke the waiter:\n%s", logs.String())
	}
	w.mu.Lock()
	cursor := w.cursor
	w.mu.Unlock()
	evs, err := api.AllEvents(ctx, client.EventFilter{})
	require.NoError(t, err)
	require.Equal(t, evs[len(evs)-1].Cursor, cursor, "the waiter saw the publish of 2")
}
