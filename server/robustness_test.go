package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// faultyStore makes chosen Store methods misbehave.
type faultyStore struct {
	backends.Store
	datasets func(ctx context.Context) ([]backends.Dataset, error)
	findNext func(ctx context.Context) (*backends.Claim, error)
}

func (f *faultyStore) Datasets(ctx context.Context) ([]backends.Dataset, error) {
	if f.datasets != nil {
		return f.datasets(ctx)
	}
	return f.Store.Datasets(ctx)
}

func (f *faultyStore) FindNext(ctx context.Context, job, executor string) (*backends.Claim, error) {
	if f.findNext != nil {
		return f.findNext(ctx)
	}
	return f.Store.FindNext(ctx, job, executor)
}

// TestErrorsAreScrubbed: whatever goes wrong inside, a client sees a code
// and a safe message; the details go to the log.
func TestErrorsAreScrubbed(t *testing.T) {
	const leak = `pq: relation "credentials" SELECT ciphertext FROM credentials WHERE password='hunter2'`
	fs := &faultyStore{Store: storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0]}
	s := newStack(t, fs, withConfig(func(c *server.Config) { c.RequestTimeout = 200 * time.Millisecond }))
	s.define()

	for name, c := range map[string]struct {
		fail func(context.Context) ([]backends.Dataset, error)
		code string
	}{
		"driver error": {func(context.Context) ([]backends.Dataset, error) { return nil, errors.New(leak) }, "INTERNAL"},
		"wrapped": {func(context.Context) ([]backends.Dataset, error) {
			return nil, errors.Join(errors.New("query failed"), errors.New(leak))
		}, "INTERNAL"},
		"unavailable": {func(context.Context) ([]backends.Dataset, error) {
			return nil, backends.Unavailable(errors.New(leak), "the store does not answer; retry")
		}, "UNAVAILABLE"},
		"panic": {func(context.Context) ([]backends.Dataset, error) { panic(leak) }, "INTERNAL"},
	} {
		fs.datasets = c.fail
		r := s.send(request{who: reader, query: `{ datasets { id } }`})
		require.Equal(t, c.code, r.code(t), name)
		require.NotContains(t, r.Body, "hunter2", name)
		require.NotContains(t, r.Body, "SELECT", name)
		require.NotContains(t, r.Body, "goroutine", name)
	}
	require.Contains(t, s.logs.String(), "panic in GraphQL execution", "the panic is logged")
	fs.datasets = nil

	// A store that outlives the request timeout: UNAVAILABLE, not a hang.
	fs.findNext = func(ctx context.Context) (*backends.Claim, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	require.Equal(t, "UNAVAILABLE", s.fails(runnerA, `mutation { findNext(job: "ja", executor: "e") { token } }`, nil))
}

// TestServeLifecycle runs Serve on a real listener: the reaper fails an
// expired claim and counts it in /metrics, an open server refuses a
// non-loopback listener, and cancelling the context ends a live
// subscription and returns.
func TestServeLifecycle(t *testing.T) {
	clock := backends.NewFakeClock(t0)
	store := storeKinds[0].Open(t, clock, 1)[0]
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = store, age.New()
	cfg.ReaperInterval = 10 * time.Millisecond
	srv, err := server.New(cfg)
	require.NoError(t, err)

	off, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	require.ErrorContains(t, srv.Serve(t.Context(), off), "refusing to run without authentication")
	off.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	s := &stack{t: t, url: "http://" + ln.Addr().String(), srv: srv, store: store, tokens: map[string]string{}}
	s.define()
	s.publish("a", "1")
	c := s.findNext(nobody, "ja", "e", "")
	require.NotNil(t, c)

	clock.Advance(31 * time.Second)
	require.Eventually(t, func() bool { return s.chunk("b", "1").Status == "FAILED" }, 10*time.Second, 10*time.Millisecond,
		"the reaper fails the expired claim")
	require.Equal(t, "lease expired", s.chunk("b", "1").Output.Reason)
	resp, err := http.Get(s.url + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), "chunklock_lease_expiries_total 1")
	require.Contains(t, string(b), `chunklock_claims_total{job="ja",via="findNext"} 1`)

	wsCtx, wsCancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer wsCancel()
	ws := s.dialWS(wsCtx, nobody)
	ws.expect("connection_ack")
	ws.subscribe("1", `subscription { events { dataset dataid } }`)
	require.Equal(t, "a", awaitLive(t, wsCtx, ws, s).Dataset)

	// The client keeps reading, so the close handshake completes at once.
	closed := make(chan error, 1)
	go func() {
		for {
			if _, err := ws.next(); err != nil {
				closed <- err
				return
			}
		}
	}()
	cancel()
	require.NoError(t, <-served)
	err = <-closed
	require.Error(t, err, "the subscription ends with the server")
	require.NotEqual(t, websocket.StatusCode(-1), websocket.CloseStatus(err), "closed by the server, not torn: %v", err)
	_, err = http.Get(s.url + "/healthz")
	require.Error(t, err, "the listener is closed")
}

// TestServeResumesBackfills: a server starting on a store where an upsert
// of a job with mappings left its backfill pending (a server stopped half
// way) runs it at once, before its first reaper interval.
func TestServeResumesBackfills(t *testing.T) {
	clock := backends.NewFakeClock(t0)
	store := storeKinds[0].Open(t, clock, 1)[0]
	ctx := t.Context()
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	for _, d := range []string{"raw", "roll7"} {
		_, err := store.UpsertDataset(ctx, backends.Dataset{ID: d, Partitions: &daily})
		require.NoError(t, err)
	}
	_, err := store.UpsertJob(ctx, backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}})
	require.NoError(t, err)
	r, err := store.Record(ctx, "backfill/roll")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(r.Value), "done:"), "an upsert that finished its backfill says so: %q", r.Value)
	_, ok, err := store.SwapRecord(ctx, "backfill/roll", []byte("pending"), r.Version)
	require.NoError(t, err)
	require.True(t, ok)

	serveInBackground(t, store, time.Hour)
	require.Eventually(t, func() bool {
		r, err := store.Record(ctx, "backfill/roll")
		return err == nil && strings.HasPrefix(string(r.Value), "done:")
	}, 10*time.Second, 10*time.Millisecond, "the server resumes the pending backfill when it starts")
}

// serveInBackground runs an open server on store, with the reaper interval
// given, on a free port of 127.0.0.1 until the test ends; Serve must then
// return nil.
func serveInBackground(t *testing.T, store backends.Store, reaperInterval time.Duration) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = store, age.New()
	cfg.ReaperInterval = reaperInterval
	srv, err := server.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-served) })
}

// slowResume is a store whose ResumeBackfills takes until its context ends
// (a huge pending backfill, or a store that stopped answering), and which
// counts ExpireLeases calls.
type slowResume struct {
	backends.Store
	reaps atomic.Int64
}

func (s *slowResume) ResumeBackfills(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (s *slowResume) ExpireLeases(ctx context.Context) (int, error) {
	s.reaps.Add(1)
	return s.Store.ExpireLeases(ctx)
}

// TestReaperNotHeldByResume: a server starting on a store with a long
// pending backfill still fails expired claims every reaper interval.
func TestReaperNotHeldByResume(t *testing.T) {
	store := &slowResume{Store: storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0]}
	serveInBackground(t, store, 10*time.Millisecond)
	require.Eventually(t, func() bool { return store.reaps.Load() > 0 }, 2*time.Second, 10*time.Millisecond,
		"the reaper expires leases while backfills are resumed")
}
