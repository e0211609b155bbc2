package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// freeAddrs returns n loopback addresses with free ports.
func freeAddrs(t *testing.T, n int) []string {
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// startCluster starts three members on loopback, concurrently (a new
// cluster elects its leader once a quorum is up).
func startCluster(t *testing.T) []*embedded.Server {
	addrs := freeAddrs(t, 6)
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, addrs[3+i]))
	}
	servers := make([]*embedded.Server, 3)
	errs := make([]error, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			servers[i], errs[i] = embedded.Start(ctx, embedded.Config{
				Dir: t.TempDir(), Name: fmt.Sprintf("m%d", i),
				ClientAddr: addrs[i], PeerAddr: addrs[3+i],
				InitialCluster: strings.Join(initial, ","), ClusterToken: "chunklock-cluster-test",
				UnsafeNoFsync: true, StartTimeout: 45 * time.Second,
			})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return servers
}

// TestClusterLeaderLoss: 8 runners race FindNext/Complete over 1,000
// chunks on a three-member cluster; the leader is stopped (hard, no
// handover) part-way. Every chunk must end READY, completed by exactly one
// claim, claimed exactly once (a commit whose answer was lost is resolved,
// never left as an orphan claim), and no two claims on a chunk may overlap.
func TestClusterLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	const chunks, runners = 1000, 8
	servers := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, s := openClusterStore(t, ctx, servers, chunks)
	defer s.Close()

	r := &leaderLossRun{ctx: ctx, s: s, chunks: chunks, live: map[string]string{}, completed: map[string]int{}}
	stopped := make(chan string, 1)
	go func() { stopped <- r.stopLeader(servers) }()
	var wg sync.WaitGroup
	for w := range runners {
		wg.Go(func() { r.work(fmt.Sprintf("runner-%d", w)) })
	}
	wg.Wait()
	leader := <-stopped
	require.Empty(t, r.failures)
	require.NotEmpty(t, leader, "no leader was found to stop")
	require.NoError(t, ctx.Err(), "the run did not finish in time")
	t.Logf("stopped leader %s; %d UNAVAILABLE answers retried, %d completions verified after a lost answer; %d commits with a lost answer resolved inside the store (%d had happened)",
		leader, r.unavailable.Load(), r.verified.Load(), b.resolved.Load(), b.resolvedApplied.Load())

	require.Len(t, r.completed, chunks)
	for id, n := range r.completed {
		require.Equal(t, 1, n, "chunk %s completed %d times", id, n)
	}
	requireAllReadyOnce(t, ctx, s, chunks)
	requireClaimedOnce(t, ctx, s, chunks)
}

// openClusterStore opens a store on the cluster with job "job" reading src
// and writing out, and chunks chunks of src published.
func openClusterStore(t *testing.T, ctx context.Context, servers []*embedded.Server, chunks int) (*Backend, backends.Store) {
	var endpoints []string
	for _, s := range servers {
		endpoints = append(endpoints, s.ClientURL())
	}
	cfg := DefaultConfig()
	cfg.Endpoints = endpoints
	cfg.MaxTxnOps = servers[0].MaxTxnOps()
	cfg.RequestTimeout = 3 * time.Second
	b, err := Open(ctx, cfg)
	require.NoError(t, err)
	s := engine.New(b)
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "job", Inputs: []string{"src"}, Output: "out", LeaseSeconds: 600})
	require.NoError(t, err)
	for i := 1; i <= chunks; i++ {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}
	return b, s
}

// leaderLossRun is what the runners of TestClusterLeaderLoss share.
type leaderLossRun struct {
	ctx         context.Context
	s           backends.Store
	chunks      int64
	mu          sync.Mutex
	live        map[string]string // dataid -> token of the live claim
	completed   map[string]int
	failures    []string
	unavailable atomic.Int64
	verified    atomic.Int64 // completions confirmed through Chunk after an unknown outcome
	done        atomic.Int64
}

func (r *leaderLossRun) fail(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// retry runs op until it answers something other than UNAVAILABLE.
func (r *leaderLossRun) retry(op func() error) (sawUnavailable bool, err error) {
	for {
		err = op()
		if !errors.Is(err, backends.ErrUnavailable) || r.ctx.Err() != nil {
			return sawUnavailable, err
		}
		sawUnavailable = true
		r.unavailable.Add(1)
		time.Sleep(100 * time.Millisecond)
	}
}

// stopLeader stops the cluster's leader once a quarter of the chunks are
// done, and returns its name ("" when none was found).
func (r *leaderLossRun) stopLeader(servers []*embedded.Server) string {
	for r.done.Load() < r.chunks/4 {
		if r.ctx.Err() != nil {
			return ""
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, srv := range servers {
		if srv.IsLeader() {
			srv.Etcd().Server.HardStop() // a crash: no leadership handover
			srv.Close()
			return srv.Name()
		}
	}
	return ""
}

// work claims and completes chunks until all are done.
func (r *leaderLossRun) work(exec string) {
	for r.done.Load() < r.chunks && r.ctx.Err() == nil {
		var c *backends.Claim
		if _, err := r.retry(func() (err error) { c, err = r.s.FindNext(r.ctx, "job", exec); return err }); err != nil {
			r.fail("%s: findNext: %v", exec, err)
			return
		}
		if c == nil {
			time.Sleep(20 * time.Millisecond) // others hold the last claims
			continue
		}
		r.mu.Lock()
		if tok, ok := r.live[c.DataID]; ok {
			r.failures = append(r.failures, fmt.Sprintf("%s got %s while claim %s on it is live", exec, c.DataID, tok))
		}
		r.live[c.DataID] = c.Token
		r.mu.Unlock()
		if err := r.complete(c); err != nil {
			r.fail("%s: %v", exec, err)
			return
		}
		r.mu.Lock()
		r.completed[c.DataID]++
		delete(r.live, c.DataID)
		r.mu.Unlock()
		r.done.Add(1)
	}
}

// complete completes c, retrying while UNAVAILABLE; a STALE_CLAIM after an
// UNAVAILABLE is a success when the chunk shows c's completion landed.
func (r *leaderLossRun) complete(c *backends.Claim) error {
	unknown, err := r.retry(func() error { return r.s.Complete(r.ctx, c.Token) })
	if errors.Is(err, backends.ErrStaleClaim) && unknown {
		// A lost answer: did our completion land before the retry?
		var d backends.ChunkDetail
		if _, err2 := r.retry(func() (err error) { d, err = r.s.Chunk(r.ctx, "out", c.DataID); return err }); err2 != nil {
			return fmt.Errorf("chunk %s: %w", c.DataID, err2)
		}
		if d.Output != nil && d.Output.Status == backends.StatusReady && d.Output.Token == c.Token {
			err = nil
			r.verified.Add(1)
		}
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", c.DataID, err)
	}
	return nil
}

// requireAllReadyOnce: the store agrees, every output chunk is READY after
// one attempt.
func requireAllReadyOnce(t *testing.T, ctx context.Context, s backends.Store, chunks int) {
	ready := 0
	f := backends.ChunkFilter{Dataset: "out", Role: backends.RoleOutput, First: backends.MaxPageSize}
	for {
		p, err := s.Chunks(ctx, f)
		require.NoError(t, err)
		for _, r := range p.Rows {
			require.Equal(t, backends.StatusReady, r.Status, "chunk %s", r.DataID)
			require.Equal(t, 1, r.Attempt, "chunk %s was claimed more than once", r.DataID)
			ready++
		}
		if !p.HasNextPage {
			break
		}
		f.After = p.Cursors[len(p.Cursors)-1]
	}
	require.Equal(t, chunks, ready)
}

// requireClaimedOnce: the event log shows per chunk exactly one claim, and
// never a claim while one is running.
func requireClaimedOnce(t *testing.T, ctx context.Context, s backends.Store, chunks int) {
	state := map[string]backends.Status{}
	claims := map[string]int{}
	ef := backends.EventFilter{Dataset: "out", First: backends.MaxPageSize}
	for {
		p, err := s.Events(ctx, ef)
		require.NoError(t, err)
		for _, e := range p.Events {
			if e.Role != backends.RoleOutput {
				continue
			}
			if e.To == backends.StatusRunning {
				require.NotEqual(t, backends.StatusRunning, state[e.DataID], "overlapping claims on %s", e.DataID)
				claims[e.DataID]++
			}
			state[e.DataID] = e.To
		}
		if !p.HasNextPage {
			break
		}
		ef.After = p.Events[len(p.Events)-1].Seq
	}
	require.Len(t, claims, chunks)
	for id, n := range claims {
		require.Equal(t, 1, n, "chunk %s claimed %d times", id, n)
		require.Equal(t, backends.StatusReady, state[id])
	}
}
